"""The real runtime exports its spans over OTLP to a real Jaeger (v2, built from its Go module), and
Jaeger's query API gives back the tree of one Instance's reconcile: the root with the Instance's
key, generation and result, a child per step, a child per API write with its verb, kind, name and
HTTP status, and a failed apply marked as an error with the API server's own message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from actors.client.known_resources import INSTANCES
from actors.observe import tracing
from actors.observe.tracing import configure_tracing
from jaeger import Jaeger, attributes
from tests.support.built_tools import built
from tests.support.instances import null_instance
from tests.support.null_provider import RefusedConfigMap, StalledProvider
from tests.support.runtime import running_manager, wait_quiet
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

SERVICE = "provider-kserve-test"


@pytest.fixture(scope="module")
def jaeger() -> Iterator[Jaeger]:
    with Jaeger().start(built("jaeger", "jaeger")) as running:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.otlp_http)
            provider = configure_tracing(SERVICE)
        assert provider is not None
        yield running
        provider.shutdown()
        tracing._exporting = False  # the other tests' runtimes make no spans again


class Tree:
    """The spans of one service as Jaeger returns them, by id."""

    def __init__(self, spans: list[dict[str, Any]]) -> None:
        self.spans = spans
        self.by_id = {s["spanId"]: s for s in spans}

    def children(self, parent: dict[str, Any]) -> list[dict[str, Any]]:
        return [s for s in self.spans if s.get("parentSpanId") == parent["spanId"]]

    def child(self, parent: dict[str, Any], name: str) -> dict[str, Any]:
        (found,) = [s for s in self.children(parent) if s["name"] == name]
        return found

    def roots(self, key: str) -> list[dict[str, Any]]:
        """The reconcile passes of `key`, earliest first (Jaeger returns traces in no set order, and
        a later pass can have the same steps as the one a test means: the first to do the work)."""
        passes = [
            s
            for s in self.spans
            if s["name"] == "reconcile" and not s.get("parentSpanId") and attributes(s).get("instance") == key
        ]
        return sorted(passes, key=lambda s: int(s["startTimeUnixNano"]))


async def spans_of(jaeger: Jaeger, wanted: Any) -> Tree:
    """Flush, then read Jaeger until `wanted(tree)` holds (its batch processor stores within ~0.1 s)."""
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    provider.force_flush()
    tree = Tree([])

    async def stored() -> bool:
        nonlocal tree
        tree = Tree(await anyio.to_thread.run_sync(jaeger.traces, SERVICE))
        return bool(wanted(tree))

    await wait_for(stored, what="the spans in Jaeger", timeout=60)
    return tree


def full_pass(tree: Tree, key: str, steps: set[str]) -> dict[str, Any] | None:
    """The first reconcile of `key` that did the work: its children are at least `steps` and it ran
    to its end. A later pass that the Manager's shutdown cut short can have the same steps; it says
    `reconcile.result` cancelled (test_cancelled_pass_says_so)."""
    for root in tree.roots(key):
        finished = attributes(root).get("reconcile.result") not in (None, "cancelled")
        if finished and {c["name"] for c in tree.children(root)} >= steps:
            return root
    return None


async def phase(kube: Any, namespace: str, name: str) -> str | None:
    obj = await kube.get(INSTANCES, namespace, name)
    return (obj.get("status") or {}).get("phase") if obj else None


async def test_reconcile_tree_of_a_new_instance(controlplane: Any, kube: Any, namespace: str, jaeger: Jaeger) -> None:
    async with running_manager(controlplane, RefusedConfigMap(), namespace) as (manager, _):
        await kube.create(INSTANCES, null_instance("traced", namespace))
        await wait_for(lambda: _is(phase(kube, namespace, "traced"), "Ready"))
        # The pass that wrote Ready goes on (the connection Secret): stopping now would cut it short.
        await wait_quiet(manager)
    key = f"{namespace}/traced"
    tree = await spans_of(jaeger, lambda t: full_pass(t, key, {"validate", "sync", "status"}))
    root = full_pass(tree, key, {"validate", "sync", "status"})
    assert root is not None
    assert attributes(root) == {"instance": key, "instance.generation": 1, "reconcile.result": "success"}

    apply = tree.child(tree.child(root, "sync"), "apply")
    assert attributes(apply) == {
        "k8s.verb": "patch",
        "k8s.kind": "ConfigMap",
        "k8s.name": "traced-cm",
        "http.response.status_code": 201,  # server-side apply that created it
    }
    writes = {s["name"]: attributes(s) for s in tree.children(tree.child(root, "status"))}
    assert writes["status-update"] == {
        "k8s.verb": "update",
        "k8s.kind": "Instance",
        "k8s.name": "traced",
        "http.response.status_code": 200,
    }
    assert writes["apply"]["k8s.name"] == "traced-conn"  # the connection Secret
    # The finalizer's patch came first, in a pass (or step) of its own.
    assert any(
        attributes(s).get("k8s.verb") == "patch" and s["name"] == "finalizer"
        for r in tree.roots(key)
        for s in tree.children(r)
    )


async def test_cleanup_tree_on_deletion(controlplane: Any, kube: Any, namespace: str, jaeger: Jaeger) -> None:
    async def gone() -> bool:
        return await kube.get(INSTANCES, namespace, "deleted") is None

    async with running_manager(controlplane, RefusedConfigMap(), namespace) as (manager, _):
        await kube.create(INSTANCES, null_instance("deleted", namespace))
        await wait_for(lambda: _is(phase(kube, namespace, "deleted"), "Ready"))
        await kube.delete(INSTANCES, namespace, "deleted")
        await wait_for(gone)
        await wait_quiet(manager)  # the pass that removed the finalizer, to its end
    key = f"{namespace}/deleted"
    tree = await spans_of(jaeger, lambda t: full_pass(t, key, {"cleanup", "finalizer"}))
    root = full_pass(tree, key, {"cleanup", "finalizer"})
    assert root is not None and attributes(root)["reconcile.result"] == "success"
    deletes = {attributes(s)["k8s.name"]: attributes(s) for s in tree.children(tree.child(root, "cleanup"))}
    assert deletes["deleted-cm"] == {
        "k8s.verb": "delete",
        "k8s.kind": "ConfigMap",
        "k8s.name": "deleted-cm",
        "http.response.status_code": 200,
    }
    assert attributes(tree.child(root, "finalizer"))["k8s.verb"] == "patch"


async def test_failed_apply_is_an_error_with_the_api_servers_message(
    controlplane: Any, kube: Any, namespace: str, jaeger: Jaeger
) -> None:
    key = f"{namespace}/refused"

    def failed(tree: Tree) -> dict[str, Any] | None:
        """The first failed pass: it also said why on status (the retries find status unchanged)."""
        root = full_pass(tree, key, {"sync", "status-update"})
        return root if root is not None and attributes(root).get("reconcile.result") == "error" else None

    async with running_manager(controlplane, RefusedConfigMap(), namespace):
        await kube.create(INSTANCES, null_instance("refused", namespace, refused=True))
        tree = await spans_of(jaeger, failed)
    root = failed(tree)
    assert root is not None
    sync = tree.child(root, "sync")
    apply = tree.child(sync, "apply")
    assert attributes(apply)["http.response.status_code"] == 422
    assert apply["status"]["code"] in (2, "STATUS_CODE_ERROR")
    # The API server's own words, as the exception the span recorded.
    assert "a valid config key must consist of alphanumeric characters" in apply["status"]["message"]
    (event,) = [e for e in apply.get("events", []) if e["name"] == "exception"]
    assert "not a key!" in attributes(event)["exception.message"]
    assert sync["status"]["code"] in (2, "STATUS_CODE_ERROR")
    # The pass then said why on the Instance's status; the same apply would be refused again, so it
    # is not retried until the Instance changes.
    assert attributes(tree.child(root, "status-update"))["http.response.status_code"] == 200


async def test_cancelled_pass_says_so(controlplane: Any, kube: Any, namespace: str, jaeger: Jaeger) -> None:
    """The Manager stops while a pass waits in Sync: Jaeger has that pass's root with
    `reconcile.result` cancelled, over the steps it got to."""
    key = f"{namespace}/stalled"
    provider = StalledProvider()
    async with running_manager(controlplane, provider, namespace):
        await kube.create(INSTANCES, null_instance("stalled", namespace))
        with anyio.fail_after(60):
            await provider.syncing.wait()

    def cancelled(tree: Tree) -> dict[str, Any] | None:
        roots = [r for r in tree.roots(key) if attributes(r).get("reconcile.result") == "cancelled"]
        return roots[0] if roots else None

    tree = await spans_of(jaeger, cancelled)
    root = cancelled(tree)
    assert root is not None
    assert attributes(root)["instance"] == key
    assert {"validate", "sync"} <= {c["name"] for c in tree.children(root)}


async def _is(value: Any, expected: str) -> bool:
    return bool(await value == expected)
