#!/usr/bin/env bash
# Vendors the four chart dependencies declared in Chart.yaml into charts/ (`make chart-deps`), from
# their source at the pinned versions, without any chart registry: the way upstream's
# `make helm-deps` bundles them, but from the Go modules of the two projects, which the Go module
# proxy serves and go.sum's checksum database verifies.
#
#   kserve-resources, kserve-llmisvc-resources, kserve-runtime-configs
#       charts/<name> of the github.com/kserve/kserve module at the version in Chart.yaml
#   cert-manager
#       deploy/charts/cert-manager of the github.com/cert-manager/cert-manager module, assembled as
#       cert-manager's own release tooling does (make/manifests.mk): Chart.template.yaml with the
#       version filled in, and templates/crds.yaml concatenated from deploy/crds/
#
# Usage: hack/vendor-chart-deps.sh [CHART_DIR]       (needs `go`; the result is gitignored)
set -euo pipefail

CHART_DIR="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOFLAGS=-mod=mod

command -v go >/dev/null 2>&1 || { echo "error: 'go' is required to download the chart sources" >&2; exit 1; }

version_of() { # dependency name -> version pinned in Chart.yaml
  awk -v dep="$1" '
    $1 == "-" && $2 == "name:" { name = $3 }
    $1 == "version:" && name == dep { print $2; exit }
  ' "$CHART_DIR/Chart.yaml"
}

module_dir() { # module@version -> its directory in the module cache (downloaded if needed)
  local work
  work=$(mktemp -d)
  (cd "$work" && go mod download -json "$1") |
    python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(d["Error"]) if d.get("Error") else print(d["Dir"])'
  rm -rf "$work"
}

copy_chart() { # source destination (the module cache is read-only: make the copy writable)
  rm -rf "$2"
  cp -r "$1" "$2"
  chmod -R u+w "$2"
}

out="$CHART_DIR/charts"
mkdir -p "$out"

kserve_version=$(version_of kserve-resources)
for dep in kserve-llmisvc-resources kserve-runtime-configs; do
  [[ "$(version_of "$dep")" == "$kserve_version" ]] || {
    echo "error: Chart.yaml pins $dep at $(version_of "$dep"), kserve-resources at $kserve_version" >&2
    exit 1
  }
done
kserve=$(module_dir "github.com/kserve/kserve@$kserve_version")
for dep in kserve-resources kserve-llmisvc-resources kserve-runtime-configs; do
  copy_chart "$kserve/charts/$dep" "$out/$dep"
done

cm_version=$(version_of cert-manager)
cert_manager=$(module_dir "github.com/cert-manager/cert-manager@$cm_version")
src="$cert_manager/deploy/charts/cert-manager"
dest="$out/cert-manager"
copy_chart "$src" "$dest"
rm -f "$dest/Chart.template.yaml" "$dest/README.template.md" "$dest/signkey_annotation.txt" \
  "$dest/values.linter.exceptions"
sed -e "s/^version: v0.0.0$/version: $cm_version/" -e "s/^appVersion: v0.0.0$/appVersion: $cm_version/" \
  -e 's/"{{IS_PRERELEASE}}"/"false"/' "$src/Chart.template.yaml" >"$dest/Chart.yaml"
sed -e "s:{{RELEASE_VERSION}}:$cm_version:g" "$src/README.template.md" >"$dest/README.md"
first=1
for crd in "$cert_manager"/deploy/crds/*.yaml; do
  ((first)) || printf '\n---\n'
  first=0
  cat "$crd"
done >"$dest/templates/crds.yaml"
grep -q "^version: $cm_version$" "$dest/Chart.yaml" || { echo "error: cert-manager Chart.yaml not versioned" >&2; exit 1; }

for dep in kserve-resources kserve-llmisvc-resources kserve-runtime-configs cert-manager; do
  printf '%s %s\n' "$dep" "$(awk '$1 == "version:" { print $2; exit }' "$out/$dep/Chart.yaml")"
done
