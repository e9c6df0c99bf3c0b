"""Small aiohttp servers: /healthz and /readyz, /metrics, and any extra routes a provider adds."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

from actors.serve.connections import ConnectionGuard, GuardedSite


def health_app(
    ready: Callable[[], bool], middlewares: Sequence[Any] = (), client_max_size: int = 1024**2
) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="not ready")

    app = web.Application(middlewares=list(middlewares), client_max_size=client_max_size)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


def metrics_app(registry: CollectorRegistry, middlewares: Sequence[Any] = ()) -> web.Application:
    """prometheus-client's own handler: the exposition format the scraper's Accept header asks for
    (OpenMetrics or the text format), gzip when Accept-Encoding allows it, `name[]` filters."""
    app = web.Application(middlewares=list(middlewares))
    app.router.add_get("/metrics", make_aiohttp_handler(registry))
    return app


@dataclass(frozen=True)
class Served:
    """A running server: what to clean up, and the guard whose sweep must run beside it."""

    runner: web.AppRunner
    guard: ConnectionGuard


async def serve(
    app: web.Application, host: str, port: int, guard: ConnectionGuard, ssl_context: ssl.SSLContext | None = None
) -> Served:
    """Serve `app`, its connections bounded by `guard` (whose middleware `app` must run first)."""
    # aiohttp closes an idle keep-alive connection itself too (its default is an hour).
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=guard.bounds.idle_timeout)
    await runner.setup()
    await GuardedSite(runner, host, port, guard, ssl_context).start()
    return Served(runner, guard)
