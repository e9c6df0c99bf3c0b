"""What the client raises: the only exception types the rest of the runtime sees from the API server.

`ApiError` is an answer (a non-2xx status, with the decoded metav1.Status when there is one);
`TransportError` is no answer (connection refused or lost, TLS failure, a broken stream), and
`RequestTimeout` the special case of no answer in time. Nothing above the client imports aiohttp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.client import decode


class KubeError(Exception):
    """Base of everything the client raises about a request."""


@dataclass
class ApiError(KubeError):
    """A non-2xx answer from the API server, with the decoded metav1.Status when there is one."""

    status: int
    reason: str
    message: str
    body: dict[str, Any]

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}"

    @property
    def not_found(self) -> bool:
        """404: the object (or its namespace, or the whole resource) is not there."""
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: a precondition or resourceVersion no longer holds, or an apply's field conflict."""
        return self.status == 409

    @property
    def gone(self) -> bool:
        """410: a watch's resourceVersion was compacted away; list again."""
        return self.status == 410

    @property
    def invalid(self) -> bool:
        """422: the object (or a JSON patch's `test`) was refused as invalid."""
        return self.status == 422

    @property
    def causes(self) -> list[dict[str, Any]]:
        details = self.body.get("details") or {}
        causes = details.get("causes") or []
        return [c for c in causes if isinstance(c, dict)]


class WriteWithheld(KubeError):
    """A write was not sent: the process may not write now (its leadership is not fresh)."""


class TransportError(KubeError):
    """The API server could not be reached, or the connection broke before a full answer."""


class RequestTimeout(TransportError):
    """No (complete) answer within the request's timeout."""


def api_error(code: int, raw: bytes) -> ApiError:
    """The ApiError for a non-2xx answer: its metav1.Status, or the plain text some paths answer
    with (e.g. `404 page not found` for a group that is not served)."""
    try:
        decoded: Any = decode.loads(raw) if raw else {}
    except ValueError:
        decoded = raw.decode(errors="replace").strip()
    return api_error_from_status(code, decoded)


def api_error_from_status(code: int, decoded: Any) -> ApiError:
    body = decoded if isinstance(decoded, dict) else {}
    return ApiError(
        status=code, reason=str(body.get("reason", "")), message=str(body.get("message", decoded)), body=body
    )
