"""The per-Instance state machine: finalizer, Validate, Sync, Status; on deletion Cleanup.

Mirrors the OpenEverest Go provider-runtime step for step (finalizer and provider label first,
version-bundle check, Validate on the stored Instance, Sync and Status on a copy with component
versions resolved from the bundle, the `<instance>-conn` Secret, status written through the status
subresource) and goes further where users need it: validation errors carry their message onto
status without a retry storm, apply conflicts are named, status is written only when it changed,
and deletion waits until every object we own is gone.
"""

from __future__ import annotations

import base64
import copy
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
from opentelemetry import trace

from actors.actor import Outcome
from actors.apply import Applier, ApplyConflict, content_hash
from actors.interface import (
    Condition,
    ConnectionDetails,
    KubeObject,
    Phase,
    Provider,
    ReconcileContext,
    Resource,
    StatusReport,
    ValidationFailed,
    WaitFor,
)
from actors.kube import ApiError, KubeClient
from actors.metrics import RuntimeMetrics
from actors.owned import OwnedIndex
from actors.ownership import FINALIZER, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_PROVIDER, MANAGED_BY_VALUE
from actors.resources import INSTANCES, SECRETS
from actors.shared import SharedActors
from actors.status import compose_status

log = structlog.get_logger("actors.reconciler")
tracer = trace.get_tracer("actors.reconciler")

# Opt-in, per Instance, to take ownership of fields another manager holds (server-side apply
# force). Off by default: we never take fields silently.
FORCE_OWNERSHIP_ANNOTATION = "provider-kserve.openeverest.io/force-ownership"

COND_VALID = "Valid"
COND_SYNCED = "Synced"


@dataclass(frozen=True)
class RuntimeConfig:
    provider_name: str
    field_manager: str
    poll_not_ready: float = 60.0
    status_connection_supported: bool = False


def provider_spec(instance: KubeObject, providers: Mapping[str, KubeObject]) -> dict[str, Any] | None:
    name = (instance.get("spec") or {}).get("providerRef", {}).get("name", "")
    provider = providers.get(name)
    return provider.get("spec") if provider else None


def version_problem(instance: KubeObject, providers: Mapping[str, KubeObject]) -> str | None:
    """The Go runtime's version-bundle check, with its exact message."""
    spec = instance.get("spec") or {}
    wanted = spec.get("version")
    if not wanted:
        return None
    names = [v.get("name") for v in (provider_spec(instance, providers) or {}).get("versions") or []]
    if wanted not in names:
        return f'version "{wanted}" is not defined by provider "{spec.get("providerRef", {}).get("name", "")}"'
    return None


class InstanceReconciler:
    def __init__(
        self,
        *,
        client: KubeClient,
        provider: Provider,
        config: RuntimeConfig,
        instances: Mapping[str, KubeObject],
        providers: Mapping[str, KubeObject],
        index: OwnedIndex,
        applier: Applier,
        shared: SharedActors,
        available: Callable[[], frozenset[Resource]],
        metrics: RuntimeMetrics,
    ) -> None:
        self.client = client
        self.provider = provider
        self.config = config
        self.instances = instances
        self.providers = providers
        self.index = index
        self.applier = applier
        self.shared = shared
        self.available = available
        self.metrics = metrics
        # Connection Secret data we last wrote, per Instance key, to skip identical writes.
        self._secret_digest: dict[str, bytes] = {}

    # -- entry point ----------------------------------------------------------------------

    async def __call__(self, key: str) -> Outcome:
        structlog.contextvars.bind_contextvars(instance=key)
        try:
            with tracer.start_as_current_span("reconcile", attributes={"instance": key}):
                instance = self.instances.get(key)
                if instance is None:
                    self._secret_digest.pop(key, None)
                    self.metrics.reconciles.labels(result="gone").inc()
                    return Outcome()
                try:
                    outcome = await self._reconcile(instance)  # a fresh copy: ours to modify
                except (aiohttp.ClientError, OSError, TimeoutError) as err:
                    # The API server is unreachable (restarting, network): retry with backoff like
                    # any failure, in one line; a traceback per Instance per retry would bury the
                    # informers' "connection to API server lost", which says it all.
                    log.warning("API server unreachable, will retry", error=str(err) or type(err).__name__)
                    outcome = Outcome(failed=True)
                result = "error" if outcome.failed else "success"
                self.metrics.reconciles.labels(result=result).inc()
                if outcome.failed:
                    self.metrics.retries.inc()
                return outcome
        finally:
            structlog.contextvars.unbind_contextvars("instance")

    @contextmanager
    def _step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        with tracer.start_as_current_span(name):
            try:
                yield
            finally:
                self.metrics.step_seconds.labels(step=name).observe(time.perf_counter() - started)

    async def _reconcile(self, instance: KubeObject) -> Outcome:
        meta = instance["metadata"]
        if meta.get("deletionTimestamp"):
            return await self._delete(instance)
        labels = meta.get("labels") or {}
        if FINALIZER not in (meta.get("finalizers") or []) or labels.get(LABEL_PROVIDER) != self.config.provider_name:
            with self._step("finalizer"):
                await self._add_finalizer(instance)
            # The update comes back as a watch event and runs us again with the new object.
            return Outcome()

        ctx = ReconcileContext(instance=instance, client=self.client, shared=self.shared, available=self.available())
        with self._step("validate"):
            problem = version_problem(instance, self.providers)
            if problem is None:
                try:
                    await self.provider.validate(ctx)
                except ValidationFailed as err:
                    problem = err.message
        if problem is not None:
            log.info("validation failed", reason=problem)
            await self._write_status(
                instance,
                StatusReport(Phase.FAILED, problem),
                runtime=[Condition(COND_VALID, "False", "ValidationFailed", problem)],
            )
            # Bad input is not retried hot: the next spec change (a watch event) runs us again.
            return Outcome()

        bundle = self._bundle_name(instance)
        resolved = self._resolve_versions(instance, bundle)
        ctx = ReconcileContext(
            instance=resolved,
            client=self.client,
            shared=self.shared,
            available=ctx.available,
            live=self._live(instance),
        )
        valid = Condition(COND_VALID, "True", "Validated", "")
        try:
            with self._step("sync"):
                desired = await self.provider.desired(ctx)
                force = (meta.get("annotations") or {}).get(FORCE_OWNERSHIP_ANNOTATION) == "true"
                synced = await self.applier.sync(resolved, desired, available=ctx.available, force=force)
        except WaitFor as wait:
            return Outcome(requeue_after=wait.seconds)
        except ApplyConflict as conflict:
            log.warning("apply conflict", conflict=str(conflict))
            report = StatusReport(Phase.FAILED, f"apply conflict: {conflict}")
            await self._write_status(
                instance,
                report,
                runtime=[valid, Condition(COND_SYNCED, "False", "ApplyConflict", str(conflict))],
                bundle=bundle,
                keep_phase=True,
            )
            return Outcome(failed=True)
        except ApiError as err:
            log.warning("sync failed", error=str(err))
            await self._write_status(
                instance,
                StatusReport(Phase.PROVISIONING, f"sync failed: {err}"),
                runtime=[valid, Condition(COND_SYNCED, "False", "ApplyFailed", str(err))],
                bundle=bundle,
                keep_phase=True,
            )
            return Outcome(failed=True)

        ctx.observed = synced.observed
        with self._step("status"):
            report = await self.provider.status(ctx)
            secret = await self._connection_secret(instance, report.connection)
            await self._write_status(
                instance,
                report,
                runtime=[valid, Condition(COND_SYNCED, "True", "Applied", "")],
                bundle=bundle,
                connection_secret=secret,
                complete=True,
            )
        if report.requeue_after is not None:
            return Outcome(requeue_after=report.requeue_after)
        if report.phase != Phase.READY:
            return Outcome(requeue_after=self.config.poll_not_ready)
        return Outcome()

    def _live(self, instance: KubeObject) -> Callable[[str, str], KubeObject | None]:
        """Lookup of this Instance's derived objects in the watch index (unpacked on demand)."""
        meta = instance["metadata"]
        owner_key, uid = f"{meta['namespace']}/{meta['name']}", str(meta.get("uid", ""))
        by_kind = self.applier.resources_by_kind

        def live(kind: str, name: str) -> KubeObject | None:
            resource = by_kind.get(kind)
            ref = self.index.get(owner_key, resource, name) if resource is not None else None
            return ref.object() if ref is not None and ref.owner_uid == uid else None

        return live

    # -- finalizer ------------------------------------------------------------------------

    async def _add_finalizer(self, instance: KubeObject) -> None:
        meta = instance["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZER not in finalizers:
            finalizers.append(FINALIZER)
        patch = {
            "metadata": {
                # resourceVersion makes the merge patch conditional: a stale copy fails with 409
                # instead of overwriting another writer's finalizer list.
                "resourceVersion": meta["resourceVersion"],
                "finalizers": finalizers,
                "labels": {LABEL_PROVIDER: self.config.provider_name},
            }
        }
        try:
            await self.client.patch(INSTANCES, meta["namespace"], meta["name"], patch)
        except ApiError as err:
            if err.status not in (404, 409):
                raise

    async def _remove_finalizer(self, instance: KubeObject) -> None:
        meta = instance["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        patch = {"metadata": {"resourceVersion": meta["resourceVersion"], "finalizers": finalizers}}
        try:
            await self.client.patch(INSTANCES, meta["namespace"], meta["name"], patch)
        except ApiError as err:
            if err.status not in (404, 409):
                raise

    # -- deletion -------------------------------------------------------------------------

    async def _delete(self, instance: KubeObject) -> Outcome:
        meta = instance["metadata"]
        if FINALIZER not in (meta.get("finalizers") or []):
            return Outcome()
        key = f"{meta['namespace']}/{meta['name']}"
        await self._write_status(instance, StatusReport(Phase.TERMINATING, "Deleting derived objects"), runtime=[])
        ctx = ReconcileContext(
            instance=instance,
            client=self.client,
            shared=self.shared,
            available=self.available(),
            live=self._live(instance),
        )
        with self._step("cleanup"):
            try:
                await self.provider.cleanup(ctx)
            except WaitFor as wait:
                return Outcome(requeue_after=wait.seconds)
            remaining = self.index.owned_by(key, str(meta.get("uid", "")))
            for ref in remaining:
                if not ref.deleting:
                    await self.applier.delete(ref)
            await self.client.delete(SECRETS, meta["namespace"], _secret_name(meta["name"]))
        if remaining:
            # Deletions land as watch events that run us again; while an object is held (a
            # foreign finalizer, say) we retry with backoff and keep our finalizer.
            log.info("waiting for derived objects to go", remaining=[f"{r.kind}/{r.name}" for r in remaining])
            return Outcome(failed=True)
        with self._step("finalizer"):
            await self._remove_finalizer(instance)
        self._secret_digest.pop(key, None)
        log.info("cleanup complete, finalizer removed")
        return Outcome()

    # -- versions -------------------------------------------------------------------------

    def _provider_spec(self, instance: KubeObject) -> dict[str, Any] | None:
        return provider_spec(instance, self.providers)

    def _bundle_name(self, instance: KubeObject) -> str | None:
        spec = self._provider_spec(instance) or {}
        explicit = instance["spec"].get("version") or (instance.get("status") or {}).get("version")
        if explicit:
            return str(explicit)
        default = next((v for v in spec.get("versions") or [] if v.get("default")), None)
        return str(default["name"]) if default else None

    def _resolve_versions(self, instance: KubeObject, bundle: str | None) -> KubeObject:
        """A copy with empty component versions filled from the bundle (stored object untouched)."""
        resolved = copy.deepcopy(instance)
        if not bundle:
            return resolved
        spec = self._provider_spec(instance) or {}
        entry = next((v for v in spec.get("versions") or [] if v.get("name") == bundle), None)
        for name, version in ((entry or {}).get("components") or {}).items():
            component = (resolved["spec"].get("components") or {}).get(name)
            if isinstance(component, dict) and not component.get("version"):
                component["version"] = version
        return resolved

    # -- status ---------------------------------------------------------------------------

    async def _connection_secret(self, instance: KubeObject, details: ConnectionDetails | None) -> str | None:
        meta = instance["metadata"]
        name = _secret_name(meta["name"])
        if details is None or details.is_empty():
            # Keep a Secret from an earlier pass (contract: it goes with the Instance).
            existing: str | None = (instance.get("status") or {}).get("connectionSecretRef", {}).get("name")
            return existing
        data = {k: base64.b64encode(v.encode()).decode() for k, v in details.secret_data().items()}
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {
                    LABEL_MANAGED_BY: MANAGED_BY_VALUE,
                    LABEL_INSTANCE: meta["name"],
                    LABEL_PROVIDER: self.config.provider_name,
                },
                "ownerReferences": [
                    {
                        "apiVersion": instance.get("apiVersion", "core.openeverest.io/v1alpha1"),
                        "kind": "Instance",
                        "name": meta["name"],
                        "uid": meta.get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "type": "Opaque",
            "data": data,
        }
        key = f"{meta['namespace']}/{meta['name']}"
        digest = content_hash({"data": data, "uid": meta.get("uid", "")})
        if self._secret_digest.get(key) != digest:
            live = await self.client.get(SECRETS, meta["namespace"], name)
            if live is None or live.get("data") != data:
                with tracer.start_as_current_span("apply", attributes={"k8s.kind": "Secret", "k8s.name": name}):
                    await self.client.apply(SECRETS, secret, field_manager=self.config.field_manager)
            self._secret_digest[key] = digest
        return name

    async def _write_status(
        self,
        instance: KubeObject,
        report: StatusReport,
        *,
        runtime: list[Condition],
        bundle: str | None = None,
        connection_secret: str | None = None,
        keep_phase: bool = False,
        complete: bool = False,
    ) -> None:
        meta = instance["metadata"]
        current = instance.get("status") or {}
        phase = report.phase
        if keep_phase and current.get("phase") in {p.value for p in Phase}:
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
            status_connection_supported=self.config.status_connection_supported,
        )
        if new == current:
            return
        body = {
            "apiVersion": instance.get("apiVersion", "core.openeverest.io/v1alpha1"),
            "kind": "Instance",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "resourceVersion": meta["resourceVersion"],
            },
            "spec": instance["spec"],
            "status": new,
        }
        with tracer.start_as_current_span("status-update"):
            try:
                await self.client.replace(INSTANCES, body, subresource="status")
            except ApiError as err:
                if err.status in (404, 409):
                    # Our copy is stale; the newer version's watch event runs us again.
                    return
                raise


def _secret_name(instance_name: str) -> str:
    return f"{instance_name}-conn"
