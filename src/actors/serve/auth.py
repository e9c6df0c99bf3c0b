"""Authentication and authorization of HTTP requests the way kube-rbac-proxy does it, in-process.

A request must carry a bearer token; a TokenReview says whose it is, and a SubjectAccessReview
whether that user may `get` (or for POST, `create`) the request's non-resource URL, e.g. `/metrics`.
Prometheus then scrapes with its ServiceAccount token once bound to a ClusterRole granting
`nonResourceURLs: [/metrics], verbs: [get]` (the chart ships it). Reviews are cached per token for a
minute, denials included, and at most a few run at once, so a flood of made-up tokens costs the API
server a bounded number of reviews and never stalls the provider.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import structlog
from aiohttp import web

from actors.client import ApiError, KubeClient, TransportError
from actors.interface import Resource
from actors.queue.clock import Clock, MonotonicClock

log = structlog.get_logger(__name__)

TOKEN_REVIEWS: Final = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False)
SUBJECT_ACCESS_REVIEWS: Final = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
CACHE_SECONDS: Final = 60.0
CACHE_ENTRIES: Final = 1024
CONCURRENT_REVIEWS: Final = 4

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RequestAuthorizer:
    """Decides whether the bearer of a token may use a path; answers are cached."""

    def __init__(self, client: KubeClient, clock: Clock | None = None) -> None:
        self.client = client
        self._clock: Clock = clock or MonotonicClock()
        self._cache: OrderedDict[tuple[str, str, str], tuple[float, bool]] = OrderedDict()
        self._reviews = anyio.Semaphore(CONCURRENT_REVIEWS)

    async def allowed(self, token: str, path: str, verb: str) -> bool:
        key = (hashlib.sha256(token.encode()).hexdigest(), path, verb)
        cached = self._cache.get(key)
        now = self._clock.now()
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self._reviews:
            try:
                verdict = await self._review(token, path, verb)
            except (ApiError, TransportError) as err:
                log.warning("token or access review failed", error=str(err)[:300])
                return False  # not cached: the API server may answer next time
        self._cache[key] = (now + CACHE_SECONDS, verdict)
        self._cache.move_to_end(key)
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return verdict

    async def _review(self, token: str, path: str, verb: str) -> bool:
        review = await self.client.create(
            TOKEN_REVIEWS,
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {}, "spec": {"token": token}},
        )
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return False
        user: dict[str, Any] = status.get("user") or {}
        spec: dict[str, Any] = {
            "user": user.get("username", ""),
            "groups": user.get("groups") or [],
            "uid": user.get("uid", ""),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.get("extra"):
            spec["extra"] = user["extra"]
        access = await self.client.create(
            SUBJECT_ACCESS_REVIEWS,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {}, "spec": spec},
        )
        return bool((access.get("status") or {}).get("allowed"))


def bearer_token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]


def require_access(authorizer: RequestAuthorizer, paths: frozenset[str]) -> Middleware:
    """aiohttp middleware: requests for `paths` need a token allowed to `get` (GET) or `create`
    (any other method) that path; other paths (the probes) pass untouched."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in paths:
            return await handler(request)
        token = bearer_token(request)
        if token is None:
            return web.json_response({"message": "a bearer token is required"}, status=401)
        verb = "get" if request.method in ("GET", "HEAD") else "create"
        if not await authorizer.allowed(token, request.path, verb):
            return web.json_response({"message": f"not allowed to {verb} {request.path}"}, status=403)
        return await handler(request)

    return middleware
