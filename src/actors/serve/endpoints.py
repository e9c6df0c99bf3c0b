"""The provider's three HTTP servers, each on its own port: probes, metrics, validation.

/healthz and /readyz stay open (the kubelet probes them). Every server bounds its connections
(`connections`: idle, slow and surplus ones are closed), so no client can starve the probes.
/metrics and /validate can each require a bearer token that a TokenReview authenticates and a
SubjectAccessReview authorizes for that path (`actors.serve.auth`); a protected server speaks TLS
only, so tokens never cross the network in clear. /metrics can instead be bound to localhost
(`metrics_bind_host`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from actors.client import KubeClient
from actors.serve.apps import Served, health_app, metrics_app, serve
from actors.serve.auth import RequestAuthorizer, require_access
from actors.serve.connections import ConnectionBounds, ConnectionGuard
from actors.serve.tls import server_context
from actors.serve.validation_endpoint import Validate, validation_app


@dataclass(frozen=True)
class Endpoints:
    bind_host: str = "0.0.0.0"
    health_port: int | None = 8081
    metrics_port: int | None = 8080
    validation_port: int | None = 8082
    # Where /metrics listens when not on bind_host (e.g. 127.0.0.1: only the pod itself can scrape).
    metrics_bind_host: str | None = None
    metrics_auth: bool = False
    validation_auth: bool = False
    # tls.crt and tls.key for the protected servers; a self-signed pair is made when unset.
    tls_cert_dir: str | None = None
    # What each server's connections may cost (idle, slow and surplus connections are closed).
    connections: ConnectionBounds = field(default_factory=ConnectionBounds)


async def start(
    endpoints: Endpoints,
    client: KubeClient,
    *,
    ready: Callable[[], bool],
    registry: CollectorRegistry,
    validate: Validate,
    schema: Callable[[], dict[str, Any] | None],
) -> list[Served]:
    """Start the configured servers; the caller runs their guards' sweeps and cleans them up."""
    authorizer = RequestAuthorizer(client) if endpoints.metrics_auth or endpoints.validation_auth else None
    tls = server_context(endpoints.tls_cert_dir) if authorizer is not None else None
    served: list[Served] = []
    if endpoints.health_port is not None:
        guard = ConnectionGuard(endpoints.connections)
        app = health_app(ready, [guard.middleware()])
        served.append(await serve(app, endpoints.bind_host, endpoints.health_port, guard))
    if endpoints.metrics_port is not None:
        guard = ConnectionGuard(endpoints.connections)
        auth = [require_access(authorizer, frozenset({"/metrics"}))] if authorizer and endpoints.metrics_auth else []
        host = endpoints.metrics_bind_host or endpoints.bind_host
        app = metrics_app(registry, [guard.middleware(), *auth])
        served.append(await serve(app, host, endpoints.metrics_port, guard, tls if auth else None))
    if endpoints.validation_port is not None:
        guard = ConnectionGuard(endpoints.connections)
        protected = frozenset({"/validate", "/schema"})
        auth = [require_access(authorizer, protected)] if authorizer and endpoints.validation_auth else []
        app = validation_app(validate, schema, ready, [guard.middleware(), *auth])
        served.append(await serve(app, endpoints.bind_host, endpoints.validation_port, guard, tls if auth else None))
    return served
