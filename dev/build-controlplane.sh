#!/usr/bin/env bash
# Builds the real control-plane binaries (kube-apiserver, kube-controller-manager, etcd) and the
# dev tools (helm, tilt) from their Go modules at pinned versions, cached under
# ~/.cache/provider-kserve/ so that later runs take seconds.
#
# Why a wrapper module: k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
# with ./staging paths; replace directives of a dependency are ignored, so we pin each staging
# module to its published v0.X.Y in our own go.mod.
#
# Usage: dev/build-controlplane.sh [controlplane|helm|tilt|all]   (default: controlplane)
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.34.4}"
STAGING_VERSION="0.${K8S_VERSION#1.}"
HELM_VERSION="${HELM_VERSION:-v3.19.0}"
TILT_VERSION="${TILT_VERSION:-v0.35.2}"
CACHE="${PROVIDER_KSERVE_CACHE:-$HOME/.cache/provider-kserve}"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "error: '$1' is required to build $2 but is not on PATH" >&2
    exit 1
  }
}

log() { printf '[build-controlplane] %s\n' "$*" >&2; }

build_controlplane() {
  local work="$CACHE/k8s-$K8S_VERSION"
  local bin="$work/bin"
  if [[ -x "$bin/kube-apiserver" && -x "$bin/kube-controller-manager" && -x "$bin/etcd" ]]; then
    log "control plane $K8S_VERSION cached in $bin"
    echo "$bin"
    return
  fi
  need go "kube-apiserver, kube-controller-manager and etcd"
  mkdir -p "$bin"
  cd "$work"
  [[ -f go.mod ]] || go mod init local.invalid/k8sbin >&2
  # Kubernetes 1.34 declares go 1.24.0; keep its GODEBUG defaults.
  go mod edit -go=1.24.0
  log "downloading k8s.io/kubernetes@v$K8S_VERSION module (first run: several hundred MB)"
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  local staging
  staging=$(grep -oE 'k8s\.io/[a-z0-9-]+ => \./staging' "$gomod" | cut -d' ' -f1)
  for module in $staging; do
    go mod edit -replace="$module=$module@v$STAGING_VERSION"
  done
  log "resolving dependencies"
  go get "k8s.io/kubernetes@v$K8S_VERSION" >&2
  # etcd at the version Kubernetes itself selects, so client and server agree.
  local etcd_version
  etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
  go get "go.etcd.io/etcd/server/v3@$etcd_version" >&2
  cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
  go mod tidy >&2 || true
  local minor="${K8S_VERSION#1.}"
  minor="${minor%%.*}"
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION \
-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
-X k8s.io/component-base/version.gitTreeState=clean"
  log "compiling kube-apiserver (cold: ~10-15 min on 2 cores)"
  go build -p "$(nproc)" -trimpath -ldflags "$ldflags" -o "$bin/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  log "compiling kube-controller-manager"
  go build -p "$(nproc)" -trimpath -ldflags "$ldflags" -o "$bin/kube-controller-manager.tmp" k8s.io/kubernetes/cmd/kube-controller-manager
  log "compiling etcd $etcd_version"
  go build -p "$(nproc)" -trimpath -ldflags "-s -w" -o "$bin/etcd.tmp" go.etcd.io/etcd/server/v3
  # Rename only after all three built, so an interrupted build never looks cached.
  for b in kube-apiserver kube-controller-manager etcd; do mv "$bin/$b.tmp" "$bin/$b"; done
  "$bin/kube-apiserver" --version >&2
  "$bin/etcd" --version >&2
  echo "$bin"
}

build_tool() { # name module version
  local name="$1" module="$2" version="$3"
  local bin="$CACHE/tools/$name-$version"
  if [[ -x "$bin/$name" ]]; then
    log "$name $version cached in $bin"
    echo "$bin"
    return
  fi
  need go "$name"
  mkdir -p "$bin"
  log "building $name $version from $module"
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "$module@$version" >&2
  echo "$bin"
}

case "${1:-controlplane}" in
  controlplane) build_controlplane ;;
  helm) build_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
  tilt) build_tool tilt github.com/tilt-dev/tilt/cmd/tilt "$TILT_VERSION" ;;
  all)
    build_controlplane
    build_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
    build_tool tilt github.com/tilt-dev/tilt/cmd/tilt "$TILT_VERSION"
    ;;
  *) echo "usage: $0 [controlplane|helm|tilt|all]" >&2; exit 2 ;;
esac
