#!/usr/bin/env bash
# Fetches the chart dependencies declared in Chart.yaml into charts/ (`make chart-deps`).
#
# Chart.yaml leaves `repository` empty so that no registry location is baked into the chart; say
# where the charts are published instead:
#   KSERVE_CHART_REPO        where KServe publishes its Helm charts (an oci:// reference to the
#                            `charts` path of the KServe organisation; see KServe's install docs)
#   CERT_MANAGER_CHART_REPO  the Jetstack chart repository URL (cert-manager's install docs)
# Only the dependencies you enable need to be present for `helm install`, but Helm checks all
# declared ones, so this fetches all four. Versions come from Chart.yaml.
set -euo pipefail

CHART_DIR="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
HELM="${HELM:-helm}"
: "${KSERVE_CHART_REPO:?set KSERVE_CHART_REPO to the oci:// location of the KServe charts}"
: "${CERT_MANAGER_CHART_REPO:?set CERT_MANAGER_CHART_REPO to the Jetstack chart repository URL}"

version_of() { # dependency name -> version pinned in Chart.yaml
  awk -v dep="$1" '
    $1 == "-" && $2 == "name:" { name = $3 }
    $1 == "version:" && name == dep { print $2; exit }
  ' "$CHART_DIR/Chart.yaml"
}

mkdir -p "$CHART_DIR/charts"
for dep in kserve-resources kserve-llmisvc-resources kserve-runtime-configs; do
  "$HELM" pull "${KSERVE_CHART_REPO%/}/$dep" --version "$(version_of "$dep")" --destination "$CHART_DIR/charts"
done
"$HELM" pull cert-manager --repo "$CERT_MANAGER_CHART_REPO" --version "$(version_of cert-manager)" \
  --destination "$CHART_DIR/charts"
ls -1 "$CHART_DIR/charts"
