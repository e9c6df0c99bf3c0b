"""The provider's validation endpoint (POST /validate) and published schema (GET /schema).

Same request/response shape as the Go provider-runtime's server, not an AdmissionReview:
`{"object": Instance, "oldObject"?: Instance, "operation"?: "CREATE|UPDATE|DELETE"}` →
`{"allowed": bool, "message"?: str, "warnings"?: [str]}`. The checks are the reconcile-time ones,
through the same function, so the UI and `kubectl get` see the same message.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from actors.http import health_app
from actors.interface import KubeObject

Validate = Callable[[KubeObject], Awaitable[str | None]]


def validation_app(
    validate: Validate, schema: Callable[[], dict[str, Any] | None], ready: Callable[[], bool]
) -> web.Application:
    async def handle_validate(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.json_response({"allowed": False, "message": "request body is not JSON"}, status=400)
        obj = body.get("object") if isinstance(body, dict) else None
        if not isinstance(obj, dict):
            return web.json_response({"allowed": False, "message": "request has no object"}, status=400)
        if body.get("operation") == "DELETE":
            return web.json_response({"allowed": True})
        problem = await validate(obj)
        if problem is not None:
            return web.json_response({"allowed": False, "message": problem})
        return web.json_response({"allowed": True})

    async def handle_schema(_: web.Request) -> web.Response:
        spec = schema()
        if spec is None:
            return web.json_response({"message": "the Provider resource is not installed"}, status=503)
        return web.json_response(spec)

    app = health_app(ready)
    app.router.add_post("/validate", handle_validate)
    app.router.add_get("/schema", handle_schema)
    return app
