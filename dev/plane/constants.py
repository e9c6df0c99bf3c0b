"""Names, paths and fixed settings of the local control plane."""

from __future__ import annotations

from pathlib import Path

from actors.client.known_resources import CRDS
from provider.model import kinds
from provider.model.kinds import NAMESPACES

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "dev" / "build-controlplane.sh"

ETCD = "etcd"
APISERVER = "kube-apiserver"
CONTROLLER_MANAGER = "kube-controller-manager"

# Directory names under shared/crds, in install order. `install_crds(groups=...)` takes these.
CRD_GROUPS: tuple[str, ...] = (
    "openeverest",
    "kserve",
    "envoy-ai-gateway",
    "envoy-gateway",
    "gateway-api",
    "inference-extension",
    "prometheus-operator",
    "cert-manager",
)

# The resources the harness writes, from the one table of each (the runtime's and the provider's).
CRD = CRDS
NAMESPACE = NAMESPACES
SERVICE_ACCOUNT = kinds.SERVICE_ACCOUNT
LLM_ISVC_CONFIG = kinds.LLM_INFERENCE_SERVICE_CONFIG

# The `kubernetes` Service's ClusterIP: the first address of --service-cluster-ip-range.
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"
# What the controller manager runs by default: enough for the tests of a node-less control plane.
DEFAULT_CONTROLLERS: tuple[str, ...] = ("garbage-collector-controller", "namespace-controller")


class ControlPlaneError(RuntimeError):
    """The control plane could not be located, built, started or configured."""
