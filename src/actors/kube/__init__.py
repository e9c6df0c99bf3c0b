"""The client boundary: `KubeClient` and the only errors it raises (no aiohttp above this package)."""

from actors.kube.client import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, KubeClient, RequestObserver
from actors.kube.errors import ApiError, KubeError, RequestTimeout, TransportError

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
]
