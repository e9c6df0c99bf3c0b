"""Kubernetes Events on Instances (issue 31): one test per kind of Event a user must know about,
and the aggregation of repeats, on a real API server (events.k8s.io/v1) with the runtime and the
null provider. What `kubectl describe instance` shows is exactly these."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from actors.client import ApiError, KubeClient
from actors.client.known_resources import INSTANCES, PROVIDERS
from actors.interface import KubeObject
from tests.support.events import events_about
from tests.support.instances import null_instance
from tests.support.null_provider import CONFIGMAPS, NullProvider
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration


def with_reason(reason: str) -> Callable[[list[KubeObject]], KubeObject | None]:
    return lambda events: next((e for e in events if e["reason"] == reason), None)


async def event(
    kube: KubeClient, namespace: str, name: str, reason: str, controller: str = "provider-kserve"
) -> KubeObject:
    async def found() -> KubeObject | None:
        return with_reason(reason)(await events_about(kube, namespace, name, controller))

    got: KubeObject = await wait_for(found, timeout=60, what=f"a {reason} Event about {name}")
    return got


async def test_ready_deleted_and_the_reporting_fields(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    async with running_manager(controlplane, NullProvider(), namespace):
        await kube.create(INSTANCES, null_instance("alpha", namespace))
        ready = await event(kube, namespace, "alpha", "Ready")
        assert ready["type"] == "Normal" and ready["action"] == "Status"
        assert ready["reportingInstance"] and ready["regarding"]["kind"] == "Instance"
        await kube.delete(INSTANCES, namespace, "alpha")
        deleted = await event(kube, namespace, "alpha", "Deleted")
        assert "ConfigMap alpha-cm" in deleted["note"] and "Secret alpha-conn" in deleted["note"]
        assert deleted["action"] == "Cleanup"


async def test_validation_failed_and_an_undefined_version_bundle(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    provider_name = f"null-{namespace}"
    await kube.create(
        PROVIDERS,
        {
            "apiVersion": PROVIDERS.api_version,
            "kind": PROVIDERS.kind,
            "metadata": {"name": provider_name},
            "spec": {"versions": [{"name": "1.0", "default": True, "components": {}}]},
        },
    )
    try:
        async with running_manager(controlplane, NullProvider(name=provider_name), namespace):
            bad = null_instance("bad", namespace, size="large")
            bad["spec"]["providerRef"]["name"] = provider_name
            await kube.create(INSTANCES, bad)
            failed = await event(kube, namespace, "bad", "ValidationFailed", provider_name)
            assert failed["type"] == "Warning" and "size" in failed["note"]
            versioned = null_instance("versioned", namespace, version="9.9")
            versioned["spec"]["providerRef"]["name"] = provider_name
            await kube.create(INSTANCES, versioned)
            undefined = await event(kube, namespace, "versioned", "VersionBundleNotDefined", provider_name)
            assert undefined["note"] == f'version "9.9" is not defined by provider "{provider_name}"'
    finally:
        await kube.delete(PROVIDERS, None, provider_name)


async def test_name_clash(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "taken-cm", "namespace": namespace}}
    await kube.create(CONFIGMAPS, foreign)
    async with running_manager(controlplane, NullProvider(), namespace):
        await kube.create(INSTANCES, null_instance("taken", namespace))
        clash = await event(kube, namespace, "taken", "NameClash")
        assert clash["type"] == "Warning" and f"ConfigMap {namespace}/taken-cm already exists" in clash["note"]


async def test_apply_conflict_and_a_field_taken_back(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    async with running_manager(controlplane, NullProvider(), namespace):
        for name in ("co-owned", "edited"):
            await kube.create(INSTANCES, null_instance(name, namespace))
            await event(kube, namespace, name, "Ready")
        # Another controller applies our field, forcing: the provider's next apply conflicts.
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "co-owned-cm", "namespace": namespace}}
        await kube.apply(CONFIGMAPS, {**body, "data": {"size": "7"}}, field_manager="gitops", force=True)
        await kube.patch(INSTANCES, namespace, "co-owned", {"spec": {"topology": {"parameters": {"size": 2}}}})
        conflict = await event(kube, namespace, "co-owned", "ApplyConflict")
        assert "is owned by field manager 'gitops'" in conflict["note"] and ".data.size" in conflict["note"]
        # A hand edit (kubectl edit) of our field: taken back, and said so.
        await edit_by_hand(kube, namespace, "edited-cm", "9")
        taken = await event(kube, namespace, "edited", "FieldTakenBack")
        assert "ConfigMap edited-cm .data.size (from kubectl-edit)" in taken["note"]


async def test_released_on_a_provider_ref_switch(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    async with running_manager(controlplane, NullProvider(), namespace):
        await kube.create(INSTANCES, null_instance("moving", namespace))
        await event(kube, namespace, "moving", "Ready")
        await kube.patch(INSTANCES, namespace, "moving", {"spec": {"providerRef": {"name": "another-provider"}}})
        released = await event(kube, namespace, "moving", "Released")
        assert "'another-provider'" in released["note"]


async def test_repeats_are_one_event_and_a_series_under_a_fighting_writer(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, NullProvider(), namespace, events_flush_interval=1.0):
        await kube.create(INSTANCES, null_instance("fought", namespace))
        await event(kube, namespace, "fought", "Ready")
        edits = 0
        until = time.monotonic() + 15
        while time.monotonic() < until:  # a hand edit every 50 ms
            edits += await edit_by_hand(kube, namespace, "fought-cm", str(edits % 5 + 10))
            await anyio.sleep(0.05)

        async def series_flushed() -> tuple[list[KubeObject], int] | NotYet:
            taken = [e for e in await events_about(kube, namespace, "fought") if e["reason"] == "FieldTakenBack"]
            count = sum((e.get("series") or {}).get("count", 1) for e in taken)
            return (taken, count) if count >= 2 else NotYet(taken)

        # The recorder flushes the series every second: its count on the API server.
        taken, count = await wait_for(series_flushed, what="FieldTakenBack's series counted")
        everything = await events_about(kube, namespace, "fought")
        print(f"{edits} hand edits; {len(everything)} Events about the Instance, FieldTakenBack seen {count} times")
        assert len(taken) == 1 and count >= 2
        assert len(everything) <= 5


async def edit_by_hand(kube: KubeClient, namespace: str, name: str, size: str) -> int:
    """What `kubectl edit` writes: a read and an update of the whole object; 1 when it landed."""
    live = await kube.get(CONFIGMAPS, namespace, name)
    assert live is not None
    live["data"] = {**(live.get("data") or {}), "size": size}
    try:
        await kube.replace(CONFIGMAPS, live, field_manager="kubectl-edit")
    except ApiError as err:
        if not err.conflict:
            raise
        return 0
    return 1
