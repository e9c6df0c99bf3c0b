"""Connection details of an llm Instance, one function per way clients reach the model.

All return `ConnectionDetails` (type `kserve`, or `kserve-ai-gateway` through the AI Gateway,
provider `provider-kserve`, no credentials) or None when the endpoint does not exist yet. Hosts are
IPv6-safe (bracketed in URIs; the Go provider split at the first `:`, §10.4) and the scheme is the
one KServe reports, so a TLS-enabled KServe yields `https://`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from actors.interface import ConnectionDetails, KubeObject
from provider import names
from provider.llm.exposure import SERVING_PORT

CONNECTION_TYPE: Final = "kserve"
GATEWAY_CONNECTION_TYPE: Final = "kserve-ai-gateway"


def _uri_host(host: str) -> str:
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def _details(scheme: str, host: str, port: int, *, kind: str = CONNECTION_TYPE, path: str = "") -> ConnectionDetails:
    default = 443 if scheme == "https" else 80
    authority = _uri_host(host) if port == default else f"{_uri_host(host)}:{port}"
    return ConnectionDetails(
        type=kind, provider=names.PROVIDER_NAME, host=host, port=str(port), uri=f"{scheme}://{authority}{path}"
    )


def url_details(url: str, *, kind: str = CONNECTION_TYPE, default_port: int | None = None) -> ConnectionDetails | None:
    """Details from a URL KServe or the AI Gateway published; the path is kept in the uri."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.scheme not in ("http", "https"):
        return None
    if port is None:
        port = default_port or (443 if parts.scheme == "https" else 80)
    return _details(parts.scheme, parts.hostname, port, kind=kind, path=parts.path.rstrip("/"))


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
    return _details(scheme, host, SERVING_PORT)


def load_balancer_details(service: KubeObject | None) -> ConnectionDetails | None:
    """The first LoadBalancer ingress IP (else hostname), port 8000; None while pending."""
    ingress: list[Any] = (((service or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    entries = [e for e in ingress if isinstance(e, dict)]
    host = next((str(e["ip"]) for e in entries if e.get("ip")), None)
    host = host or next((str(e["hostname"]) for e in entries if e.get("hostname")), None)
    return _details("http", host, SERVING_PORT) if host else None


def node_port_details(service: KubeObject | None, node_addresses: Sequence[str]) -> ConnectionDetails | None:
    """A node address and the Service's nodePort; None until both are known."""
    ports: list[Any] = ((service or {}).get("spec") or {}).get("ports") or []
    node_port = next((p["nodePort"] for p in ports if isinstance(p, dict) and p.get("nodePort")), None)
    if not node_port or not node_addresses:
        return None
    return _details("http", node_addresses[0], int(node_port))


def gateway_details(base_url: str) -> ConnectionDetails | None:
    """The shared AI Gateway's published base URL (scheme, host override and port already applied
    by whoever resolved the Gateway's address)."""
    details = url_details(base_url, kind=GATEWAY_CONNECTION_TYPE)
    if details is None:
        return None
    # Clients add the OpenAI path themselves: publish the bare origin.
    scheme = urlsplit(base_url).scheme
    return _details(scheme, details.host, int(details.port), kind=GATEWAY_CONNECTION_TYPE)
