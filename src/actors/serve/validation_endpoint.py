"""The provider's validation endpoint (POST /validate) and published schema (GET /schema).

Same request/response shape as the Go provider-runtime's server, not an AdmissionReview:
`{"object": Instance, "oldObject"?: Instance, "operation"?: "CREATE|UPDATE|DELETE"}` →
`{"allowed": bool, "message"?: str, "warnings"?: [str]}`. The checks are the reconcile-time ones,
through the same function, so the UI and `kubectl get` see the same message.

Whatever a caller sends gets a 4xx with a reason, never a 500: a body over MAX_BODY_BYTES is refused
by aiohttp (413), a body that is not JSON or nests too deep is a 400, and so is an object the
checks cannot make sense of.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import structlog
from aiohttp import web

from actors.client import decode
from actors.interface import KubeObject
from actors.serve.apps import health_app

log = structlog.get_logger(__name__)

Validate = Callable[[KubeObject], Awaitable[str | None]]
# An Instance is at most ~1.5 MB in etcd; a request carries it and maybe the old one.
MAX_BODY_BYTES: Final = 4 * 1024 * 1024


def _refuse(message: str, status: int = 400) -> web.Response:
    return web.json_response({"allowed": False, "message": message}, status=status)


def validation_app(
    validate: Validate,
    schema: Callable[[], dict[str, Any] | None],
    ready: Callable[[], bool],
    middlewares: Sequence[Any] = (),
) -> web.Application:
    async def handle_validate(request: web.Request) -> web.Response:
        try:
            body = decode.loads(await request.read())
        except ValueError:
            return _refuse("request body is not JSON")
        obj = body.get("object") if isinstance(body, dict) else None
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return _refuse("request has no object with metadata")
        if body.get("operation") == "DELETE":
            return web.json_response({"allowed": True})
        try:
            problem = await validate(obj)
        except Exception as err:  # an object no rule foresaw is the caller's to fix, not a 500
            log.warning("validation could not run", error=repr(err)[:300])
            return _refuse(f"the object cannot be validated: {type(err).__name__}")
        if problem is not None:
            return web.json_response({"allowed": False, "message": problem})
        return web.json_response({"allowed": True})

    async def handle_schema(_: web.Request) -> web.Response:
        spec = schema()
        if spec is None:
            return web.json_response({"message": "the Provider resource is not installed"}, status=503)
        return web.json_response(spec)

    app = health_app(ready, middlewares, client_max_size=MAX_BODY_BYTES)  # aiohttp answers 413 past it
    app.router.add_post("/validate", handle_validate)
    app.router.add_get("/schema", handle_schema)
    return app
