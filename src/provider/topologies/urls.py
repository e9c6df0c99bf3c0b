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


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def origin(scheme: str, host: str, port: int) -> str:
    """`scheme://host[:port]`, the port left out when it is the scheme's default."""
    authority = uri_host(host) if port == default_port(scheme) else f"{uri_host(host)}:{port}"
    return f"{scheme}://{authority}"


def connection_details(
    scheme: str, host: str, port: int, *, kind: str = CONNECTION_TYPE, path: str = ""
) -> ConnectionDetails:
    return ConnectionDetails(
        type=kind, provider=names.PROVIDER_NAME, host=host, port=str(port), uri=origin(scheme, host, port) + path
    )


def url_details(url: str, *, kind: str = CONNECTION_TYPE) -> ConnectionDetails | None:
    """Details from a URL KServe or the AI Gateway published; the path is kept in the uri."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.scheme not in ("http", "https"):
        return None
    port = default_port(parts.scheme) if port is None else port
    return connection_details(parts.scheme, parts.hostname, port, kind=kind, path=parts.path.rstrip("/"))
