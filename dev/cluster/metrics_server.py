"""metrics-server on the node cluster: the resource metrics API (`metrics.k8s.io`) that
kube-controller-manager's HPA controller reads to scale what KServe's autoscaler asks for.

The real metrics-server (built from its module by `dev/build-controlplane.sh metrics-server`) runs
as a process on this host, as the API server does, and is registered through the API server's
aggregation layer as a cluster's add-on would be:

- the API server proxies `/apis/metrics.k8s.io` to it as the front-proxy client (`requestheader`
  flags, a CA and client certificate of their own), straight to the endpoint's address
  (`--enable-aggregator-routing`: no Service IP needed on the host);
- the APIService points at a selectorless Service whose EndpointSlice holds the host's node
  address and metrics-server's port; `insecureSkipTLSVerify`, as metrics-server's own manifest
  says, since it serves a certificate it makes itself;
- metrics-server reads the kubelet's `/metrics/resource` with a client certificate of the CA the
  kubelet trusts (node_config.apiserver_kubelet_client_args), and the kubelet's self-signed serving
  certificate unverified (`--kubelet-insecure-tls`, as on kind and minikube);
- it reaches the API server with a token of its own (`system:metrics-server`), bound to the roles
  its manifest grants: read nodes, pods and nodes/metrics, delegate authentication and
  authorization, read the requestheader configuration in kube-system.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Final

from actors.client import ApiError, KubeClient, TransportError
from actors.interface import KubeObject, Resource
from cluster.node_config import KUBELET_CLIENT_CA, NODE_IP, NODE_NAME
from plane import ControlPlane, ControlPlaneError, create_or_replace, free_port
from plane.pki import make_ca, sign_client

USER: Final = "system:metrics-server"
NAME: Final = "metrics-server"
NAMESPACE: Final = "kube-system"
API_SERVICE_NAME: Final = "v1beta1.metrics.k8s.io"
# As often as the HPA controller syncs (15 s); metrics-server's shortest with its default kubelet
# request timeout (10 s, which must stay under nine tenths of it), its own default being 60 s.
RESOLUTION_SECONDS: Final = 15

RBAC: Final = "rbac.authorization.k8s.io"
CLUSTER_ROLE: Final = Resource(RBAC, "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDING: Final = Resource(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False)
ROLE_BINDING: Final = Resource(RBAC, "v1", "rolebindings", "RoleBinding")
SERVICE: Final = Resource("", "v1", "services", "Service")
ENDPOINT_SLICE: Final = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
API_SERVICE: Final = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", False)
NODE_METRICS: Final = Resource("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", False)


def front_proxy_args(workdir: Path) -> tuple[str, ...]:
    """The API server's aggregation-layer flags, with a front-proxy CA and client certificate made
    for them (what kubeadm calls front-proxy-ca and front-proxy-client)."""
    pki = workdir / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    ca = make_ca(pki, "front-proxy-ca", "provider-kserve-front-proxy-ca")
    certificate, key = sign_client(pki, "front-proxy-ca", "front-proxy-client", "/CN=front-proxy-client")
    return (
        f"--requestheader-client-ca-file={ca}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={certificate}",
        f"--proxy-client-key-file={key}",
        "--enable-aggregator-routing=true",
    )


def access_objects() -> list[tuple[Resource, KubeObject]]:
    """The roles metrics-server's own manifest grants it, bound to its user."""
    role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": USER},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
        ],
    }
    return [
        (CLUSTER_ROLE, role),
        _binding(CLUSTER_ROLE_BINDING, USER, "ClusterRole", USER),
        _binding(CLUSTER_ROLE_BINDING, f"{NAME}:system:auth-delegator", "ClusterRole", "system:auth-delegator"),
        _binding(ROLE_BINDING, f"{NAME}-auth-reader", "Role", "extension-apiserver-authentication-reader", NAMESPACE),
    ]


def _binding(
    res: Resource, name: str, role_kind: str, role: str, namespace: str | None = None
) -> tuple[Resource, KubeObject]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return res, {
        "apiVersion": f"{RBAC}/v1",
        "kind": res.kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
        "subjects": [{"kind": "User", "apiGroup": RBAC, "name": USER}],
    }


def registration_objects(port: int) -> list[tuple[Resource, KubeObject]]:
    """The APIService, and the selectorless Service and EndpointSlice it routes to: the host's node
    address, where metrics-server listens."""
    return [
        (
            SERVICE,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
                "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
            },
        ),
        (
            ENDPOINT_SLICE,
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"kubernetes.io/service-name": NAME}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            },
        ),
        (
            API_SERVICE,
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": API_SERVICE_NAME},
                "spec": {
                    "group": "metrics.k8s.io",
                    "version": "v1beta1",
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                    "insecureSkipTLSVerify": True,
                    "service": {"name": NAME, "namespace": NAMESPACE, "port": 443},
                },
            },
        ),
    ]


def args(binary: Path, workdir: Path, pki: Path, kubeconfig: Path, port: int) -> list[str]:
    # A client certificate of the CA the kubelet trusts (made by apiserver_kubelet_client_args).
    certificate, key = sign_client(pki, KUBELET_CLIENT_CA, "metrics-server-kubelet-client", f"/CN={USER}")
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={NODE_IP}",
        f"--secure-port={port}",
        f"--cert-dir={workdir / 'metrics-server-certs'}",
        "--kubelet-preferred-address-types=InternalIP",
        # The kubelet listens on a port of its own here (not 10250), which its Node status says.
        "--kubelet-use-node-status-port",
        "--kubelet-insecure-tls",
        f"--kubelet-client-certificate={certificate}",
        f"--kubelet-client-key={key}",
        f"--metric-resolution={RESOLUTION_SECONDS}s",
    ]


async def start(plane: ControlPlane, binary: Path, kubeconfig: Path, pki: Path, timeout: float = 180.0) -> float:
    """Grant, start and register metrics-server (`pki`: the node's, holding the kubelet's client
    CA); return once the API server serves the node's metrics through it (the seconds that took).
    ControlPlaneError with what it last saw if not."""
    started = time.monotonic()
    port = free_port()
    async with plane.client() as kube:
        for res, obj in access_objects():
            await create_or_replace(kube, res, obj)
        plane.add_process(NAME, args(binary, plane.workdir, pki, kubeconfig, port))
        for res, obj in registration_objects(port):
            await create_or_replace(kube, res, obj)
        await _node_metrics_served(plane, kube, started + timeout)
    return time.monotonic() - started


async def _node_metrics_served(plane: ControlPlane, kube: KubeClient, deadline: float) -> None:
    """The node's usage, read through the aggregation layer: metrics-server has scraped the kubelet
    at least once (it needs two samples of a CPU counter for a rate)."""
    last = "nothing yet"
    while time.monotonic() < deadline:
        process = plane.process(NAME)
        if not process.running():
            raise ControlPlaneError(f"metrics-server exited; its log ends:\n{process.log_tail()}")
        try:
            metrics = await kube.get(NODE_METRICS, None, NODE_NAME)
        except (ApiError, TransportError) as err:  # 503 until the APIService is available
            last = f"{type(err).__name__}: {err}"
        else:
            if metrics is not None and metrics.get("usage", {}).get("cpu"):
                return
            last = f"node metrics {metrics!r}"
        await asyncio.sleep(1.0)
    raise ControlPlaneError(
        f"metrics-server did not serve {NODE_NAME}'s metrics through the API server; last: {last}; "
        f"its log: {plane.workdir / (NAME + '.log')}"
    )
