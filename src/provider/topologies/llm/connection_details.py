"""Connection details of an llm Instance, one function per way clients reach the model.

All return `ConnectionDetails` (type `kserve`, or `kserve-ai-gateway` through the AI Gateway,
provider `provider-kserve`, no credentials) or None when the endpoint does not exist yet. Hosts are
IPv6-safe (bracketed in URIs; the Go provider split at the first `:`, §10.4) and the scheme is the
one KServe reports, so a TLS-enabled KServe yields `https://`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from actors import ConnectionDetails, KubeObject
from provider.model import names
from provider.topologies.llm.exposure import SERVING_PORT
from provider.topologies.urls import connection_details, url_details

GATEWAY_CONNECTION_TYPE: Final = "kserve-ai-gateway"


def _workload_service(llmisvc: KubeObject, instance: str) -> str:
    service = ((llmisvc.get("status") or {}).get("workloads") or {}).get("service") or {}
    return str(service.get("name") or names.workload_service_name(instance))


def in_cluster_details(llmisvc: KubeObject, instance: str, namespace: str) -> ConnectionDetails:
    """KServe's workload Service on port 8000. KServe publishes it in `status.addresses` without
    the port (`http://<svc>.<ns>.svc.cluster.local`); without an address the name is derived."""
    service = _workload_service(llmisvc, instance)
    host = f"{service}.{namespace}.svc.cluster.local"
    scheme = "http"
    for address in (llmisvc.get("status") or {}).get("addresses") or []:
        url = str(address.get("url") or "") if isinstance(address, dict) else ""
        parts = urlsplit(url)
        if parts.hostname and parts.hostname.startswith(f"{service}.") and parts.scheme in ("http", "https"):
            host, scheme = parts.hostname, parts.scheme
            break
    return connection_details(scheme, host, SERVING_PORT)


def load_balancer_details(service: KubeObject | None) -> ConnectionDetails | None:
    """The first LoadBalancer ingress IP (else hostname), port 8000; None while pending."""
    ingress: list[Any] = (((service or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    entries = [e for e in ingress if isinstance(e, dict)]
    host = next((str(e["ip"]) for e in entries if e.get("ip")), None)
    host = host or next((str(e["hostname"]) for e in entries if e.get("hostname")), None)
    return connection_details("http", host, SERVING_PORT) if host else None


def node_port_details(service: KubeObject | None, node_addresses: Sequence[str]) -> ConnectionDetails | None:
    """A node address and the Service's nodePort; None until both are known."""
    ports: list[Any] = ((service or {}).get("spec") or {}).get("ports") or []
    node_port = next((p["nodePort"] for p in ports if isinstance(p, dict) and p.get("nodePort")), None)
    if not node_port or not node_addresses:
        return None
    return connection_details("http", node_addresses[0], int(node_port))


def gateway_details(base_url: str) -> ConnectionDetails | None:
    """The shared AI Gateway's published base URL (scheme, host override and port already applied
    by whoever resolved the Gateway's address)."""
    details = url_details(base_url, kind=GATEWAY_CONNECTION_TYPE)
    if details is None:
        return None
    # Clients add the OpenAI path themselves: publish the bare origin.
    scheme = urlsplit(base_url).scheme
    return connection_details(scheme, details.host, int(details.port), kind=GATEWAY_CONNECTION_TYPE)
