"""The manager (controller-runtime's word): builds the runtime's components in dependency order and
runs them, each with anyio's structured start, so a component is started only once what it needs is.

Built (in `__init__`, no I/O): metrics, the owned index, the ledger of our own writes, the Applier,
the Instance store, the owned kinds, the status writer, the event recorder, the reconciler, the
actor system (our workqueue) and, when asked, the leader elector, whose fence then guards every
write of the client. Started (in `run`), in order: the HTTP endpoints (each with its connection
guard); the Provider resources' cache (every replica serves /validate); the lease, when electing;
then, as the leader: the status writer (it reads what the Instance CRD supports), the event
recorder's flush, the actor system, the provider's shared actors, the owned kinds (discovered,
their caches synced, so the first reconciles see existing objects), the Instance caches, and the
periodic resync. A cache that does not sync fails start-up with a message naming its kind. No
component rewrites another's attributes.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from actors.apply.applier import Applier
from actors.apply.write_ledger import WriteLedger
from actors.cache.informer import Informer, start_informer
from actors.cache.instance_store import InstanceStore, StoredInstance
from actors.cache.owned_index import OwnedIndex, OwnedRef, owned_ref
from actors.cache.owned_kinds import OwnedKinds
from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, PROVIDERS, SECRETS
from actors.client.resource import ObjectKey
from actors.contract import LABEL_PROVIDER, connection_secret_name
from actors.interface import KubeObject, Provider, ReconcileContext
from actors.manager.leader import LeaderElector
from actors.manager.options import ManagerOptions
from actors.manager.shared import SharedActors, SharedContext, informer_watch
from actors.observe.metrics import RuntimeMetrics
from actors.queue.actor_system import ActorSystem
from actors.reconcile.reconciler import InstanceReconciler, RuntimeConfig
from actors.reconcile.validate import Refusal, validate
from actors.reconcile.versions import effective_bundle, version_problem
from actors.serve import endpoints
from actors.status.events import EventRecorder
from actors.status.writer import StatusWriter

log = structlog.get_logger(__name__)

__all__ = ["Manager"]


def instance_needs_reconcile(writes: WriteLedger, key: str, changed: bool, new: StoredInstance | None) -> bool:
    """Whether an Instance's watch event needs a reconcile: what a reconcile reads `changed`, and the
    event is not the echo of our own finalizer write (nor held while that write is under way)."""
    parsed = ObjectKey.parse(key)
    instance = (INSTANCES, parsed.namespace, parsed.name)
    if new is None:
        writes.forget(instance)
        return changed
    return not writes.on_event(instance, new.resource_version, relevant=changed) and changed


class Manager:
    def __init__(
        self,
        client: KubeClient,
        provider: Provider[Any],
        *,
        options: ManagerOptions | None = None,
        shared: SharedActors | None = None,
        metrics: RuntimeMetrics | None = None,
    ) -> None:
        self.client = client
        self.provider = provider
        self.options = opts = options or ManagerOptions()
        self.shared = shared or SharedActors()
        # The client's observers feed `metrics.observe_request` when the caller wired them so
        # (actors.manager.command does); when electing, the manager fences the client's writes.
        self.metrics = metrics or RuntimeMetrics()
        self.index = OwnedIndex()
        # Our own writes, to Instances and derived objects alike: their echoes wake no one.
        self.writes = WriteLedger()
        # The provider's kinds, and the connection Secret the runtime writes itself.
        self.owned = [*dict.fromkeys([*provider.owned_resources(), SECRETS])]
        self.intent_annotation = f"{provider.annotation_domain}/applied-intent"
        self.applier = self._applier()
        self.instances = InstanceStore(provider.name, opts.limits, self.index)
        self.providers: dict[str, KubeObject] = {}
        self.kinds = self._owned_kinds()
        self.status = StatusWriter(client, field_manager=provider.name, phases=self.metrics.instance_phases)
        self.events = self._event_recorder()
        self.reconciler = self._reconciler()
        self.actors = self._actor_system()
        self.elector = self._elector() if opts.leader_elect else None
        if self.elector is not None:
            # No write leaves this process unless its lease is fresh (LeaderElector.fence).
            client.fence_writes(self.elector.fence)
        self._leading = False
        self._expose_gauges()
        self.instance_informers = [self._instance_informer(namespace) for namespace in self._scopes()]

    def _applier(self) -> Applier:
        name = self.provider.name
        return Applier(
            self.client,
            self.index,
            self.writes,
            field_manager=name,
            provider_name=name,
            intent_annotation=self.intent_annotation,
            resources=self.owned,
            unpruned=frozenset({SECRETS}),
        )

    def _event_recorder(self) -> EventRecorder:
        return EventRecorder(
            self.client,
            controller=self.provider.name,
            instance=socket.gethostname(),
            flush_interval=self.options.events_flush_interval,
            series_window=self.options.events_series_window,
        )

    def _actor_system(self) -> ActorSystem:
        opts = self.options
        return ActorSystem(
            self.reconciler,
            limiter=opts.rate_limiter(),
            max_concurrent=opts.max_concurrent,
            idle_timeout=opts.idle_timeout,
            on_wait=self.metrics.observe_queue_wait,
            on_run=self.metrics.observe_reconcile,
        )

    def _elector(self) -> LeaderElector:
        opts = self.options
        return LeaderElector(
            self.client,
            opts.lease_namespace,
            opts.lease_name or f"{self.provider.name}-leader",
            opts.identity,
            lease_duration=opts.lease_duration,
            renew_deadline=opts.renew_deadline,
            retry_period=opts.retry_period,
        )

    def _expose_gauges(self) -> None:
        # Read at scrape time: counting on every actor event would be O(N) per event.
        self.metrics.live_actors.set_function(lambda: self.actors.live)
        self.metrics.queue_depth.set_function(lambda: self.actors.depth)
        self.metrics.scheduled_runs.set_function(lambda: self.actors.parked)
        self.metrics.leader.set_function(lambda: float(self._leading))

    def _instance_informer(self, namespace: str | None) -> Informer[StoredInstance | None]:
        return Informer(
            self.client,
            INSTANCES,
            namespace=namespace,
            transform=self.instances.transform,
            on_change=self._instance_changed,
            settings=self.options.watch_settings(),
            store=self.instances.scope_store(),
        )

    def _owned_kinds(self) -> OwnedKinds:
        annotation = self.intent_annotation
        return OwnedKinds(
            self.client,
            self.owned,
            scopes=self._scopes(),
            label_selector=f"{LABEL_PROVIDER}={self.provider.name}",
            transform=lambda resource, obj: self._derived(
                owned_ref(resource, obj, intent_annotation=annotation, max_bytes=self.options.max_owned_object_bytes)
            ),
            on_change=self._owned_changed,
            interval=self.options.discovery_interval,
            sync_timeout=self.options.sync_timeout,
            settings=self.options.watch_settings(),
        )

    def _derived(self, ref: OwnedRef | None) -> OwnedRef | None:
        """`ref` when its name is one derived for its Instance (the connection Secret's, or one the
        provider derives), else None: an object under another name is not ours to keep, index,
        prune or delete, whatever labels and owner reference it carries."""
        if ref is None:
            return None
        if ref.resource == SECRETS and ref.name == connection_secret_name(ref.owner_name):
            return ref
        return ref if self.provider.derives(ref.owner_name, ref.resource, ref.name) else None

    def _reconciler(self) -> InstanceReconciler:
        opts, name = self.options, self.provider.name
        return InstanceReconciler(
            client=self.client,
            provider=self.provider,
            config=RuntimeConfig(
                provider_name=name,
                field_manager=name,
                force_annotation=f"{self.provider.annotation_domain}/force-ownership",
                poll_not_ready=opts.poll_not_ready,
                limits=opts.limits,
            ),
            instances=self.instances.objects,
            providers=self.providers,
            index=self.index,
            applier=self.applier,
            status=self.status,
            available=self.kinds.available,
            metrics=self.metrics,
            rejected=self.instances.rejected,
            not_served=self.kinds.not_served,
            writes=self.writes,
            events=self.events,
        )

    def _scopes(self) -> list[str | None]:
        """Namespaces to watch; [None] means all namespaces."""
        return list(self.options.namespaces) or [None]

    def ready(self) -> bool:
        if self.elector is not None and not self.elector.is_leader:
            return True  # a standby is healthy and ready to take over
        return self._leading

    # -- run ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Start every component in dependency order and run until cancelled (or leadership is lost)."""
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self._serve_endpoints)
                # Every replica serves /validate, so every replica follows the Provider resource.
                providers = Informer(
                    self.client,
                    PROVIDERS,
                    transform=lambda o: o,
                    on_change=self._provider_changed,
                    settings=self.options.watch_settings(),
                )
                await start_informer(tg, providers, self.options.sync_timeout)
                if self.elector is not None:
                    await self.elector.acquire()
                    tg.start_soon(self.elector.hold)
                await self._lead(tg)
        finally:
            if self.elector is not None:
                with anyio.CancelScope(shield=True):
                    await self.elector.release()

    async def _lead(self, tg: anyio.abc.TaskGroup) -> None:
        await tg.start(self.status.start)
        tg.start_soon(self.events.run)
        await tg.start(self.actors.run)
        opts = self.options
        watch = informer_watch(self.client, opts.watch_settings(), opts.shared_sync_timeout)
        await self.shared.start(tg, SharedContext(wake=self.wake_matching, watch=watch, wake_key=self.wake_key))
        await tg.start(self.kinds.run)
        for informer in self.instance_informers:
            await start_informer(tg, informer, self.options.sync_timeout)
        self._leading = True
        tg.start_soon(self._resync_loop)

    async def _serve_endpoints(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        served = await endpoints.start(
            self.options.endpoints,
            self.client,
            ready=self.ready,
            registry=self.metrics.registry,
            validate=self.validate,
            schema=self.published_schema,
        )
        try:
            async with anyio.create_task_group() as tg:
                for server in served:
                    tg.start_soon(server.guard.run)
                task_status.started()
        finally:
            for server in served:
                with anyio.CancelScope(shield=True):
                    await server.runner.cleanup()

    # -- validation endpoint --------------------------------------------------------------

    async def validate(self, obj: KubeObject) -> str | None:
        """The reconcile-time Validate step (bounds, version bundle, the provider's rules), for /validate."""
        available = self.kinds.available()
        validated = await validate(
            self.provider,
            obj,
            providers=self.providers,
            over_limit=self.options.limits.problem(obj),
            context=lambda instance: ReconcileContext(instance=instance, client=self.client, available=available),
        )
        return validated.message if isinstance(validated, Refusal) else None

    def published_schema(self) -> dict[str, Any] | None:
        provider = self.providers.get(self.provider.name)
        return provider.get("spec") if provider else None

    # -- events ---------------------------------------------------------------------------

    def _instance_changed(self, key: str, old: StoredInstance | None, new: StoredInstance | None) -> None:
        if instance_needs_reconcile(self.writes, key, self.instances.changed(old, new), new):
            # A change to an Instance we already had is a user's edit: ahead of bulk work.
            self.actors.notify(key, urgent=old is not None and new is not None)

    def _provider_changed(self, key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if new is None:
            self.providers.pop(key, None)
        else:
            self.providers[key] = new
        if (old or {}).get("spec") == (new or {}).get("spec"):
            return
        # A failed version check is not retried by itself (bad input waits for an edit): rerun the
        # Instances whose check or bundle this change decides differently, e.g. a bundle the
        # upgraded Provider now defines, or the Provider appearing at all. Instances with a frozen
        # status.version keep their bundle and are left alone.
        before, after = ({key: old} if old else {}), ({key: new} if new else {})

        def affected(obj: KubeObject) -> bool:
            return any(decide(obj, before) != decide(obj, after) for decide in (version_problem, effective_bundle))

        woken = self.wake_matching(affected)
        if woken:
            log.info("Provider changed, rechecking version bundles", provider=key, instances=woken)

    def _owned_changed(self, key: str, old: OwnedRef | None, new: OwnedRef | None) -> None:
        self.index.update(old, new)
        if new is not None and self.writes.on_event(
            (new.resource, new.namespace, new.name), new.resource_version, deleting=new.deleting
        ):
            return  # our own write coming back: the reconcile that made it has seen it
        if new is None and old is not None and self.writes.on_deleted((old.resource, old.namespace, old.name)):
            return  # our own delete: the reconcile that made it went on knowing it was gone
        ref = new or old
        if ref is not None and ref.owner_key in self.instances.objects:
            # Deferrable: another writer changing our object in a loop must not set the pace.
            self.actors.notify(ref.owner_key, deferrable=True)

    async def _resync_loop(self) -> None:
        while True:
            await anyio.sleep(self.options.resync_period)
            self.resync()

    def resync(self) -> None:
        for key in list(self.instances.objects):
            self.actors.notify(key)

    def wake_key(self, key: str) -> bool:
        """Wake the actor of the Instance `key` (`namespace/name`) if it is one of ours."""
        if key not in self.instances.objects:
            return False
        self.actors.notify(key)
        return True

    def wake_matching(self, predicate: Callable[[KubeObject], bool]) -> int:
        """Wake the actors of every Instance for which `predicate` holds (shared actors use it)."""
        keys = self.instances.keys_matching(predicate)
        for key in keys:
            self.actors.notify(key)
        return len(keys)
