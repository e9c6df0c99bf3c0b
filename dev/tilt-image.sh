#!/usr/bin/env bash
# The Tiltfile's custom_build for the `local` target: the provider image built by dev/build-image.sh
# exactly as for `make image`, at the Dockerfile's `dev` stage (src/ installed editable, the process
# restarted on SIGUSR1 for live update), imported into the node-mode cluster's containerd: no Docker,
# no registry, no push. It is tagged `tilt-<digest>` there, so an unchanged image keeps its ref and
# Tilt leaves the running pod alone; the ref Tilt deploys goes to REF_FILE (outputs_image_ref_to).
#
# Usage: dev/tilt-image.sh STATE_DIR REF_FILE REPOSITORY    (REPOSITORY: custom_build's image name)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
archive=$(IMAGE_TAG=dev IMAGE_BUILD_ARGS="--target dev" "$ROOT/dev/build-image.sh" provider | tail -n1)
tag=$(PYTHONPATH="$ROOT/dev" "$ROOT/.venv/bin/python" -m cluster import --state-dir "$1" --content-tag "$archive")
echo "$3:$tag" >"$2"
echo "imported $archive into the node as $3:$tag"
