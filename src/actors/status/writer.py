"""Writing Instance.status through the status subresource: only when it changed, and always in a
form the API server takes.

`compose_status` already bounds and sanitises what goes in; should the CRD still refuse the write
(a schema we did not foresee), a minimal status (phase and a message saying why) is written
instead of leaving an older, possibly contrary, status standing.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus
from opentelemetry import trace

from actors.client import ApiError, KubeClient
from actors.client.known_resources import CRDS, INSTANCES
from actors.client.resource import object_key
from actors.interface import Condition, KubeObject, Phase, StatusReport
from actors.observe.metrics import InstancePhases
from actors.observe.tracing import span
from actors.status.compose import COMPONENT_FIELDS, bounded_message, compose_status

log = structlog.get_logger(__name__)
tracer = trace.get_tracer(__name__)

_PHASES = frozenset(p.value for p in Phase)


class StaleStatus(Exception):
    """The Instance changed since the pass read it; its status was not written: run the pass again
    on the newer copy."""


class StatusWriter:
    def __init__(self, client: KubeClient, *, field_manager: str, phases: InstancePhases | None = None) -> None:
        self.client = client
        self.field_manager = field_manager
        # Each Instance's phase as written (or found unchanged), for the Instances-by-phase gauge.
        self.phases = phases if phases is not None else InstancePhases()
        # Newer cores add non-secret connection details at status.connection; we write them only
        # when the installed CRD declares the field (unknown fields would be pruned anyway).
        self.status_connection_supported = False
        # The fields of a status.components entry the installed CRD declares (older cores lack
        # `name`; what is not declared is not written).
        self.component_fields: frozenset[str] = frozenset()

    async def start(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Learn what the installed Instance CRD's status supports, then report started."""
        crd = await self.client.get(CRDS, None, f"{INSTANCES.plural}.{INSTANCES.group}")
        status = _status_schema(crd) if crd is not None else {}
        self.status_connection_supported = "connection" in (status.get("properties") or {})
        self.component_fields = _component_fields(status)
        task_status.started()

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
        meta = instance["metadata"]
        self.phases.record(object_key(instance), phase.value)
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
            components=report.components,
            component_fields=self.component_fields,
        )
        if new == current:
            return
        with span(tracer, "status-update", {"k8s.kind": INSTANCES.kind, "k8s.name": meta["name"]}):
            try:
                await self._replace(instance, new)
            except ApiError as err:
                if not err.invalid:
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
            await self.client.replace(INSTANCES, body, subresource="status", field_manager=self.field_manager)
        except ApiError as err:
            if err.not_found:
                return  # deleted meanwhile: its DELETED event runs us again
            if err.conflict:
                # Our copy is stale. The newer version's watch event need not run us again: it may
                # be a status write (ours, the pass before, not delivered yet when this pass read
                # the Instance), which wakes no one. So this pass must run again itself.
                raise StaleStatus(f"Instance {meta['namespace']}/{meta['name']} changed since it was read") from err
            raise


def _status_schema(crd: KubeObject) -> dict[str, Any]:
    for version in crd.get("spec", {}).get("versions", []):
        if version.get("name") == INSTANCES.version:
            status: dict[str, Any] = (
                version.get("schema", {}).get("openAPIV3Schema", {}).get("properties", {}).get("status", {})
            )
            return status
    return {}


def _component_fields(status: dict[str, Any]) -> frozenset[str]:
    components = (status.get("properties") or {}).get("components") or {}
    declared = ((components.get("items") or {}).get("properties") or {}).keys()
    return COMPONENT_FIELDS & frozenset(declared)
