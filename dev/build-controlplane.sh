#!/usr/bin/env bash
# Builds the real control-plane binaries (kube-apiserver, kube-controller-manager, etcd) and the
# dev tools (helm, tilt) from their Go modules at pinned versions, cached under
# ~/.cache/provider-kserve/ so that later runs take seconds.
#
# Why a wrapper module: k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
# with ./staging paths; replace directives of a dependency are ignored, so we pin each staging
# module to its published v0.X.Y in our own go.mod.
#
# KServe's controllers and helm are built in the same wrapper module (see MODULE_DIR): KServe's
# go.mod replaces controller-runtime, grpc and a few others, and those directives only count in the
# main module, so ours copies them.
#
# Usage: dev/build-controlplane.sh [controlplane|node|cluster|kubectl|scheduler|kserve|kwok|helm|tilt|jaeger|prometheus|k8s-source|all]   (default: controlplane)
#   controlplane  kube-apiserver, kube-controller-manager, kube-scheduler, etcd
#   node          kubelet, kube-scheduler, kube-proxy, kubectl, metrics-server (the same wrapper module)
#   cluster       controlplane and node in one `go build` (.ci/run: the node's links run beside the
#                 control plane's compiles, and `make e2e` can start when `make test`'s first build ends)
#   kubectl       kubectl alone (the Tiltfile's no-root `process` target)
#   scheduler     kube-scheduler alone (for kwok's fake nodes)
#   kserve        KServe's manager (InferenceService) and llmisvc (LLMInferenceService) controllers,
#                 plus KServe's config/ (ConfigMap, ClusterServingRuntimes) from the same module
#   kwok          kwok (fake nodes and pods) and its Stage definitions
#   helm          helm (the same wrapper module)
#   tilt          tilt with its web UI (a wrapper module too, see build_tilt)
#   jaeger        Jaeger v2 (OTLP in, query API out; a wrapper module too, see build_jaeger)
#   prometheus    prometheus and promtool (the alert and dashboard checks, the e2e scrape)
#   k8s-source    nothing built: the k8s.io/kubernetes module's source directory (pause.c)
# Prints the directory holding the binaries.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.34.4}"
STAGING_VERSION="0.${K8S_VERSION#1.}"
HELM_VERSION="${HELM_VERSION:-v3.19.0}"
TILT_VERSION="${TILT_VERSION:-v0.37.5}"
KSERVE_VERSION="${KSERVE_VERSION:-v0.20.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
# v0.8.0: the newest approved release this Go (1.26.8) builds (v0.9.1 needs Go 1.26.10); on Kubernetes
# 0.33 libraries, it builds in the control plane's module against 0.34 (27 CPU-seconds there).
METRICS_SERVER_VERSION="${METRICS_SERVER_VERSION:-v0.8.0}"
JAEGER_VERSION="${JAEGER_VERSION:-v1.75.0}"
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
CACHE="${PROVIDER_KSERVE_CACHE:-$HOME/.cache/provider-kserve}"
# No DWARF from the compiler: every link strips it anyway (-ldflags -s -w), and generating it is a
# sixth of a cold compile (kubectl from empty caches on 2 cores: 152 s with, 125 s without).
export GOTOOLCHAIN=local GOFLAGS="-mod=mod -gcflags=all=-dwarf=false"
# The tools whose speed no test feels (kwok: 0.02 CPU-minutes in a whole `make test`; tilt 0.4 in a
# whole `make e2e`; Jaeger and Prometheus idle but for a few queries) are compiled without
# optimisation or inlining: about a fifth less compile CPU (kubectl: 256 against 316 CPU-seconds
# from an empty build cache), for slower, larger binaries. What the tests time (the control plane,
# the node, KServe's controllers, helm) stays optimised.
UNOPTIMISED=(-gcflags="all=-N -l -dwarf=false")

need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "error: '$1' is required to build $2 but is not on PATH" >&2
    exit 1
  }
}

# The time of day on each line: a cold run's log says where its minutes went (docs/ci-time.md).
log() { printf '[build-controlplane %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# A compile, and what it cost, in the log (docs/ci-time.md is read off these lines).
# Usage: timed WHAT command...
timed() {
  local TIMEFORMAT="[build-controlplane] $1: go took %0R s, %0U s user + %0S s system CPU"
  shift
  time "$@"
}

# One top-level field of the JSON document on stdin (go mod download -json, go mod edit -json).
json_field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# A go.mod's replace directives, one `old[@version]=new[@version]` per line, as `go mod edit
# -replace` takes them: a wrapper module copies them, since only the main module's count.
replace_directives() { # go.mod
  go mod edit -json "$1" | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    old, new = r["Old"], r["New"]
    lhs = old["Path"] + ("@" + old["Version"] if old.get("Version") else "")
    rhs = new["Path"] + ("@" + new["Version"] if new.get("Version") else "")
    print(f"{lhs}={rhs}")'
}

# One wrapper module for every tool built on Kubernetes 0.34's libraries: k8s.io/kubernetes (the
# control plane's and the node's commands), etcd, KServe's controllers and helm. In one module graph
# the packages they share compile once (k8s.io/api, client-go, apimachinery, apiserver, ...: 42 MB
# of KServe's 71 MB of Go source, 36 of helm's 40): from empty caches on 2 cores, all ten commands
# took 1531 CPU-seconds where the three modules they were built from took about 1930
# (docs/ci-time.md). Go picks for each dependency the highest version any of them requires; the
# staging modules stay at the control plane's patch level (KServe asks for 0.34.3-0.34.5, helm for
# 0.34.0) and KServe's other replace directives (grpc, controller-runtime, ...) hold for all.
MODULE_DIR="$CACHE/k8s-$K8S_VERSION-kserve-$KSERVE_VERSION-helm-$HELM_VERSION-metrics-server-$METRICS_SERVER_VERSION"

# The wrapper module (idempotent; the caller holds the lock).
prepare_module() {
  local work="$1"
  mkdir -p "$work/bin"
  cd "$work"
  [[ -f .prepared ]] && return
  need go "the Kubernetes binaries, KServe's controllers and helm"
  need python3 "the Kubernetes binaries, KServe's controllers and helm"
  [[ -f go.mod ]] || go mod init local.invalid/k8sbin >&2
  # Kubernetes 1.34 declares go 1.24.0; keep its GODEBUG defaults.
  go mod edit -go=1.24.0
  log "downloading k8s.io/kubernetes@v$K8S_VERSION, github.com/kserve/kserve@$KSERVE_VERSION, helm $HELM_VERSION and metrics-server $METRICS_SERVER_VERSION (first run: several hundred MB)"
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | json_field GoMod)
  local staging module
  staging=$(grep -oE 'k8s\.io/[a-z0-9-]+ => \./staging' "$gomod" | cut -d' ' -f1)
  for module in $staging; do
    go mod edit -replace="$module=$module@v$STAGING_VERSION"
  done
  # KServe's replace directives, each exactly as its go.mod states it, but for the staging modules
  # pinned above.
  gomod=$(go mod download -json "github.com/kserve/kserve@$KSERVE_VERSION" | json_field GoMod)
  local replace
  while read -r replace; do
    grep -qxF "${replace%%=*}" <<<"$staging" || go mod edit -replace="$replace"
  done < <(replace_directives "$gomod")
  log "resolving dependencies"
  go get "k8s.io/kubernetes@v$K8S_VERSION" >&2
  # etcd at the version Kubernetes itself selects, so client and server agree.
  local etcd_version
  etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  go get "go.etcd.io/etcd/server/v3@$etcd_version" "github.com/kserve/kserve@$KSERVE_VERSION" \
    "helm.sh/helm/v3@$HELM_VERSION" "sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION" >&2
  # No `go mod tidy`: `go build -mod=mod` resolves the same versions for what it builds, and tidy
  # would download every module any package needs under any build tag or test (KServe's: 1.1 GB
  # and three minutes more, docs/ci-time.md).
  touch .prepared
}

# The package each command is built from.
package_of() {
  case "$1" in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    manager | llmisvc) echo "github.com/kserve/kserve/cmd/$1" ;;
    helm) echo helm.sh/helm/v3/cmd/helm ;;
    metrics-server) echo sigs.k8s.io/metrics-server/cmd/metrics-server ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}

# Builds each named command into $bin unless present; renames only after all built, so an
# interrupted build never looks cached.
build_commands() { # work-dir command...
  local work="$1"
  shift
  local bin="$work/bin" missing=() name
  for name in "$@"; do [[ -x "$bin/$name" ]] || missing+=("$name"); done
  if ((${#missing[@]} == 0)); then
    log "$* cached in $bin"
    return
  fi
  prepare_module "$work"
  local minor="${K8S_VERSION#1.}"
  minor="${minor%%.*}"
  # The versions each program reports, as their releases set them (a -X naming a package a binary
  # does not link is ignored); helm's Kubernetes version is the default of `helm template`.
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION \
-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
-X k8s.io/component-base/version.gitTreeState=clean -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION \
-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
  # One `go build` for all of them: a command's link (single-threaded, up to a minute) runs beside
  # the next one's compiles instead of after them. etcd's binary comes out named `server` (its
  # package is go.etcd.io/etcd/server/v3).
  local packages=() out="$work/bin.tmp"
  for name in "${missing[@]}"; do packages+=("$(package_of "$name")"); done
  log "compiling ${missing[*]} (cold on 2 cores: the control plane's four ~11 min, KServe's two ~3 more)"
  rm -rf "$out"
  mkdir -p "$out"
  timed "${missing[*]}" go build -p "$(nproc)" -trimpath -ldflags "$ldflags" -o "$out/" "${packages[@]}"
  [[ ! -e "$out/server" ]] || mv "$out/server" "$out/etcd"
  for name in "${missing[@]}"; do mv "$out/$name" "$bin/$name"; done
  rmdir "$out"
  case "${missing[0]}" in
    kubectl) "$bin/kubectl" version --client >&2 ;;
    helm) "$bin/helm" version >&2 ;;
    kube-* | etcd) "$bin/${missing[0]}" --version >&2 ;;
  esac
}

# One build at a time per cache directory: helpers, tests and CI may call this concurrently.
with_lock() { # dir command...
  local dir="$1"
  shift
  mkdir -p "$dir"
  (
    flock 9
    "$@"
  ) 9>"$dir/.lock"
}

# The commands named, built unless every one is there. build_commands renames binaries into place
# only once all are built, so one that is there is whole and the check needs no lock: a test asking
# for the control plane is not held up for minutes while `make e2e` or `make demo-cluster` builds
# the node's commands under that lock.
module_commands() { # command...
  local name
  for name in "$@"; do
    if [[ ! -x "$MODULE_DIR/bin/$name" ]]; then
      with_lock "$MODULE_DIR" build_commands "$MODULE_DIR" "$@"
      echo "$MODULE_DIR/bin"
      return
    fi
  done
  log "$* cached in $MODULE_DIR/bin"
  echo "$MODULE_DIR/bin"
}

# The scheduler too: kwok's fake nodes and the real node both need it, and building it in the same
# `go build` as the others costs less than on its own.
build_controlplane() { module_commands kube-apiserver kube-controller-manager kube-scheduler etcd; }

# The node components of the node-mode cluster (and the scheduler for fake kwok nodes), the
# metrics-server that serves its resource metrics to the HPA controller, and the kubectl its users
# and end-to-end tests drive it with.
build_node() { module_commands kubelet kube-scheduler kube-proxy kubectl metrics-server; }

build_cluster() {
  module_commands kube-apiserver kube-controller-manager kube-scheduler etcd kubelet kube-proxy kubectl metrics-server
}

# KServe's config/ from the module its controllers were built from, beside their directory (the
# harness installs its ConfigMap defaults and ClusterServingRuntimes); renamed into place whole.
copy_kserve_config() { # work-dir
  local work="$1"
  [[ -d "$work/config" ]] && return
  prepare_module "$work"
  local source
  source=$(go list -m -f '{{.Dir}}' github.com/kserve/kserve)
  rm -rf "$work/config.tmp"
  cp -r "$source/config" "$work/config.tmp"
  chmod -R u+w "$work/config.tmp"
  mv "$work/config.tmp" "$work/config"
}

# manager and llmisvc, and KServe's config/ beside them.
build_kserve() {
  local bin
  bin=$(module_commands manager llmisvc)
  [[ -d "$MODULE_DIR/config" ]] || with_lock "$MODULE_DIR" copy_kserve_config "$MODULE_DIR"
  echo "$bin"
}

build_helm() { module_commands helm; }

build_scheduler() { module_commands kube-scheduler; }

build_kubectl() { module_commands kubectl; }

# Tilt's go.mod has replace directives (go-restful v3.9.0, pkg/browser from tilt-dev's fork) that
# `go install module@version` refuses, and a dependency's replaces are ignored: the wrapper module
# copies them, as the Kubernetes one pins the staging modules. Tilt itself is built from a copy of
# its module (`src/`, replacing it): its web UI is not in the module (release binaries embed a build
# of its web/ sources into pkg/assets/build), so the copy gets one, and the module cache is
# read-only (and `go build -overlay` may not replace files in it).
prepare_tilt_module() { # work-dir
  local work="$1"
  mkdir -p "$work"
  cd "$work"
  [[ -f .prepared ]] && return
  need go "tilt"
  rm -rf go.mod go.sum src
  go mod init local.invalid/tiltbin >&2
  local info gomod dir
  info=$(go mod download -json "github.com/tilt-dev/tilt@$TILT_VERSION")
  gomod=$(json_field GoMod <<<"$info")
  dir=$(json_field Dir <<<"$info")
  go mod edit -go="$(go mod edit -json "$gomod" | json_field Go)"
  local replace
  while read -r replace; do
    go mod edit -replace="$replace"
  done < <(replace_directives "$gomod")
  cp -r "$dir" src
  chmod -R u+w src
  go mod edit -require="github.com/tilt-dev/tilt@$TILT_VERSION" -replace=github.com/tilt-dev/tilt=./src
  # No `go mod tidy` (see prepare_module): the compile resolves what it builds.
  touch .prepared
}

# Tilt's web UI, built from the module's web/ sources with the yarn release they vendor, from the
# npm registry npm is configured with, into the copy's pkg/assets/build (where it is embedded).
build_tilt_web() { # work-dir
  local work="$1"
  [[ -f "$work/src/pkg/assets/build/index.html" ]] && return
  if [[ $EUID -eq 0 ]] && ! command -v npm >/dev/null 2>&1; then
    log "installing the Debian packages nodejs and npm"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >&2
  fi
  need node "tilt's web UI (Debian packages nodejs, npm)"
  need npm "tilt's web UI (it uses the npm registry npm is configured with)"
  if [[ ! -f "$work/src/web/build/index.html" ]]; then
    local yarn
    yarn=$(ls "$work"/src/web/.yarn/releases/yarn-*.cjs)
    log "building tilt's web UI (yarn install + react-scripts build; first run: several minutes)"
    (
      cd "$work/src/web"
      export YARN_NPM_REGISTRY_SERVER="$(npm config get registry)" YARN_ENABLE_TELEMETRY=0 \
        YARN_ENABLE_PROGRESS_BARS=0 YARN_ENABLE_GLOBAL_CACHE=0
      node "$yarn" install --immutable >&2
      # CI=false: react-scripts would fail the build on lint warnings under CI=true.
      CI=false GENERATE_SOURCEMAP=false node "$yarn" build >&2
    )
    # The build is all that is kept (node_modules and yarn's cache: several hundred MB).
    rm -rf "$work/src/web/node_modules" "$work/src/web/.yarn/cache"
  fi
  cp -r "$work/src/web/build/." "$work/src/pkg/assets/build/"
}

build_tilt_binary() { # work-dir bin
  local work="$1" bin="$2"
  if [[ -x "$bin/tilt" ]]; then
    log "tilt $TILT_VERSION cached in $bin"
    return
  fi
  prepare_tilt_module "$work"
  build_tilt_web "$work"
  log "compiling tilt $TILT_VERSION (cold: ~5 min on 2 cores)"
  mkdir -p "$bin"
  # A release build (version set): Tilt serves the embedded UI then, not a dev server's.
  (cd "$work" && timed tilt go build -p "$(nproc)" -trimpath "${UNOPTIMISED[@]}" -tags osusergo -o "$bin/tilt.tmp" \
    -ldflags "-s -w -X main.version=${TILT_VERSION#v} -X main.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    github.com/tilt-dev/tilt/cmd/tilt)
  mv "$bin/tilt.tmp" "$bin/tilt"
  "$bin/tilt" version >&2
}

build_tilt() {
  local bin="$CACHE/tools/tilt-$TILT_VERSION"
  with_lock "$bin" build_tilt_binary "$CACHE/tilt-$TILT_VERSION" "$bin"
  echo "$bin"
}

# Jaeger's go.mod replaces Shopify/sarama, which `go install jaeger@version` refuses: a wrapper
# module copies the directive. Its web UI is not in the module (cmd/query/app/ui/actual holds only
# a .gitignore; release builds gzip a build of the jaeger-ui repository, a git submodule, into it),
# so this binary serves the query API and a placeholder page at /.
prepare_jaeger_module() { # work-dir
  local work="$1"
  mkdir -p "$work/bin"
  cd "$work"
  [[ -f .prepared ]] && return
  need go "jaeger"
  need python3 "jaeger"
  rm -f go.mod go.sum
  go mod init local.invalid/jaegerbin >&2
  local gomod
  gomod=$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" | json_field GoMod)
  go mod edit -go="$(go mod edit -json "$gomod" | json_field Go)"
  local replace
  while read -r replace; do
    go mod edit -replace="$replace"
  done < <(replace_directives "$gomod")
  log "resolving jaeger $JAEGER_VERSION's dependencies"
  go get "github.com/jaegertracing/jaeger@$JAEGER_VERSION" >&2
  # No `go mod tidy` (see prepare_module).
  touch .prepared
}

build_jaeger_binary() { # work-dir
  local work="$1" bin="$1/bin"
  if [[ -x "$bin/jaeger" ]]; then
    log "jaeger $JAEGER_VERSION cached in $bin"
    return
  fi
  prepare_jaeger_module "$work"
  log "compiling jaeger $JAEGER_VERSION (cold: ~5 min on 2 cores)"
  local pkg=github.com/jaegertracing/jaeger/internal/version
  timed jaeger go build -p "$(nproc)" -trimpath "${UNOPTIMISED[@]}" -o "$bin/jaeger.tmp" \
    -ldflags "-s -w -X $pkg.latestVersion=$JAEGER_VERSION -X $pkg.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    github.com/jaegertracing/jaeger/cmd/jaeger
  mv "$bin/jaeger.tmp" "$bin/jaeger"
  "$bin/jaeger" version >&2 || true
}

build_jaeger() {
  local work="$CACHE/jaeger-$JAEGER_VERSION"
  with_lock "$work" build_jaeger_binary "$work"
  echo "$work/bin"
}

# kwok and Prometheus from one wrapper module (neither has replace directives): the Kubernetes
# libraries kwok's fake nodes need (0.36) and promtool's kubernetes service discovery needs (0.37),
# and most else they use, compile once. From empty caches on 2 cores: 424 CPU-seconds for kwok,
# prometheus and promtool, against 638 built from their own modules (docs/ci-time.md); Go picks
# for kwok the 0.37 client libraries Prometheus asks for. Both are compiled without optimisation
# (above) and with `remove_all_sd`: Prometheus without cloud service discovery (AWS, Azure, GCE, ...
# SDKs, most of its build; the tests and the dev loop scrape static targets), a tag kwok ignores,
# set for both so that what they share is compiled alike. Prometheus without the `builtinassets`
# tag: the web UI's sources are in the module (web/ui, a pnpm workspace) but not their build, so
# the HTTP API answers and the UI's pages do not.
KWOK_PROMETHEUS_DIR="$CACHE/kwok-$KWOK_VERSION-prometheus-$PROMETHEUS_VERSION"

prepare_kwok_prometheus_module() { # work-dir
  local work="$1"
  mkdir -p "$work"
  cd "$work"
  [[ -f .prepared ]] && return
  need go "kwok and prometheus"
  rm -f go.mod go.sum
  go mod init local.invalid/kwokprometheus >&2
  log "resolving kwok $KWOK_VERSION's and prometheus $PROMETHEUS_VERSION's dependencies"
  go get "sigs.k8s.io/kwok@$KWOK_VERSION" "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" >&2
  # No `go mod tidy` (see prepare_module).
  touch .prepared
}

# Usage: build_from_kwok_prometheus WORK OUT-DIR LDFLAGS PACKAGE...: the packages' commands into
# OUT-DIR (renamed into place after all are built).
build_from_kwok_prometheus() {
  local work="$1" out="$2" ldflags="$3"
  shift 3
  prepare_kwok_prometheus_module "$work"
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  local names=("${@##*/}")
  log "compiling ${names[*]} (kwok $KWOK_VERSION, prometheus $PROMETHEUS_VERSION; cold: ~4 min on 2 cores)"
  (cd "$work" && timed "${names[*]}" go build -p "$(nproc)" -trimpath "${UNOPTIMISED[@]}" -tags remove_all_sd \
    -ldflags "$ldflags" -o "$out.tmp/" "$@")
}

# kwok, and its Stage definitions (kustomize/stage/) beside the binary: the harness passes them with
# --config.
install_kwok() { # work-dir
  local work="$1" bin="$1/kwok"
  if [[ -x "$bin/kwok" && -d "$bin/stage" ]]; then
    log "kwok $KWOK_VERSION cached in $bin"
    return
  fi
  build_from_kwok_prometheus "$work" "$bin" "-s -w" sigs.k8s.io/kwok/cmd/kwok
  local source
  source=$(cd "$work" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  cp -r "$source/kustomize/stage" "$bin.tmp/stage"
  chmod -R u+w "$bin.tmp/stage"
  rm -rf "$bin"
  mv "$bin.tmp" "$bin"
}

build_kwok() {
  with_lock "$KWOK_PROMETHEUS_DIR" install_kwok "$KWOK_PROMETHEUS_DIR"
  echo "$KWOK_PROMETHEUS_DIR/kwok"
}

install_prometheus() { # work-dir
  local work="$1" bin="$1/prometheus"
  if [[ -x "$bin/prometheus" && -x "$bin/promtool" ]]; then
    log "prometheus, promtool $PROMETHEUS_VERSION cached in $bin"
    return
  fi
  local common=github.com/prometheus/common/version
  build_from_kwok_prometheus "$work" "$bin" \
    "-s -w -X $common.Version=${PROMETHEUS_VERSION#v} -X $common.Branch=HEAD" \
    github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
  rm -rf "$bin"
  mv "$bin.tmp" "$bin"
}

build_prometheus() {
  with_lock "$KWOK_PROMETHEUS_DIR" install_prometheus "$KWOK_PROMETHEUS_DIR"
  echo "$KWOK_PROMETHEUS_DIR/prometheus"
}

case "${1:-controlplane}" in
  controlplane) build_controlplane ;;
  node) build_node ;;
  cluster) build_cluster ;;
  kubectl) build_kubectl ;;
  helm) build_helm ;;
  tilt) build_tilt ;;
  scheduler) build_scheduler ;;
  kserve) build_kserve ;;
  kwok) build_kwok ;;
  jaeger) build_jaeger ;;
  prometheus) build_prometheus ;;
  k8s-source) go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | json_field Dir ;;
  all)
    build_controlplane
    build_node
    build_kserve
    build_kwok
    build_helm
    build_tilt
    build_jaeger
    build_prometheus
    ;;
  *) echo "usage: $0 [controlplane|node|cluster|kubectl|scheduler|kserve|kwok|helm|tilt|jaeger|prometheus|k8s-source|all]" >&2; exit 2 ;;
esac
