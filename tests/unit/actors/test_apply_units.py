from __future__ import annotations

from typing import Any

from actors.apply.applier import holds
from actors.apply.conflicts import ApplyConflict, parse_conflicts as _parse_conflicts
from actors.cache.owned_index import OwnedIndex, OwnedRef, owned_ref, projected
from actors.client import ApiError
from actors.client.json_codec import content_hash
from actors.client.known_resources import SECRETS
from actors.contract import controller_reference, is_owned_by, stamp
from actors.interface import Resource
from actors.manager.options import ManagerOptions

CM = Resource("", "v1", "configmaps", "ConfigMap")
INSTANCE = {"metadata": {"name": "i", "namespace": "ns", "uid": "u-1"}}


def test_conflict_names_field_and_manager() -> None:
    err = ApiError(
        409,
        "Conflict",
        "Apply failed with 1 conflict",
        {
            "details": {
                "causes": [
                    {
                        "reason": "FieldManagerConflict",
                        "message": 'conflict with "kubectl-edit" using v1: .data.size',
                        "field": ".data.size",
                    }
                ]
            }
        },
    )
    conflicts = _parse_conflicts(err)
    assert [(c.field, c.manager) for c in conflicts] == [(".data.size", "kubectl-edit")]
    assert str(ApplyConflict("ConfigMap", "x", conflicts)) == (
        "ConfigMap x: .data.size is owned by field manager 'kubectl-edit'"
    )


def test_stamp_derives_only_from_the_instance() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"keep": "me"}}}
    first, second = stamp(obj, INSTANCE, "p"), stamp(obj, INSTANCE, "p")
    assert content_hash(first) == content_hash(second)
    assert first["metadata"]["namespace"] == "ns"
    assert first["metadata"]["labels"]["keep"] == "me"
    assert first["metadata"]["ownerReferences"] == [controller_reference(INSTANCE)]
    assert is_owned_by(first, INSTANCE)
    assert not is_owned_by(first, {"metadata": {"name": "i", "namespace": "ns", "uid": "other"}})
    assert "ownerReferences" not in obj["metadata"]  # the input is not mutated


def ref_of(obj: dict[str, Any], resource: Resource = CM) -> OwnedRef | None:
    """The index entry of `obj` as the manager makes it (its defaults: the runtime's bounds)."""
    return owned_ref(resource, obj, intent_annotation="", max_bytes=ManagerOptions().max_owned_object_bytes)


def test_owned_index_tracks_by_owner_and_uid() -> None:
    index = OwnedIndex()
    a = ref_of(stamp({"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "1"}}, INSTANCE, "p"))
    namesake = ref_of(
        stamp(
            {"kind": "ConfigMap", "metadata": {"name": "b"}},
            {"metadata": {"name": "i", "namespace": "ns", "uid": "old-uid"}},
            "p",
        ),
    )
    assert a is not None and namesake is not None
    index.update(None, a)
    index.update(None, namesake)
    assert [r.name for r in index.owned_by("ns/i", "u-1")] == ["a"]
    assert index.get("ns/i", CM, "a") == a
    index.update(a, None)
    assert index.owned_by("ns/i", "u-1") == []
    assert len(index) == 1


def test_objects_without_an_instance_controller_are_not_indexed() -> None:
    assert ref_of({"metadata": {"name": "x", "ownerReferences": [{"kind": "Deployment"}]}}) is None


def test_holds_compares_what_we_set_and_ignores_what_the_api_server_added() -> None:
    wanted: dict[str, Any] = {"spec": {"ports": [{"port": 80}], "replicas": 1}, "metadata": {"labels": {"a": "b"}}}
    live: dict[str, Any] = {
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "replicas": 1, "clusterIP": "10.0.0.9"},
        "metadata": {"labels": {"a": "b", "extra": "x"}, "uid": "u"},
    }
    assert holds(live, wanted)
    assert not holds({**live, "spec": {**live["spec"], "replicas": 2}}, wanted)  # a value of ours changed
    assert not holds({**live, "spec": {**live["spec"], "ports": []}}, wanted)  # a list of ours changed
    assert not holds({"spec": {"replicas": "1", "ports": [{"port": 80}]}, "metadata": live["metadata"]}, wanted)


def test_a_secret_is_kept_as_digests_of_its_values_and_still_compares_with_what_we_write() -> None:
    secret = stamp(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "i-conn"}, "data": {"uri": "aHR0cA=="}},
        INSTANCE,
        "p",
    )
    ref = ref_of(secret, SECRETS)
    assert ref is not None
    kept = ref.object()
    assert kept["data"]["uri"] != "aHR0cA==" and len(kept["data"]["uri"]) == 32  # a digest, not the value
    assert holds(kept, projected(SECRETS, secret))
    changed = {**secret, "data": {"uri": "b3RoZXI="}}
    assert not holds(kept, projected(SECRETS, changed))


def test_an_object_over_the_bound_is_kept_as_a_stub_of_its_metadata() -> None:
    bulky = stamp(
        {"kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "7"}, "data": {"x": "y" * 300_000}},
        INSTANCE,
        "p",
    )
    ref = ref_of(bulky)
    assert ref is not None and ref.resource_version == "7" and ref.owner_uid == "u-1"
    assert ref.object()["metadata"] == {"name": "a", "namespace": "ns", "resourceVersion": "7"}
    assert len(ref.packed) < 200
    assert not holds(ref.object(), {"data": {"x": "y"}})  # so the next pass applies it whole again
