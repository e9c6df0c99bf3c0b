"""Writing Instance.status through the status subresource: only when it changed, and always in a
form the API server takes.

`compose_status` already bounds and sanitises what goes in; should the CRD still refuse the write
(a schema we did not foresee), a minimal status (phase and a message saying why) is written
instead of leaving an older, possibly contrary, status standing.
"""

from __future__ import annotations

from typing import Any

import structlog
from opentelemetry import trace

from actors.interface import Condition, KubeObject, Phase, StatusReport
from actors.kube import ApiError, KubeClient
from actors.resources import INSTANCES
from actors.status import bounded_message, compose_status

log = structlog.get_logger("actors.status")
tracer = trace.get_tracer("actors.status")

_PHASES = frozenset(p.value for p in Phase)


class StatusWriter:
    def __init__(self, client: KubeClient, *, status_connection_supported: bool = False) -> None:
        self.client = client
        self.status_connection_supported = status_connection_supported

    async def write(
        self,
        instance: KubeObject,
        report: StatusReport,
        *,
        runtime: list[Condition],
        bundle: str | None = None,
        connection_secret: str | None = None,
        connection_problem: str | None = None,
        keep_phase: bool = False,
        complete: bool = False,
    ) -> None:
        current = instance.get("status") or {}
        phase = report.phase
        if keep_phase and current.get("phase") in _PHASES:
            # A transient sync problem must not flip a serving Instance to another phase.
            phase = Phase(current["phase"])
        new = compose_status(
            instance,
            phase=phase,
            message=report.message,
            conditions=[*runtime, *report.conditions],
            complete=complete,
            version=bundle,
            connection=report.connection,
            connection_secret=connection_secret,
            connection_problem=connection_problem,
            status_connection_supported=self.status_connection_supported,
        )
        if new == current:
            return
        with tracer.start_as_current_span("status-update"):
            try:
                await self._replace(instance, new)
            except ApiError as err:
                if err.status != 422:
                    raise
                log.error("status rejected by the API server, writing a minimal one", error=str(err)[:500])
                why = f"{report.message} (the full status was rejected by the API server: {err})"
                minimal = {k: v for k, v in current.items() if k != "conditions"}
                await self._replace(instance, {**minimal, "phase": phase.value, "message": bounded_message(why)})

    async def _replace(self, instance: KubeObject, status: dict[str, Any]) -> None:
        meta = instance["metadata"]
        body = {
            "apiVersion": instance.get("apiVersion", INSTANCES.api_version),
            "kind": INSTANCES.kind,
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "resourceVersion": meta["resourceVersion"],
            },
            "spec": instance.get("spec") or {},
            "status": status,
        }
        try:
            await self.client.replace(INSTANCES, body, subresource="status")
        except ApiError as err:
            if err.status in (404, 409):
                # Our copy is stale; the newer version's watch event runs us again.
                return
            raise
