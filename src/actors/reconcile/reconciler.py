"""The per-Instance state machine: finalizer, Validate, Sync, Status; on deletion Cleanup.

Mirrors the OpenEverest Go provider-runtime step for step (finalizer and provider label first,
version-bundle check, Validate, Sync and Status on a copy with component versions resolved from the
bundle, the `<instance>-conn` Secret, status written through the status subresource) and goes
further where users need it: bounds on what one Instance may cost, validation errors carry their
message onto status without a retry storm, apply conflicts and name clashes are named, status is
written only when it changed and always in a form the CRD accepts, deletion waits until every object
we own is gone, and an Instance handed to another provider is released (our objects removed, our
finalizer taken off) instead of forgotten.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import structlog
from opentelemetry import trace

from actors.apply.applier import Applier, SyncResult
from actors.apply.conflicts import ApplyConflict, InvalidObject, NameClash, ResourceNotServed
from actors.apply.write_ledger import WriteLedger
from actors.cache.limits import InstanceLimits
from actors.cache.owned_index import OwnedIndex
from actors.client import ApiError, KubeClient, TransportError, WriteWithheld
from actors.client.concurrently import all_of
from actors.client.known_resources import INSTANCES
from actors.client.resource import ObjectKey, object_key
from actors.contract import LABEL_PROVIDER, holds_finalizer, provider_name
from actors.interface import (
    Condition,
    KubeObject,
    Phase,
    Provider,
    ReconcileContext,
    Resource,
    StatusReport,
    WaitFor,
)
from actors.observe.metrics import RuntimeMetrics
from actors.observe.tracing import annotate, span
from actors.queue.actor_system import Action
from actors.reconcile import finalizer
from actors.reconcile.notices import Notices
from actors.reconcile.validate import Refusal, Validated, validate
from actors.reconcile.versions import awaiting_provider
from actors.status.connection_secret import connection_secret
from actors.status.events import EventRecorder
from actors.status.writer import StaleStatus, StatusWriter

log = structlog.get_logger(__name__)
tracer = trace.get_tracer(__name__)

COND_VALID = "Valid"
COND_SYNCED = "Synced"
VALID = Condition(COND_VALID, "True", "Validated", "")
# How often an Instance whose derived name is taken by a foreign object looks again (foreign
# objects are not watched, so no event says when the name is free).
NAME_CLASH_RETRY = 30.0


@dataclass(frozen=True)
class RuntimeConfig:
    provider_name: str
    field_manager: str
    # The Instance annotation that, set to "true", opts in to taking fields another manager holds
    # (server-side apply force). Off by default: we never take fields silently.
    force_annotation: str
    poll_not_ready: float | None = None
    limits: InstanceLimits = field(default_factory=InstanceLimits)


class InstanceReconciler:
    def __init__(
        self,
        *,
        client: KubeClient,
        provider: Provider[Any],
        config: RuntimeConfig,
        instances: Mapping[str, KubeObject],
        providers: Mapping[str, KubeObject],
        index: OwnedIndex,
        applier: Applier,
        status: StatusWriter,
        available: Callable[[], frozenset[Resource]],
        metrics: RuntimeMetrics,
        rejected: Mapping[str, str] | None = None,
        not_served: Callable[[Resource], None] = lambda resource: None,
        writes: WriteLedger | None = None,
        events: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.provider = provider
        self.config = config
        self.instances = instances
        self.providers = providers
        self.index = index
        self.applier = applier
        self.status = status
        self.available = available
        self.metrics = metrics
        # Instances kept only as a stub because they broke a bound on reading (key → why).
        self.rejected: Mapping[str, str] = rejected if rejected is not None else {}
        self._not_served = not_served
        # Our writes to an Instance's metadata (the finalizer): their watch events wake no one.
        self._writes = writes if writes is not None else WriteLedger()
        # What a user must know, as Events on the Instance.
        self.notices = Notices(events)

    # -- entry point ----------------------------------------------------------------------

    async def __call__(self, key: str) -> Action:
        structlog.contextvars.bind_contextvars(instance=key)
        try:
            with span(tracer, "reconcile", {"instance": key}) as root:
                instance = self.instances.get(key)
                if instance is None:
                    self._count(root, "gone")
                    self.metrics.instance_phases.forget(key)
                    return Action()
                annotate(root, {"instance.generation": instance["metadata"].get("generation", 0)})
                try:
                    outcome = await self._reconcile(key, instance)  # a fresh copy: ours to modify
                except TransportError as err:
                    # The API server is unreachable (restarting, network): retry with backoff like
                    # any failure, in one line; a traceback per Instance per retry would bury the
                    # informers' "connection to API server lost", which says it all.
                    log.warning("API server unreachable, will retry", error=str(err) or type(err).__name__)
                    outcome = Action(failed=True)
                except WriteWithheld as err:
                    # Our lease is not fresh: another replica may lead now. The elector's renew loop
                    # decides; until then nothing is written.
                    log.warning("write withheld, not leading", error=str(err))
                    outcome = Action(failed=True)
                except (finalizer.Conflict, StaleStatus):
                    # Our copy was stale: the retry reads the newer one from the informer's cache.
                    log.info("Instance changed under a conditional write, will retry")
                    outcome = Action(failed=True)
                except anyio.get_cancelled_exc_class():
                    # Shutdown (or losing the lead) cut the pass short: say so, in the span and the
                    # metric, rather than leave a pass with no result that counts nowhere.
                    self._count(root, "cancelled")
                    raise
                except Exception:
                    self._count(root, "error")  # the actor system logs it and retries
                    self.metrics.retries.inc()
                    raise
                self._count(root, "error" if outcome.failed or outcome.terminal else "success")
                if outcome.failed:
                    self.metrics.retries.inc()
                return outcome
        finally:
            structlog.contextvars.unbind_contextvars("instance")

    def _count(self, root: trace.Span | None, result: str) -> None:
        self.metrics.reconciles.labels(result=result).inc()
        annotate(root, {"reconcile.result": result})

    @contextmanager
    def _step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        with span(tracer, name):
            try:
                yield
            except Exception:
                self.metrics.step_errors.labels(step=name).inc()
                raise
            finally:
                self.metrics.step_seconds.labels(step=name).observe(time.perf_counter() - started)

    def _context(self, instance: KubeObject) -> ReconcileContext:
        return ReconcileContext(
            instance=instance, client=self.client, available=self.available(), live=self._live(instance)
        )

    async def _reconcile(self, key: str, instance: KubeObject) -> Action:
        meta = instance["metadata"]
        ours = provider_name(instance) == self.config.provider_name
        if meta.get("deletionTimestamp") or not ours:
            return await self._cleanup(key, instance, ours=ours)
        labels = meta.get("labels") or {}
        recheck = False
        if not holds_finalizer(instance) or labels.get(LABEL_PROVIDER) != self.config.provider_name:
            patched, recheck = await self._add_finalizer(key, instance)
            if patched is None:
                return Action()  # gone meanwhile
            instance = patched
        outcome = await self._validate_and_sync(key, instance)
        if recheck and not outcome.failed:
            return Action(requeue_after=0.0)  # someone else wrote the Instance while we did: look again
        return outcome

    async def _add_finalizer(self, key: str, instance: KubeObject) -> tuple[KubeObject | None, bool]:
        """Add our finalizer and label; the Instance as stored now (None: gone), and whether another
        writer's change to it came in meanwhile. The pass goes on with what the patch returned:
        its watch event is our own write and wakes no one, rather than costing a second pass, a
        settle window and a slot wait before the first apply. Later writes (status) carry the
        new resourceVersion."""
        patched: KubeObject | None = None
        parsed = ObjectKey.parse(key)
        instance_id = (INSTANCES, parsed.namespace, parsed.name)
        self._writes.begin(instance_id)
        try:
            with self._step("finalizer"):
                patched = await finalizer.add(
                    self.client, instance, self.config.provider_name, field_manager=self.config.field_manager
                )
        finally:
            version = None if patched is None else str(patched["metadata"].get("resourceVersion", ""))
            recheck = self._writes.finish(instance_id, version)
        return patched, recheck

    async def _validate_and_sync(self, key: str, instance: KubeObject) -> Action:
        with self._step("validate"):
            validated = await validate(
                self.provider,
                instance,
                providers=self.providers,
                context=self._context,
                over_limit=self.rejected.get(key),
            )
        if isinstance(validated, Refusal):
            log.info("validation failed", reason=validated.message[:500])
            await self.status.write(
                instance,
                StatusReport(Phase.FAILED, validated.message),
                runtime=[Condition(COND_VALID, "False", "ValidationFailed", validated.message)],
            )
            await self.notices.refused(instance, validated)
            # Bad input is not retried hot: the next spec change (a watch event) runs us again, as
            # does a Provider change (the manager wakes whom it concerns). A Provider not known yet
            # is retried with backoff, as the Go runtime does.
            return Action(failed=awaiting_provider(instance, self.providers))
        synced = await self._sync(instance, validated)
        if isinstance(synced, Action):
            return synced
        return await self._status(instance, validated, synced)

    async def _sync(self, instance: KubeObject, validated: Validated) -> SyncResult | Action:
        """Sync: apply the desired objects, prune the ones no longer desired; an Action when the
        pass cannot go on to Status."""
        ctx = validated.ctx
        force = (instance["metadata"].get("annotations") or {}).get(self.config.force_annotation) == "true"
        try:
            with self._step("sync"):
                desired = await self.provider.desired(ctx, validated.valid)
                await self._send_releases(ctx)
                return await self.applier.sync(ctx.instance, desired, available=ctx.available, force=force)
        except WaitFor as wait:
            return Action(requeue_after=wait.seconds)
        except ResourceNotServed as gone:
            # Its CRD was removed after discovery: forget it until discovery sees it again, and run
            # once more so the provider reports the missing kind in its own words.
            log.warning("kind no longer served", resource=str(gone.resource))
            self._not_served(gone.resource)
            return Action(requeue_after=0.0)
        except (ApplyConflict, NameClash, InvalidObject, ApiError) as err:
            return await self._sync_failed(instance, err, validated.bundle)

    async def _status(self, instance: KubeObject, validated: Validated, synced: SyncResult) -> Action:
        """Status: the provider's report on what Sync left, the connection Secret, then status."""
        ctx = validated.ctx
        ctx.observed = synced.observed
        ctx.written = frozenset(synced.written)
        with self._step("status"):
            report = await self.provider.status(ctx, validated.valid)
            secret, clash = await connection_secret(self.applier, ctx.instance, report.connection, synced)
            await self.status.write(
                instance,
                report,
                runtime=[VALID, Condition(COND_SYNCED, "True", "Applied", "")],
                bundle=validated.bundle,
                connection_secret=secret,
                connection_problem=clash,
                complete=True,
            )
        await self.notices.phase(instance, report.phase, report.message)
        await self.notices.warning(instance, report.warning, report.message)
        await self.notices.noted(instance, report.events)
        await self.notices.deleted(instance, synced.pruned_objects)
        if synced.taken_back:
            await self.notices.taken_back(instance, synced.taken_back)
            # A hand edit undone: if the next pass must undo one again, it waits longer each time.
            return Action(back_off=True)
        if synced.recheck:
            return Action(requeue_after=0.0)  # someone else wrote an object while we did: look again
        if report.requeue_after is not None:
            return Action(requeue_after=report.requeue_after)
        if not report.phase.settled and self.config.poll_not_ready:
            return Action(requeue_after=self.config.poll_not_ready)
        return Action()

    async def _sync_failed(self, instance: KubeObject, err: Exception, bundle: str | None) -> Action:
        """Say on status why the derived objects could not be written, and when to try again."""
        if isinstance(err, ApplyConflict):
            reason, message, phase = "ApplyConflict", f"apply conflict: {err}", Phase.FAILED
        elif isinstance(err, NameClash):
            reason, message, phase = "NameClash", str(err), Phase.FAILED
        elif isinstance(err, InvalidObject):
            reason, message, phase = "Invalid", str(err), Phase.FAILED
        else:
            reason, message, phase = "ApplyFailed", f"sync failed: {err}", Phase.PROVISIONING
        log.warning("sync failed", reason=reason, error=str(err)[:500])
        await self.status.write(
            instance,
            StatusReport(phase, message),
            runtime=[VALID, Condition(COND_SYNCED, "False", reason, str(err))],
            bundle=bundle,
            # A transient failure must not flip a serving Instance to another phase; an object the
            # API server refuses as invalid stays refused until the Instance changes: Failed.
            keep_phase=not isinstance(err, InvalidObject),
        )
        await self.notices.sync_failed(instance, err)
        if isinstance(err, NameClash):
            return Action(requeue_after=NAME_CLASH_RETRY)
        if isinstance(err, InvalidObject):
            return Action(terminal=True)  # the same apply would be refused again: wait for a change
        return Action(failed=True)

    async def _send_releases(self, ctx: ReconcileContext) -> None:
        """The provider's releases: merge patches another controller is to act on. One for an
        object gone already is done."""
        for release in self.provider.releases(ctx):
            log.info("asking another controller to release", kind=release.resource.kind, name=release.name)
            try:
                await self.client.patch(release.resource, release.namespace, release.name, release.patch)
            except ApiError as err:
                if not err.not_found:
                    raise

    def _live(self, instance: KubeObject) -> Callable[[Resource, str], KubeObject | None]:
        """Lookup of this Instance's derived objects in the watch index (unpacked on demand)."""
        meta = instance["metadata"]
        owner_key, uid = object_key(instance), str(meta.get("uid", ""))

        def live(resource: Resource, name: str) -> KubeObject | None:
            ref = self.index.get(owner_key, resource, name)
            return ref.object() if ref is not None and ref.owner_uid == uid else None

        return live

    # -- deletion, and an Instance handed to another provider -----------------------------

    async def _cleanup(self, key: str, instance: KubeObject, *, ours: bool) -> Action:
        """Cleanup: delete every object we own, then take our finalizer off: on deletion, or when the
        Instance's providerRef moved to another provider (whose finalizer it then is, once that
        provider's runtime has put its own label on)."""
        meta = instance["metadata"]
        uid = str(meta.get("uid", ""))
        if not holds_finalizer(instance) and not self.index.owned_by(key, uid):
            return Action()
        if ours:
            await self.status.write(instance, StatusReport(Phase.TERMINATING, "Deleting derived objects"), runtime=[])
        with self._step("cleanup"):
            if ours:
                ctx = self._context(instance)
                try:
                    await self._send_releases(ctx)
                    await self.provider.cleanup(ctx)
                except WaitFor as wait:
                    return Action(requeue_after=wait.seconds)
            # What the API server deleted at once is gone: no need to wait for its watch event
            # (the index drops it then) before taking our finalizer off. The deletes do not
            # depend on each other: sent at once.
            owned = self.index.owned_by(key, uid)
            to_delete = [ref for ref in owned if not ref.deleting]
            gone = await all_of([partial(self.applier.delete, ref) for ref in to_delete])
            remaining = [ref for ref in owned if ref.deleting] + [
                ref for ref, went in zip(to_delete, gone, strict=True) if not went
            ]
            await self.notices.deleted(instance, [f"{ref.kind} {ref.name}" for ref in to_delete])
        if remaining:
            # Deletions land as watch events that run us again; while an object is held (a
            # foreign finalizer, say) we retry with backoff and keep our finalizer.
            log.info("waiting for derived objects to go", remaining=[f"{r.kind}/{r.name}" for r in remaining])
            return Action(failed=True)
        if ours or (meta.get("labels") or {}).get(LABEL_PROVIDER) == self.config.provider_name:
            with self._step("finalizer"):
                await finalizer.remove(
                    self.client,
                    instance,
                    field_manager=self.config.field_manager,
                    drop_label=None if ours else self.config.provider_name,
                )
            log.info("cleanup complete, finalizer removed" if ours else "released to another provider")
            if not ours:
                await self.notices.released(instance, provider_name(instance))
        return Action()
