"""Hand edits of a keyed list entry's key (issue 38): the derived object converges back.

`kubectl edit` of an entry's key (a Service port 8000 -> 6666, an env var or a container renamed)
leaves an entry that server-side apply cannot remove beside the one our next apply restores. The
provider removes it (a guarded JSON patch) and says so in the same FieldTakenBack Event as for any
field taken back; a writer that is not a hand edit gets an ApplyConflict naming the entry and its
manager, never the API server's "Duplicate value", and the force annotation takes the entry out.
One test per kind of list the provider sets: a core type's list keyed by two fields, one of them
defaulted (Service ports by port and protocol), a CRD's list keyed by name inside a keyed entry
(the LLMInferenceService's env), and a list of keyed entries holding lists (its containers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import EVENTS, INSTANCES
from actors.client.resource import Resource
from actors.interface import KubeObject
from provider.model.kinds import LLM_INFERENCE_SERVICE, SERVICE
from provider.model.names import FORCE_OWNERSHIP_ANNOTATION
from tests.support.convergence import condition, kserve_provider, wait_converged
from tests.support.instances import llm_instance
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

LLM = LLM_INFERENCE_SERVICE


async def edit_by_update(
    kube: KubeClient, resource: Resource, namespace: str, name: str, change: Callable[[KubeObject], None], manager: str
) -> None:
    """What `kubectl edit` sends (manager kubectl-edit): a read, then an update of the whole object."""
    live = await kube.get(resource, namespace, name)
    assert live is not None
    change(live)
    await kube.replace(resource, live, field_manager=manager)


async def taken_back_note(kube: KubeClient, namespace: str, name: str, entry: str) -> str:
    async def found() -> str | None:
        items, _ = await kube.list_all(EVENTS, namespace)
        notes = [
            str(e.get("note", ""))
            for e in items
            if e["regarding"]["name"] == name and e["reason"] == "FieldTakenBack" and entry in str(e.get("note", ""))
        ]
        return notes[0] if notes else None

    note: str = await wait_for(found, timeout=60, what=f"a FieldTakenBack Event about {name} naming {entry}")
    return note


async def converged_to(
    kube: KubeClient, resource: Resource, namespace: str, name: str, read: Callable[[KubeObject], Any], wanted: Any
) -> None:
    async def holds() -> bool | NotYet:
        obj = await kube.get(resource, namespace, name)
        seen = read(obj) if obj else None
        return True if seen == wanted else NotYet(seen)

    await wait_for(holds, timeout=60, what=f"{resource} {name} back to {wanted}")


def ports(service: KubeObject) -> list[tuple[str, int]]:
    return [(p["name"], p["port"]) for p in service["spec"]["ports"]]


async def external_ports(kube: KubeClient, namespace: str, name: str) -> list[tuple[str, int]]:
    """A converged LoadBalancer Instance's external Service ports (one, named http)."""
    await kube.create(
        INSTANCES, llm_instance(name, namespace, on_cluster=True, topology={"externalAccess": "LoadBalancer"})
    )
    await wait_converged(kube, namespace, [name])
    service = await kube.get(SERVICE, namespace, f"{name}-external")
    assert service is not None and len(ports(service)) == 1, service
    return ports(service)


def to_6666(service: KubeObject) -> None:
    service["spec"]["ports"][0]["port"] = 6666  # same name: ours beside it is a duplicate


async def test_a_service_port_whose_number_was_edited_is_taken_back(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, kserve_provider(), namespace):
        ours = await external_ports(kube, namespace, "porty")
        await edit_by_update(kube, SERVICE, namespace, "porty-external", to_6666, "kubectl-edit")
        await converged_to(kube, SERVICE, namespace, "porty-external", ports, ours)
        note = await taken_back_note(kube, namespace, "porty", "6666")
        assert "Service porty-external .spec.ports[port=6666,protocol=TCP] (from kubectl-edit)" in note
        await wait_converged(kube, namespace, ["porty"])
        live = await kube.get(INSTANCES, namespace, "porty")
        assert live is not None and live["status"]["phase"] != "Failed"
        assert "Duplicate" not in str(live["status"])


async def test_a_port_another_writer_changed_is_a_conflict_naming_it_until_forced(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, kserve_provider(), namespace):
        ours = await external_ports(kube, namespace, "gitops")
        await edit_by_update(kube, SERVICE, namespace, "gitops-external", to_6666, "gitops-bot")

        async def conflict() -> dict[str, Any] | NotYet:
            synced = condition(await kube.get(INSTANCES, namespace, "gitops"), "Synced")
            return synced if synced and synced["reason"] == "ApplyConflict" else NotYet(synced)

        synced = await wait_for(conflict, timeout=60)
        assert ".spec.ports[port=6666,protocol=TCP]" in synced["message"] and "gitops-bot" in synced["message"]
        assert "Duplicate" not in synced["message"]
        await kube.patch(
            INSTANCES, namespace, "gitops", {"metadata": {"annotations": {FORCE_OWNERSHIP_ANNOTATION: "true"}}}
        )
        await converged_to(kube, SERVICE, namespace, "gitops-external", ports, ours)
        await wait_converged(kube, namespace, ["gitops"])


def env_names(llm: KubeObject) -> list[list[str]]:
    return [[e["name"] for e in c.get("env") or []] for c in llm["spec"]["template"]["containers"]]


def container_names(llm: KubeObject) -> list[str]:
    return [c["name"] for c in llm["spec"]["template"]["containers"]]


async def test_an_env_var_renamed_by_hand_is_taken_back(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    async with running_manager(controlplane, kserve_provider(), namespace):
        # Tracing puts vLLM's OTLP endpoint in the main container's env (a list keyed by name).
        tracing = {"enableTracing": "true", "tracingEndpoint": "http://collector.observability:4317"}
        await kube.create(INSTANCES, llm_instance("envy", namespace, on_cluster=True, topology=tracing))
        await wait_converged(kube, namespace, ["envy"])
        llm = await kube.get(LLM, namespace, "envy")
        assert llm is not None
        ours = env_names(llm)
        assert ours and ours[0], ours

        def rename(obj: KubeObject) -> None:
            obj["spec"]["template"]["containers"][0]["env"][0]["name"] = "RENAMED_BY_HAND"

        await edit_by_update(kube, LLM, namespace, "envy", rename, "kubectl-edit")
        await converged_to(kube, LLM, namespace, "envy", env_names, ours)
        note = await taken_back_note(kube, namespace, "envy", "RENAMED_BY_HAND")
        assert "[name=RENAMED_BY_HAND] (from kubectl-edit)" in note
        await wait_converged(kube, namespace, ["envy"])


async def test_a_container_renamed_by_hand_is_taken_back(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    async with running_manager(controlplane, kserve_provider(), namespace):
        await kube.create(INSTANCES, llm_instance("boxy", namespace, on_cluster=True))
        await wait_converged(kube, namespace, ["boxy"])
        llm = await kube.get(LLM, namespace, "boxy")
        assert llm is not None
        ours = (container_names(llm), env_names(llm))

        def rename(obj: KubeObject) -> None:
            obj["spec"]["template"]["containers"][0]["name"] = "renamed-by-hand"

        await edit_by_update(kube, LLM, namespace, "boxy", rename, "kubectl-edit")
        await converged_to(kube, LLM, namespace, "boxy", lambda o: (container_names(o), env_names(o)), ours)
        note = await taken_back_note(kube, namespace, "boxy", "renamed-by-hand")
        assert ".spec.template.containers[name=renamed-by-hand] (from kubectl-edit)" in note
        await wait_converged(kube, namespace, ["boxy"])
