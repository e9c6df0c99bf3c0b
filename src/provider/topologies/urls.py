"""Connection details from a URL or host and port: the `<instance>-conn` Secret's keys.

Hosts are IPv6-safe (bracketed in URIs; the Go provider split at the first `:`) and the default
port of the scheme is left out of the URI.
"""

from __future__ import annotations

import ipaddress
from typing import Final
from urllib.parse import urlsplit

from actors import ConnectionDetails
from provider.model import names

CONNECTION_TYPE: Final = "kserve"


def uri_host(host: str) -> str:
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def connection_details(
    scheme: str, host: str, port: int, *, kind: str = CONNECTION_TYPE, path: str = ""
) -> ConnectionDetails:
    default = 443 if scheme == "https" else 80
    authority = uri_host(host) if port == default else f"{uri_host(host)}:{port}"
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
    return connection_details(parts.scheme, parts.hostname, port, kind=kind, path=parts.path.rstrip("/"))
