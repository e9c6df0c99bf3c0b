"""Wires the runtime together: informers → per-Instance actors → reconciler, plus leader election,
discovery of optional kinds, periodic resync, shared actors and the health/metrics endpoints."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
import structlog

from actors import endpoints
from actors.actor import ActorSystem, Outcome
from actors.apply import Applier, content_hash
from actors.finalizer import holds_finalizer
from actors.informer import Informer
from actors.interface import KubeObject, Provider, ReconcileContext, Resource, ValidationFailed
from actors.kube import ApiError, KubeClient
from actors.leader import LeaderElector
from actors.limits import InstanceLimits, spec_bytes, stub
from actors.metrics import RuntimeMetrics
from actors.owned import OwnedIndex, OwnedRef, owned_ref
from actors.ownership import LABEL_PROVIDER
from actors.packed import PackedObjects, pack
from actors.ratelimit import ExponentialBackoff, RateLimiter, TokenBucket
from actors.reconciler import InstanceReconciler, RuntimeConfig, provider_ref_name
from actors.resources import CRDS, INSTANCES, PROVIDERS, SECRETS
from actors.shared import SharedActors
from actors.versions import effective_bundle, version_problem

log = structlog.get_logger("actors.manager")

# Fields whose change alone never needs a reconcile (our own status writes come back as events).
_VOLATILE_METADATA = ("resourceVersion", "managedFields")



@dataclass(frozen=True, slots=True)
class StoredInstance:
    """What the informer keeps per Instance: the digest of what needs a reconcile when it changes
    (an event is judged without unpacking either version), the packed object, and why it was kept
    only as a stub (a bound it broke), if it was."""

    digest: bytes
    packed: bytes
    rejected: str | None = None


@dataclass
class ManagerOptions:
    namespaces: Sequence[str] = ()  # empty: all namespaces
    max_concurrent: int = 16
    qps: float = 10.0
    burst: int = 100
    backoff_base: float = 0.005
    backoff_cap: float = 1000.0
    idle_timeout: float = 10.0
    resync_period: float = 600.0
    poll_not_ready: float = 60.0
    discovery_interval: float = 30.0
    leader_elect: bool = False
    lease_namespace: str = "default"
    lease_name: str = ""
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    limits: InstanceLimits = field(default_factory=InstanceLimits)
    # Instances per list page: an Instance may be up to ~1.5 MB, and a page is held whole while
    # it is decoded.
    instance_page_size: int = 100
    endpoints: endpoints.Endpoints = field(default_factory=endpoints.Endpoints)


def reconcile_digest(obj: KubeObject) -> bytes:
    """Digest of the metadata but resourceVersion: a spec change bumps metadata.generation (the
    Instance CRD has a status subresource), so this covers the spec too, and a status write
    (ours, coming back as an event) leaves it unchanged."""
    meta = obj.get("metadata") or {}
    return content_hash({k: v for k, v in meta.items() if k not in _VOLATILE_METADATA})


class Manager:
    def __init__(
        self,
        client: KubeClient,
        provider: Provider,
        *,
        options: ManagerOptions | None = None,
        shared: SharedActors | None = None,
        metrics: RuntimeMetrics | None = None,
        field_manager: str | None = None,
    ) -> None:
        self.client = client
        self.provider = provider
        self.options = options or ManagerOptions()
        self.shared = shared or SharedActors()
        self.shared.wake = self.wake_matching
        self.metrics = metrics or RuntimeMetrics()
        client.observers.append(self.metrics.observe_request)
        # Our status and finalizer writes then show up under the same name as our applies.
        client.user_agent = field_manager or provider.name
        self.index = OwnedIndex()
        # The provider's kinds, and the connection Secret the runtime writes itself.
        owned = [*dict.fromkeys([*provider.owned_resources(), SECRETS])]
        self.owned_resources = owned
        self.applier = Applier(
            client,
            self.index,
            field_manager=field_manager or provider.name,
            provider_name=provider.name,
            resources_by_kind={r.kind: r for r in owned},
            wake_owner=lambda owner_key: self.actors.notify(owner_key),
            unpruned=frozenset({SECRETS}),
        )
        self._available: set[Resource] = set()
        self._watched: set[Resource] = set()
        self._reported_missing: set[Resource] = set()
        self.instance_informers: list[Informer[StoredInstance | None]] = []
        # Our Instances, packed (a fifth of their size as dicts); every read is a fresh copy.
        self.instances = PackedObjects()
        # Instances kept as a stub because they broke a bound (key → why).
        self.rejected: dict[str, str] = {}
        self.providers: dict[str, KubeObject] = {}
        self.actors = ActorSystem(
            self._reconcile,
            limiter=RateLimiter(
                ExponentialBackoff(self.options.backoff_base, self.options.backoff_cap),
                TokenBucket(self.options.qps, self.options.burst),
            ),
            max_concurrent=self.options.max_concurrent,
            idle_timeout=self.options.idle_timeout,
        )
        # Read at scrape time: counting on every actor event would be O(N) per event.
        self.metrics.live_actors.set_function(lambda: self.actors.live)
        self.metrics.queue_depth.set_function(lambda: self.actors.depth)
        self.metrics.scheduled_runs.set_function(lambda: self.actors.parked)
        self.reconciler: InstanceReconciler | None = None
        self.elector: LeaderElector | None = None
        self._started = False

    # -- readiness ------------------------------------------------------------------------

    def ready(self) -> bool:
        if self.elector is not None and not self.elector.is_leader:
            return True  # a standby is healthy and ready to take over
        return self._started and all(i.synced.is_set() for i in self.instance_informers)

    def _scopes(self) -> list[str | None]:
        """Namespaces to watch; [None] means all namespaces."""
        return list(self.options.namespaces) or [None]

    def available(self) -> frozenset[Resource]:
        return frozenset(self._available)

    # -- run ------------------------------------------------------------------------------

    async def run(self) -> None:
        opts = self.options
        runners = await endpoints.start(
            opts.endpoints,
            self.client,
            ready=self.ready,
            registry=self.metrics.registry,
            validate=self.validate,
            schema=self.published_schema,
        )
        try:
            async with anyio.create_task_group() as tg:
                # Every replica serves /validate, so every replica follows the Provider resource.
                providers = Informer(self.client, PROVIDERS, transform=lambda o: o, on_change=self._provider_changed)
                tg.start_soon(providers.run)
                with anyio.move_on_after(30):
                    await providers.synced.wait()
                if opts.leader_elect:
                    self.elector = LeaderElector(
                        self.client,
                        opts.lease_namespace,
                        opts.lease_name or f"{self.provider.name}-leader",
                        opts.identity,
                    )
                    await self.elector.acquire()
                await self._run_leader()
                tg.cancel_scope.cancel()
        finally:
            if self.elector is not None:
                with anyio.CancelScope(shield=True):
                    await self.elector.release()
            for runner in runners:
                with anyio.CancelScope(shield=True):
                    await runner.cleanup()

    async def _run_leader(self) -> None:
        status_connection = await self._instance_status_has_connection()
        self.reconciler = InstanceReconciler(
            client=self.client,
            provider=self.provider,
            config=RuntimeConfig(
                provider_name=self.provider.name,
                field_manager=self.applier.field_manager,
                poll_not_ready=self.options.poll_not_ready,
                status_connection_supported=status_connection,
                limits=self.options.limits,
            ),
            instances=self.instances,
            providers=self.providers,
            index=self.index,
            applier=self.applier,
            shared=self.shared,
            available=self.available,
            metrics=self.metrics,
            rejected=self.rejected,
            not_served=self.resource_not_served,
        )
        async with anyio.create_task_group() as tg:
            if self.elector is not None:
                tg.start_soon(self.elector.hold)
            await self.shared.start(tg)
            tg.start_soon(self.actors.run)
            await anyio.lowlevel.checkpoint()  # let the actor system install its task group
            # Owned kinds first, so the first reconciles see existing objects in the index.
            await self._discover(tg)
            tg.start_soon(self._discovery_loop, tg)
            for namespace in self._scopes():
                informer: Informer[StoredInstance | None] = Informer(
                    self.client,
                    INSTANCES,
                    namespace=namespace,
                    transform=self._instance_transform,
                    on_change=self._instance_changed,
                    page_size=self.options.instance_page_size,
                )
                self.instance_informers.append(informer)
                tg.start_soon(informer.run)
            self._started = True
            tg.start_soon(self._resync_loop)

    # -- validation endpoint --------------------------------------------------------------

    async def validate(self, obj: KubeObject) -> str | None:
        """The reconcile-time checks (bounds, version bundle, then the provider's), for /validate."""
        problem = self.options.limits.problem(obj) or version_problem(obj, self.providers)
        if problem is not None:
            return problem
        ctx = ReconcileContext(instance=obj, client=self.client, shared=self.shared, available=self.available())
        try:
            await self.provider.validate(ctx)
        except ValidationFailed as err:
            return err.message
        return None

    def published_schema(self) -> dict[str, Any] | None:
        provider = self.providers.get(self.provider.name)
        return provider.get("spec") if provider else None

    # -- events ---------------------------------------------------------------------------

    def _instance_transform(self, obj: KubeObject) -> StoredInstance | None:
        if not self._ours_or_held(obj):
            return None  # another provider's Instance: keep nothing of it
        try:
            rejected = self.options.limits.size_problem(spec_bytes(obj))
        except RecursionError:
            rejected = "spec nests too deep to read"
        kept = stub(obj) if rejected else obj
        return StoredInstance(reconcile_digest(kept), pack(kept), rejected)

    def _ours_or_held(self, obj: KubeObject) -> bool:
        """Ours, or another provider's now but still holding our finalizer or objects: those we
        release (objects deleted, finalizer off) rather than forget."""
        if provider_ref_name(obj) == self.provider.name:
            return True
        meta = obj.get("metadata") or {}
        if (meta.get("labels") or {}).get(LABEL_PROVIDER) == self.provider.name and holds_finalizer(obj):
            return True
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        return bool(self.index.owned_by(key, str(meta.get("uid", ""))))

    def _instance_changed(self, key: str, old: StoredInstance | None, new: StoredInstance | None) -> None:
        if new is None:
            self.instances.discard(key)
            self.rejected.pop(key, None)
            if old is not None:
                self.actors.notify(key)
            return
        self.instances.put(key, new.packed)
        if new.rejected:
            self.rejected[key] = new.rejected
        else:
            self.rejected.pop(key, None)
        if old is None or old.digest != new.digest:
            self.actors.notify(key)

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
        if new is not None and self.applier.absorbs_echo(new):
            # Our own write coming back: waking the owner would cost every Instance one more
            # reconcile (and a status write racing the event of the one just made) for nothing.
            return
        ref = new or old
        if ref is not None and ref.owner_key in self.instances:
            self.actors.notify(ref.owner_key)

    async def _resync_loop(self) -> None:
        while True:
            await anyio.sleep(self.options.resync_period)
            self.resync()

    def resync(self) -> None:
        for key in list(self.instances):
            self.actors.notify(key)

    def wake_matching(self, predicate: Callable[[KubeObject], bool]) -> int:
        """Wake the actors of every Instance for which `predicate` holds (shared actors use it)."""
        keys = [key for key, obj in self.instances.items() if predicate(obj)]
        if self.reconciler is not None:
            for key in keys:
                self.actors.notify(key)
        return len(keys)

    # -- discovery ------------------------------------------------------------------------

    def resource_not_served(self, resource: Resource) -> None:
        """A kind's CRD went away after discovery: derive nothing of it until discovery sees it
        again (its informer keeps retrying on its own)."""
        self._available.discard(resource)
        self._reported_missing.discard(resource)

    async def _discovery_loop(self, tg: anyio.abc.TaskGroup) -> None:
        while True:
            await anyio.sleep(self.options.discovery_interval)
            if len(self._available) < len(self.owned_resources):
                await self._discover(tg)

    async def _discover(self, tg: anyio.abc.TaskGroup) -> None:
        served: dict[str, set[str]] = {}
        for resource in self.owned_resources:
            if resource in self._available:
                continue
            if resource.api_version not in served:
                try:
                    served[resource.api_version] = await self.client.discover(resource.api_version)
                except (ApiError, OSError) as err:
                    log.warning("discovery failed", group_version=resource.api_version, error=str(err))
                    served[resource.api_version] = set()
            if resource.plural not in served[resource.api_version]:
                if resource not in self._reported_missing:
                    log.info("kind not served, skipping until its CRD appears", resource=str(resource))
                    self._reported_missing.add(resource)
                continue
            self._available.add(resource)
            if resource in self._watched:
                continue
            self._watched.add(resource)
            for namespace in self._scopes():
                informer: Informer[OwnedRef | None] = Informer(
                    self.client,
                    resource,
                    namespace=namespace,
                    label_selector=f"{LABEL_PROVIDER}={self.provider.name}",
                    transform=lambda obj, r=resource: owned_ref(r, obj),  # type: ignore[misc]
                    on_change=self._owned_changed,
                )
                tg.start_soon(informer.run)
                with anyio.move_on_after(10):
                    await informer.synced.wait()

    async def _instance_status_has_connection(self) -> bool:
        """Newer cores add non-secret connection details at status.connection; write them only
        when the installed CRD declares the field (unknown fields would be pruned anyway)."""
        crd = await self.client.get(CRDS, None, "instances.core.openeverest.io")
        if crd is None:
            return False
        for version in crd.get("spec", {}).get("versions", []):
            if version.get("name") == "v1alpha1":
                props = (
                    version.get("schema", {})
                    .get("openAPIV3Schema", {})
                    .get("properties", {})
                    .get("status", {})
                    .get("properties", {})
                )
                return "connection" in props
        return False

    async def _reconcile(self, key: str) -> Outcome:
        assert self.reconciler is not None
        return await self.reconciler(key)
