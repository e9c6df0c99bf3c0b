"""The client boundary: `KubeClient` and the only errors it raises (no aiohttp above this package)."""

from actors.client.errors import ApiError, KubeError, RequestTimeout, TransportError, WriteWithheld
from actors.client.kube_client import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, KubeClient
from actors.client.transport import RequestObserver

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "ApiError",
    "KubeClient",
    "KubeError",
    "RequestObserver",
    "RequestTimeout",
    "TransportError",
    "WriteWithheld",
]
