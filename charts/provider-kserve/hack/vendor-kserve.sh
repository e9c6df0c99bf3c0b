#!/usr/bin/env bash
# Vendors KServe's CRDs (into crds/) and its LLMInferenceServiceConfig presets (into files/kserve/)
# at a pinned release, verified against the checksums in hack/kserve-<version>.sha256. The vendored
# files are gitignored: they are fetched or copied at build time, never committed.
#
# Usage: hack/vendor-kserve.sh [CHART_DIR]            (`make vendor-kserve-crds`)
#   KSERVE_VERSION  release to vendor (default v0.20.0; needs hack/kserve-$KSERVE_VERSION.sha256)
#   KSERVE_SRC      a local directory to copy from instead of downloading. Either a kserve source
#                   checkout at that tag (config/crd/full/...) or a flat directory of the CRD files
#                   with presets/all-llmisvcconfigs.chart-resources.yaml (the layout of
#                   ../shared/crds/kserve used for tests and offline dev).
#   Without KSERVE_SRC the files are downloaded from the kserve/kserve repository at the tag.
set -euo pipefail

CHART_DIR="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
KSERVE_VERSION="${KSERVE_VERSION:-v0.20.0}"
SUMS="$(cd "$(dirname "$0")" && pwd)/kserve-$KSERVE_VERSION.sha256"
[[ -f "$SUMS" ]] || { echo "error: no pinned checksums $SUMS for KServe $KSERVE_VERSION" >&2; exit 1; }

# destination (relative to the chart) -> path in the kserve repository at the tag
declare -A UPSTREAM=(
  [crds/serving.kserve.io_inferenceservices.yaml]=config/crd/full/serving.kserve.io_inferenceservices.yaml
  [crds/serving.kserve.io_servingruntimes.yaml]=config/crd/full/serving.kserve.io_servingruntimes.yaml
  [crds/serving.kserve.io_clusterservingruntimes.yaml]=config/crd/full/serving.kserve.io_clusterservingruntimes.yaml
  [crds/serving.kserve.io_inferencegraphs.yaml]=config/crd/full/serving.kserve.io_inferencegraphs.yaml
  [crds/serving.kserve.io_trainedmodels.yaml]=config/crd/full/serving.kserve.io_trainedmodels.yaml
  [crds/serving.kserve.io_clusterstoragecontainers.yaml]=config/crd/full/clusterstoragecontainer/serving.kserve.io_clusterstoragecontainers.yaml
  [crds/serving.kserve.io_llminferenceservices.yaml]=config/crd/full/llmisvc/serving.kserve.io_llminferenceservices.yaml
  [crds/serving.kserve.io_llminferenceserviceconfigs.yaml]=config/crd/full/llmisvc/serving.kserve.io_llminferenceserviceconfigs.yaml
  [files/kserve/llmisvcconfigs.yaml]=charts/kserve-runtime-configs/files/llmisvcconfigs/resources.yaml
)

source_path() { # dest -> local source file
  local dest="$1" up="${UPSTREAM[$1]}"
  if [[ -d "$KSERVE_SRC/config/crd/full" ]]; then
    echo "$KSERVE_SRC/$up"
  elif [[ "$dest" == files/kserve/llmisvcconfigs.yaml ]]; then
    echo "$KSERVE_SRC/presets/all-llmisvcconfigs.chart-resources.yaml"
  else
    echo "$KSERVE_SRC/$(basename "$dest")"
  fi
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for dest in "${!UPSTREAM[@]}"; do
  mkdir -p "$tmp/$(dirname "$dest")"
  if [[ -n "${KSERVE_SRC:-}" ]]; then
    cp "$(source_path "$dest")" "$tmp/$dest"
  else
    curl -fsSL --retry 3 -o "$tmp/$dest" \
      "https://raw.githubusercontent.com/kserve/kserve/$KSERVE_VERSION/${UPSTREAM[$dest]}"
  fi
done
(cd "$tmp" && sha256sum --quiet -c "$SUMS") || {
  echo "error: vendored files do not match KServe $KSERVE_VERSION ($SUMS)" >&2
  exit 1
}
for dest in "${!UPSTREAM[@]}"; do
  mkdir -p "$CHART_DIR/$(dirname "$dest")"
  install -m 0644 "$tmp/$dest" "$CHART_DIR/$dest"
done
echo "vendored KServe $KSERVE_VERSION CRDs and presets into $CHART_DIR" >&2
