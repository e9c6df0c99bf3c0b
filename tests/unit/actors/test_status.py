from __future__ import annotations

from typing import Any

import yaml

from actors.interface import ComponentStatus, Condition, ConnectionDetails, Phase
from actors.status.compose import COMPONENT_FIELDS, MAX_POD_REFS, compose_status, merge_conditions
from actors.status.writer import _component_fields, _status_schema
from plane import crds_dir
from tests.support.instances import bare_instance

CRD = crds_dir() / "openeverest" / "core.openeverest.io_instances.yaml"


def _instance(status: dict[str, object] | None = None, generation: int = 3) -> dict[str, object]:
    obj = bare_instance("i", "ns", uid="u")
    obj["metadata"]["generation"] = generation
    obj["status"] = status or {}
    return obj


def test_transition_time_moves_only_when_status_flips() -> None:
    first = merge_conditions([], [Condition("Ready", "False", "Starting", "a")], 1, now="T1")
    same = merge_conditions(first, [Condition("Ready", "False", "StillStarting", "b")], 2, now="T2")
    flipped = merge_conditions(same, [Condition("Ready", "True", "Up", "")], 2, now="T3")
    assert same[0]["lastTransitionTime"] == "T1"
    assert same[0]["reason"] == "StillStarting" and same[0]["observedGeneration"] == 2
    assert flipped[0]["lastTransitionTime"] == "T3"


def test_complete_pass_drops_unreported_conditions_and_partial_pass_keeps_them() -> None:
    existing = [{"type": "Old", "status": "True", "reason": "X", "message": "", "lastTransitionTime": "T0"}]
    assert [c["type"] for c in merge_conditions(existing, [Condition("New", "True", "Y")], 1)] == ["New", "Old"]
    dropped = merge_conditions(existing, [Condition("New", "True", "Y")], 1, keep_unreported=False)
    assert [c["type"] for c in dropped] == ["New"]


def test_recomposing_an_unchanged_status_is_equal_so_nothing_is_written() -> None:
    details = ConnectionDetails(type="kserve", provider="p", host="h", port="8000", uri="http://h:8000")
    kwargs = {
        "phase": Phase.READY,
        "message": "",
        "conditions": [Condition("KServeReady", "True", "Ready")],
        "complete": True,
        "version": "0.20",
        "connection": details,
        "connection_secret": "i-conn",
        "status_connection_supported": True,
    }
    first = compose_status(_instance(), **kwargs)  # type: ignore[arg-type]
    second = compose_status(_instance(first), **kwargs)  # type: ignore[arg-type]
    assert second == first
    assert first["connection"] == {"host": "h", "port": "8000", "url": "http://h:8000"}
    assert first["connectionSecretRef"] == {"name": "i-conn"}
    types = {c["type"]: c for c in first["conditions"]}
    assert types["ConnectionDetailsReady"]["reason"] == "Available"
    assert types["KServeReady"]["observedGeneration"] == 3


def test_ready_without_details_reports_not_reported() -> None:
    status = compose_status(_instance(), phase=Phase.READY, message="", conditions=[], complete=True)
    cond = status["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("ConnectionDetailsReady", "False", "NotReported")
    assert "connection" not in status


# -- status.components ----------------------------------------------------------------------------

OLD_CORE_FIELDS = frozenset({"podRefs", "ready", "total", "state"})  # release-2.0's CRD: no `name`


def _components(**overrides: object) -> dict[str, object]:
    kwargs: dict[str, object] = {"phase": Phase.READY, "message": "", "conditions": [], "complete": True}
    return compose_status(_instance(), **{**kwargs, **overrides})  # type: ignore[arg-type]


def test_components_are_written_with_the_fields_the_crd_declares() -> None:
    engine = ComponentStatus("llmEngine", ready=1, total=2, state="Starting", pods=("b-pod", "a-pod"))
    old = _components(components=[engine], component_fields=OLD_CORE_FIELDS)
    assert old["components"] == [
        {"podRefs": [{"name": "a-pod"}, {"name": "b-pod"}], "ready": 1, "total": 2, "state": "Starting"}
    ]
    new = _components(components=[engine], component_fields=COMPONENT_FIELDS)
    assert new["components"][0]["name"] == "llmEngine"  # type: ignore[index]


def test_components_are_not_written_where_the_crd_has_none_and_are_bounded() -> None:
    many = ComponentStatus("c", ready=-1, total=2**40, state="x" * 10_000, pods=[f"p{i:03d}" for i in range(200)])
    assert "components" not in _components(components=[many])
    entries: list[dict[str, Any]] = _components(components=[many], component_fields=OLD_CORE_FIELDS)["components"]  # type: ignore[assignment]
    (entry,) = entries
    assert entry["ready"] == 0 and entry["total"] == 2**31 - 1
    assert len(entry["podRefs"]) == MAX_POD_REFS and len(entry["state"]) <= 4096


def test_a_complete_pass_without_components_removes_them_and_a_partial_one_keeps_them() -> None:
    stored = {"components": [{"ready": 1, "total": 1, "state": "Ready"}]}
    kwargs = {"phase": Phase.READY, "message": "", "conditions": [], "component_fields": OLD_CORE_FIELDS}
    assert "components" not in compose_status(_instance(stored), complete=True, **kwargs)  # type: ignore[arg-type]
    kept = compose_status(_instance(stored), complete=False, **kwargs)  # type: ignore[arg-type]
    assert kept["components"] == stored["components"]


def test_the_writer_reads_the_component_fields_of_the_installed_crd() -> None:
    crd = yaml.safe_load(CRD.read_text())
    status = _status_schema(crd)
    assert _component_fields(status) == OLD_CORE_FIELDS


def test_without_details_the_published_connection_stays_like_the_secret() -> None:
    """A suspended Instance reports no details; the address it answers on when resumed stays on
    status, as the `<instance>-conn` Secret does (the contract never deletes that)."""
    connection = {"host": "h", "port": "8000", "url": "http://h:8000"}
    published: dict[str, object] = {"phase": "Ready", "connection": connection}
    status = compose_status(
        _instance(published),
        phase=Phase.SUSPENDED,
        message="Suspended",
        conditions=[],
        complete=True,
        connection_secret="i-conn",
        status_connection_supported=True,
    )
    assert status["phase"] == "Suspended"
    assert status["connection"] == connection
    assert status["connectionSecretRef"] == {"name": "i-conn"}
    cond = next(c for c in status["conditions"] if c["type"] == "ConnectionDetailsReady")
    assert (cond["status"], cond["reason"]) == ("True", "Available")


def test_phases_are_the_instance_crds_and_only_ready_and_suspended_are_settled() -> None:
    crd = yaml.safe_load((crds_dir() / "openeverest" / "core.openeverest.io_instances.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    phase = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["phase"]
    assert [p.value for p in Phase] == phase["enum"]
    assert {p for p in Phase if p.settled} == {Phase.READY, Phase.SUSPENDED}
