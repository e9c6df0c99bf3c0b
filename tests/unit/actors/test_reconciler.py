"""The Instance reconciler's branches in-process: the real reconciler, applier, status writer and
finalizer over an in-process API server (tests.support.fake_kube) and the null provider, and the
actor system on the fake clock where the question is when a pass runs again. Milliseconds each.

- a derived name taken by a foreign object: NameClash, Failed, looked at again after NAME_CLASH_RETRY;
- a kind no longer served: the `not_served` callback, and an immediate second pass;
- the API server failing a sync: a Ready Instance keeps its phase;
- an object the API server refuses as invalid (422): Failed, counted as an error, not retried;
- the provider's releases: sent in every pass and on cleanup, one for an object gone skipped;
- a provider waiting in Sync (WaitFor): asked again after its seconds, no error;
- the API server unreachable, or a write withheld (not leading): a failed pass, retried;
- an Instance handed to another provider: released (our objects, finalizer and label go);
- an Instance kept as a stub (over a bound): Failed saying which, nothing applied;
- a conflict on the finalizer patch: a failed pass that writes no status; a status write refused
  as stale: a failed pass, to run again;
- version bundles: an undefined `spec.version` fails with the Go runtime's message and, like any
  bad input, runs once in an hour of fake time; a Provider not known yet is retried with backoff;
- a status the API server refuses (422): the minimal status is written instead;
- what the provider's status() is told this pass wrote, and which phases `poll_not_ready` polls;
- a pass cut short by shutdown: `cancelled`, in its span and the reconciles metric.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from actors.apply.applier import Applier
from actors.apply.write_ledger import WriteLedger
from actors.cache.owned_index import OwnedIndex, owned_ref
from actors.client import ApiError, KubeClient, TransportError, WriteWithheld
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import FINALIZER, LABEL_PROVIDER
from actors.interface import KubeObject, Phase, ReconcileContext, Release, Resource, StatusReport, WaitFor
from actors.manager.options import ManagerOptions
from actors.observe import tracing
from actors.observe.metrics import RuntimeMetrics
from actors.queue.actor_system import Action, ActorSystem
from actors.reconcile import reconciler as reconciler_module
from actors.reconcile.reconciler import NAME_CLASH_RETRY, InstanceReconciler, RuntimeConfig
from actors.status.writer import StatusWriter
from tests.support.clock import FakeClock
from tests.support.fake_kube import FakeKube, api_error
from tests.support.instances import null_instance
from tests.support.null_provider import CONFIGMAPS, NullProvider, StalledProvider
from tests.support.runtime import system_running

NAMESPACE = "ns"
KEY = f"{NAMESPACE}/a"
PROVIDER = NullProvider()
BUNDLES: KubeObject = {"spec": {"versions": [{"name": "1.0", "default": True, "components": {}}]}}


@dataclass
class Runtime:
    """The reconciler wired as the Manager wires it, over a fake API server."""

    kube: FakeKube = field(default_factory=FakeKube)
    providers: dict[str, KubeObject] = field(default_factory=dict)
    not_served: list[Resource] = field(default_factory=list)
    provider: NullProvider = field(default_factory=lambda: PROVIDER)
    poll_not_ready: float | None = None
    reconciler: InstanceReconciler = field(init=False)
    index: OwnedIndex = field(init=False)

    def __post_init__(self) -> None:
        client = cast(KubeClient, self.kube)
        owned = [*PROVIDER.owned_resources(), SECRETS]
        index = self.index = OwnedIndex()
        applier = Applier(
            client,
            index,
            WriteLedger(),
            field_manager=PROVIDER.name,
            provider_name=PROVIDER.name,
            intent_annotation=f"{PROVIDER.annotation_domain}/applied-intent",
            resources=owned,
            unpruned=frozenset({SECRETS}),
        )
        self.reconciler = InstanceReconciler(
            client=client,
            provider=self.provider,
            config=RuntimeConfig(
                provider_name=PROVIDER.name,
                field_manager=PROVIDER.name,
                force_annotation=f"{PROVIDER.annotation_domain}/force-ownership",
                poll_not_ready=self.poll_not_ready,
            ),
            instances=self.kube.view(INSTANCES),
            providers=self.providers,
            index=index,
            applier=applier,
            status=StatusWriter(client, field_manager=PROVIDER.name),
            available=lambda: frozenset(owned),
            metrics=RuntimeMetrics(),
            not_served=self.not_served.append,
        )

    def instance(self, **changes: Any) -> KubeObject:
        """Instance `a`, as stored: created with `changes` to its spec, metadata and status."""
        obj = null_instance("a", NAMESPACE, version=changes.pop("version", None))
        obj["metadata"].update(changes.pop("metadata", {}))
        obj.update(changes)
        return self.kube.put(INSTANCES, obj)

    def status(self) -> dict[str, Any]:
        stored = self.kube.stored(INSTANCES, NAMESPACE, "a")
        assert stored is not None
        status: dict[str, Any] = stored.get("status") or {}
        return status

    def condition(self, type_: str) -> dict[str, Any]:
        return next(c for c in self.status().get("conditions") or [] if c["type"] == type_)

    def status_writes(self) -> int:
        return len(self.kube.writes("replace", INSTANCES, "status"))

    def index_owned(self) -> None:
        """What the owned kinds' watch shows by now: every ConfigMap the fake holds, in the index."""
        intent = f"{PROVIDER.annotation_domain}/applied-intent"
        for obj in self.kube.view(CONFIGMAPS).values():
            self.index.update(None, owned_ref(CONFIGMAPS, obj, intent_annotation=intent, max_bytes=1 << 20))


OURS = {"finalizers": [FINALIZER], "labels": {LABEL_PROVIDER: PROVIDER.name}}


def not_served_answer() -> ApiError:
    """What the API server answers a write to a resource it no longer serves: 404 without a Status."""
    return ApiError(status=404, reason="", message="404 page not found", body={})


async def runs_over(runtime: Runtime, seconds: float, until: Callable[[int], bool]) -> list[float]:
    """The times (on a fake clock) the actor system runs the reconciler for KEY within `seconds`,
    after waiting on the fake clock until `until(runs)` holds."""
    clock = FakeClock()
    times: list[float] = []

    async def reconcile(key: str) -> Action:
        times.append(clock.now())
        return await runtime.reconciler(key)

    options = ManagerOptions()
    system = ActorSystem(
        reconcile,
        limiter=options.rate_limiter(clock),
        max_concurrent=options.max_concurrent,
        idle_timeout=10.0,
        clock=clock,
    )
    async with system_running(system):
        system.notify(KEY)
        await clock.until(lambda: until(len(times)), timeout=seconds)
        await clock.advance(seconds - clock.now())
    return times


async def test_a_first_pass_takes_the_instance_to_ready() -> None:
    """The baseline the other cases depart from: finalizer and label, the ConfigMap, the
    connection Secret, a Ready status."""
    runtime = Runtime()
    runtime.instance()
    assert await runtime.reconciler(KEY) == Action()
    stored = runtime.kube.stored(INSTANCES, NAMESPACE, "a")
    assert stored is not None and stored["metadata"]["finalizers"] == [FINALIZER]
    assert stored["metadata"]["labels"] == {LABEL_PROVIDER: PROVIDER.name}
    assert runtime.kube.stored(CONFIGMAPS, NAMESPACE, "a-cm") is not None
    assert runtime.kube.stored(SECRETS, NAMESPACE, "a-conn") is not None
    assert runtime.status()["phase"] == "Ready"
    assert (runtime.condition("Synced")["status"], runtime.condition("Valid")["status"]) == ("True", "True")


async def test_a_derived_name_taken_by_a_foreign_object_is_a_name_clash() -> None:
    runtime = Runtime()
    runtime.instance()
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other", "uid": "u-9", "controller": True}
    foreign = {"metadata": {"name": "a-cm", "namespace": NAMESPACE, "ownerReferences": [owner]}, "data": {"x": "1"}}
    runtime.kube.put(CONFIGMAPS, foreign)
    assert await runtime.reconciler(KEY) == Action(requeue_after=NAME_CLASH_RETRY)
    assert runtime.status()["phase"] == "Failed"
    assert runtime.status()["message"].startswith(
        f"ConfigMap {NAMESPACE}/a-cm already exists and is controlled by Deployment other; the provider does not adopt"
    )
    synced = runtime.condition("Synced")
    assert (synced["status"], synced["reason"]) == ("False", "NameClash")
    assert runtime.kube.writes("apply", CONFIGMAPS) == []  # never applied to, forced or deleted
    kept = runtime.kube.stored(CONFIGMAPS, NAMESPACE, "a-cm")
    assert kept is not None and kept["data"] == {"x": "1"} and kept["metadata"]["ownerReferences"] == [owner]


async def test_a_name_clash_is_looked_at_again_after_name_clash_retry_not_before() -> None:
    """Foreign objects are not watched, so nothing else says when the name is free."""
    runtime = Runtime()
    runtime.instance()
    runtime.kube.put(CONFIGMAPS, {"metadata": {"name": "a-cm", "namespace": NAMESPACE}})
    times = await runs_over(runtime, 3 * NAME_CLASH_RETRY + 1, lambda runs: runs >= 4)
    assert len(times) == 4
    assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == [NAME_CLASH_RETRY] * 3


async def test_a_kind_no_longer_served_is_reported_and_the_pass_runs_again_at_once() -> None:
    runtime = Runtime()
    runtime.instance(metadata=OURS)
    runtime.kube.fail("apply", not_served_answer(), resource=CONFIGMAPS)
    assert await runtime.reconciler(KEY) == Action(requeue_after=0.0)
    assert runtime.not_served == [CONFIGMAPS]
    assert runtime.status_writes() == 0  # the next pass reports it, in the provider's words


async def test_an_api_error_during_sync_keeps_a_ready_instance_ready() -> None:
    runtime = Runtime()
    runtime.instance(metadata=OURS, status={"phase": "Ready", "message": ""})
    runtime.kube.fail("apply", api_error(500, "InternalError", "etcdserver: leader changed"), resource=CONFIGMAPS)
    assert await runtime.reconciler(KEY) == Action(failed=True)
    assert runtime.status()["phase"] == "Ready"
    assert runtime.status()["message"] == "sync failed: 500 InternalError: etcdserver: leader changed"
    synced = runtime.condition("Synced")
    assert (synced["status"], synced["reason"]) == ("False", "ApplyFailed")


async def test_an_api_error_during_the_first_sync_is_provisioning() -> None:
    """The contrast: with no phase to keep, the same error says Provisioning."""
    runtime = Runtime()
    runtime.instance(metadata=OURS)
    runtime.kube.fail("apply", api_error(500, "InternalError", "etcdserver: leader changed"), resource=CONFIGMAPS)
    assert await runtime.reconciler(KEY) == Action(failed=True)
    assert runtime.status()["phase"] == "Provisioning"


async def test_an_object_the_api_server_refuses_fails_the_instance_and_is_not_retried() -> None:
    """A retry would send the same object and be refused the same way: a terminal error."""
    runtime = Runtime()
    runtime.instance(metadata=OURS, status={"phase": "Ready", "message": ""})
    refusal = api_error(422, "Invalid", 'ConfigMap "a-cm" is invalid: data[not a key!]: Invalid value')
    runtime.kube.fail("apply", refusal, resource=CONFIGMAPS)
    assert await runtime.reconciler(KEY) == Action(terminal=True)
    assert runtime.status()["phase"] == "Failed"
    assert "data[not a key!]: Invalid value" in runtime.status()["message"]
    assert (runtime.condition("Synced")["status"], runtime.condition("Synced")["reason"]) == ("False", "Invalid")
    results = runtime.reconciler.metrics.reconciles
    assert results.labels(result="error")._value.get() == 1
    assert runtime.reconciler.metrics.retries._value.get() == 0


async def test_a_conflict_on_the_finalizer_patch_fails_the_pass_and_writes_no_status() -> None:
    runtime = Runtime()
    runtime.instance()
    runtime.kube.fail("patch", api_error(409, "Conflict", "the object has been modified"), resource=INSTANCES)
    assert await runtime.reconciler(KEY) == Action(failed=True)
    assert runtime.status_writes() == 0
    assert runtime.kube.writes("apply", CONFIGMAPS) == []
    stored = runtime.kube.stored(INSTANCES, NAMESPACE, "a")
    assert stored is not None and "finalizers" not in stored["metadata"]


async def test_a_stale_copy_is_the_same_conflict() -> None:
    """The fake's own precondition, not an injected error: the Instance changed since it was read."""
    runtime = Runtime()
    runtime.instance()
    stale = runtime.kube.view(INSTANCES)[KEY]
    runtime.kube.put(INSTANCES, {**stale, "metadata": {**stale["metadata"], "annotations": {"edited": "yes"}}})
    runtime.reconciler.instances = {KEY: stale}  # the informer has not seen the edit yet
    assert await runtime.reconciler(KEY) == Action(failed=True)
    assert runtime.status_writes() == 0


async def test_a_status_write_on_a_copy_older_than_our_last_status_write_runs_the_pass_again() -> None:
    """The pass before wrote the status; the informer has not delivered that write when the next
    pass reads the Instance. Its status write is refused as stale, and the newer version's event is
    a status write, which wakes no one: the pass must fail so that it runs again (a CI run saw an
    Instance stay Suspending, KServe long stopped, because it counted as done)."""
    runtime = Runtime()
    runtime.instance()
    assert await runtime.reconciler(KEY) == Action()
    ready = runtime.kube.view(INSTANCES)[KEY]
    stale = {**ready, "status": {}}  # what a pass reads when the informer is behind: before the status
    runtime.kube.put(INSTANCES, ready)  # the status write it has not delivered: a newer version
    runtime.reconciler.instances = {KEY: stale}
    writes = runtime.status_writes()
    assert await runtime.reconciler(KEY) == Action(failed=True)
    assert runtime.status_writes() == writes + 1  # tried, refused as stale, to run again


@dataclass
class Releasing(NullProvider):
    """The null provider, asking another controller to let go of ConfigMap `held` (and of `gone`,
    which no longer exists)."""

    def releases(self, ctx: ReconcileContext) -> list[Release]:
        touch = {"metadata": {"annotations": {"touched": "yes"}}}
        return [Release(CONFIGMAPS, NAMESPACE, name, touch) for name in ("gone", "held")]


async def test_releases_are_sent_in_every_pass_and_on_cleanup_one_for_a_gone_object_skipped() -> None:
    runtime = Runtime(provider=Releasing())
    runtime.kube.put(CONFIGMAPS, {"metadata": {"name": "held", "namespace": NAMESPACE}})
    runtime.instance()
    assert await runtime.reconciler(KEY) == Action()
    held = runtime.kube.stored(CONFIGMAPS, NAMESPACE, "held")
    assert held is not None and held["metadata"]["annotations"] == {"touched": "yes"}
    assert [call.name for call in runtime.kube.writes("patch", CONFIGMAPS)] == ["gone", "held"]

    stored = runtime.kube.view(INSTANCES)[KEY]
    deleted = {**stored["metadata"], "deletionTimestamp": "2026-12-07T00:00:00Z"}
    runtime.kube.put(INSTANCES, {**stored, "metadata": deleted})
    assert await runtime.reconciler(KEY) == Action()
    assert [call.name for call in runtime.kube.writes("patch", CONFIGMAPS)] == ["gone", "held", "gone", "held"]
    assert runtime.kube.stored(INSTANCES, NAMESPACE, "a") is None  # cleaned up: the finalizer went


@dataclass
class Waiting(NullProvider):
    """The null provider, whose desired state waits for something for 7 s."""

    async def desired(self, ctx: ReconcileContext, valid: None) -> list[KubeObject]:
        raise WaitFor("the dependency is not there yet", seconds=7.0)


async def test_a_provider_waiting_in_sync_is_asked_again_after_its_seconds_with_no_error() -> None:
    runtime = Runtime(provider=Waiting())
    runtime.instance()
    assert await runtime.reconciler(KEY) == Action(requeue_after=7.0)
    assert runtime.kube.writes("apply", CONFIGMAPS) == []
    assert runtime.reconciler.metrics.reconciles.labels(result="error")._value.get() == 0


@pytest.mark.parametrize(
    "error",
    [TransportError("connection reset by peer"), WriteWithheld("PATCH withheld: lease not renewed")],
    ids=["api-server-unreachable", "write-withheld"],
)
async def test_an_unreachable_api_server_or_a_withheld_write_fails_the_pass_for_a_retry(error: Exception) -> None:
    """Raised by the client in the middle of a pass (here: the finalizer patch): a failed pass,
    retried with backoff, with nothing written after it."""
    runtime = Runtime()
    runtime.instance()
    runtime.kube.fail("patch", error, resource=INSTANCES)
    assert await runtime.reconciler(KEY) == Action(failed=True)
    assert runtime.status_writes() == 0
    assert runtime.kube.writes("apply", CONFIGMAPS) == []
    assert runtime.reconciler.metrics.retries._value.get() == 1


async def test_an_instance_handed_to_another_provider_is_released() -> None:
    """providerRef names another provider: our objects are deleted, our finalizer and label come
    off, and no status is written (the Instance is the other provider's to report on)."""
    runtime = Runtime()
    runtime.instance()
    assert await runtime.reconciler(KEY) == Action()
    assert runtime.kube.stored(CONFIGMAPS, NAMESPACE, "a-cm") is not None
    stored = runtime.kube.view(INSTANCES)[KEY]
    runtime.kube.put(INSTANCES, {**stored, "spec": {**stored["spec"], "providerRef": {"name": "another"}}})
    runtime.index_owned()
    writes = runtime.status_writes()
    assert await runtime.reconciler(KEY) == Action()
    released = runtime.kube.stored(INSTANCES, NAMESPACE, "a")
    assert released is not None
    assert FINALIZER not in (released["metadata"].get("finalizers") or [])
    assert LABEL_PROVIDER not in (released["metadata"].get("labels") or {})
    assert runtime.kube.stored(CONFIGMAPS, NAMESPACE, "a-cm") is None
    assert runtime.status_writes() == writes


async def test_an_instance_kept_as_a_stub_is_failed_with_the_bound_it_broke_and_nothing_applied() -> None:
    """The store keeps an Instance over a bound as a stub, with why: the pass says so and waits."""
    runtime = Runtime()
    runtime.instance()
    why = "spec is 70000 bytes of JSON, over the 65536 the provider reads"
    runtime.reconciler.rejected = {KEY: why}
    assert await runtime.reconciler(KEY) == Action()
    assert (runtime.status()["phase"], runtime.status()["message"]) == ("Failed", why)
    assert runtime.kube.writes("apply", CONFIGMAPS) == []


async def test_an_undefined_version_fails_with_the_go_runtimes_message_and_is_not_retried() -> None:
    runtime = Runtime(providers={PROVIDER.name: BUNDLES})
    runtime.instance(version="2.0")
    assert await runtime.reconciler(KEY) == Action()
    assert runtime.status()["phase"] == "Failed"
    assert runtime.status()["message"] == f'version "2.0" is not defined by provider "{PROVIDER.name}"'
    valid = runtime.condition("Valid")
    assert (valid["status"], valid["reason"]) == ("False", "ValidationFailed")
    assert runtime.kube.writes("apply", CONFIGMAPS) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": "2.0"}, f'version "2.0" is not defined by provider "{PROVIDER.name}"'),
        ({"spec": null_instance("a", NAMESPACE, size="big")["spec"]}, "topology.parameters.size: Input"),
    ],
    ids=["undefined version", "invalid parameter"],
)
async def test_bad_input_runs_once_in_an_hour(changes: dict[str, Any], message: str) -> None:
    """No retry storm: the next spec change (a watch event) or a Provider change runs it again."""
    runtime = Runtime(providers={PROVIDER.name: BUNDLES})
    runtime.instance(**changes)
    times = await runs_over(runtime, 3600.0, lambda runs: runs >= 1)
    assert times == [0.0]
    assert runtime.status()["phase"] == "Failed" and runtime.status()["message"].startswith(message)


async def test_a_version_awaiting_its_provider_is_retried_with_backoff() -> None:
    runtime = Runtime()
    runtime.instance(version="1.0")
    assert await runtime.reconciler(KEY) == Action(failed=True)
    assert runtime.status()["phase"] == "Failed"
    assert runtime.status()["message"] == (
        f'fetching provider for version validation: providers.core.openeverest.io "{PROVIDER.name}" not found'
    )
    # The actor system retries it, each gap longer than the last (the rate limiter's backoff).
    times = await runs_over(runtime, 1.0, lambda runs: runs >= 5)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) >= 5 and all(later > earlier for earlier, later in itertools.pairwise(gaps))


async def test_a_status_the_api_server_refuses_is_replaced_by_the_minimal_one() -> None:
    runtime = Runtime()
    runtime.instance(metadata=OURS)
    refusal = api_error(422, "Invalid", "status.conditions[0].reason: Invalid value")
    runtime.kube.fail("replace", refusal, resource=INSTANCES, subresource="status")
    assert await runtime.reconciler(KEY) == Action()
    assert runtime.status_writes() == 2
    assert runtime.status() == {
        "phase": "Ready",
        "message": " (the full status was rejected by the API server: 422 Invalid: "
        "status.conditions[0].reason: Invalid value)",
    }


@dataclass
class PhaseProvider(NullProvider):
    """The null provider reporting `phase`, and remembering what each status() was told was written."""

    phase: Phase = Phase.READY
    written: list[frozenset[tuple[Resource, str]]] = field(default_factory=list)

    async def status(self, ctx: ReconcileContext, valid: None) -> StatusReport:
        self.written.append(ctx.written)
        return StatusReport(self.phase, "")


async def test_status_is_told_which_objects_the_pass_wrote() -> None:
    provider = PhaseProvider()
    runtime = Runtime(provider=provider)
    runtime.instance()
    await runtime.reconciler(KEY)
    assert runtime.kube.stored(CONFIGMAPS, NAMESPACE, "a-cm") is not None
    runtime.index_owned()  # the watch
    await runtime.reconciler(KEY)  # nothing changed: nothing written
    runtime.kube.put(INSTANCES, {**runtime.kube.stored(INSTANCES, NAMESPACE, "a"), "spec": {  # type: ignore[dict-item]
        **null_instance("a", NAMESPACE)["spec"], "topology": {"type": "null", "parameters": {"size": 2}}}})  # fmt: skip
    await runtime.reconciler(KEY)
    assert provider.written == [frozenset({(CONFIGMAPS, "a-cm")}), frozenset(), frozenset({(CONFIGMAPS, "a-cm")})]


@pytest.mark.parametrize(("phase", "runs"), [(Phase.SUSPENDED, 1), (Phase.READY, 1), (Phase.SUSPENDING, 12)])
async def test_poll_not_ready_leaves_settled_phases_alone(phase: Phase, runs: int) -> None:
    """Ready and Suspended are where an Instance stays; every other phase is looked at again."""
    runtime = Runtime(provider=PhaseProvider(phase=phase), poll_not_ready=5.0)
    runtime.instance(metadata=OURS)
    times = await runs_over(runtime, 60.0, lambda n: n >= 1)
    assert len(times) == runs, times


async def test_a_pass_cut_short_by_shutdown_says_cancelled_in_its_span_and_the_metric(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shutdown mid-pass: the reconcile span carries `reconcile.result` cancelled and the pass
    counts once under that result, not in no series at all."""
    exporter = InMemorySpanExporter()
    spans = TracerProvider()
    spans.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "_exporting", True)
    monkeypatch.setattr(reconciler_module, "tracer", spans.get_tracer("test"))
    provider = StalledProvider()
    runtime = Runtime(provider=provider)
    runtime.instance(metadata=OURS)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(runtime.reconciler, KEY)
        await provider.syncing.wait()
        tasks.cancel_scope.cancel()
    (root,) = [s for s in exporter.get_finished_spans() if s.name == "reconcile"]
    assert root.attributes is not None and root.attributes["reconcile.result"] == "cancelled"
    assert {s.name for s in exporter.get_finished_spans()} >= {"validate", "sync"}
    results = runtime.reconciler.metrics.reconciles
    assert results.labels(result="cancelled")._value.get() == 1
    assert [results.labels(result=r)._value.get() for r in ("success", "error")] == [0, 0]
