"""Entries a hand edit left in our keyed lists: found from managedFields, removed by a guarded patch."""

from __future__ import annotations

import json
from typing import Any

from actors.apply.stray_entries import removal_patch, stray_entries

OURS = "provider-kserve"


def key(**values: Any) -> str:
    return "k:" + json.dumps(values, separators=(",", ":"))


def managed(manager: str, operation: str, fields: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    entry = {"manager": manager, "operation": operation, "fieldsType": "FieldsV1", "fieldsV1": fields}
    return {**entry, "subresource": subresource} if subresource else entry


def port(number: int, name: str = "http") -> dict[str, Any]:
    return {"name": name, "port": number, "protocol": "TCP", "targetPort": 8000}


def port_fields(number: int) -> dict[str, Any]:
    return {key(port=number, protocol="TCP"): {".": {}, "f:name": {}, "f:port": {}, "f:targetPort": {}}}


def service(ports: list[dict[str, Any]], *managers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "v-external", "namespace": "ns", "managedFields": list(managers)},
        "spec": {"ports": ports, "type": "LoadBalancer"},
    }


DESIRED: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "v-external", "namespace": "ns"},
    "spec": {"ports": [{"name": "http", "port": 8000, "targetPort": 8000}], "type": "LoadBalancer"},
}


def test_a_port_whose_key_kubectl_edit_changed_is_stray() -> None:
    live = service(
        [port(6666), port(8000)],
        managed(OURS, "Apply", {"f:spec": {"f:ports": port_fields(8000), "f:type": {}}}),
        managed("kubectl-edit", "Update", {"f:spec": {"f:ports": port_fields(6666)}}),
    )
    [stray] = stray_entries(live, DESIRED, OURS)
    assert stray.field == ".spec.ports[port=6666,protocol=TCP]"
    assert stray.hand_edit and stray.managers == "kubectl-edit"
    assert stray.pointer == ("spec", "ports", 0)
    # Ours is there already (the apply went through): only the stray one goes.
    assert removal_patch([stray], live, DESIRED) == [
        {"op": "test", "path": "/spec/ports/0", "value": port(6666)},
        {"op": "remove", "path": "/spec/ports/0"},
    ]


def test_the_only_port_renumbered_is_replaced_by_ours_in_one_patch() -> None:
    """The API server refused our apply (two ports named http): the object still has only the
    editor's port, and a patch removing it alone would leave a Service without ports (refused too)."""
    live = service(
        [port(6666)],
        managed(OURS, "Apply", {"f:spec": {"f:type": {}}}),
        managed("kubectl-edit", "Update", {"f:spec": {"f:ports": port_fields(6666)}}),
    )
    [stray] = stray_entries(live, DESIRED, OURS)
    assert removal_patch([stray], live, DESIRED) == [
        {"op": "test", "path": "/spec/ports/0", "value": port(6666)},
        {"op": "remove", "path": "/spec/ports/0"},
        {"op": "add", "path": "/spec/ports/-", "value": DESIRED["spec"]["ports"][0]},
    ]


def test_our_own_patchs_hold_goes_once_our_apply_lets_the_entry_go() -> None:
    """The patch above holds our entry by update until the apply holds it too; when the Instance
    later wants another port, that hold alone must not keep the old one."""
    held = managed(OURS, "Update", {"f:spec": {"f:ports": port_fields(8000)}})
    live = service([port(8000)], managed(OURS, "Apply", {"f:spec": {"f:ports": port_fields(8000)}}), held)
    assert stray_entries(live, DESIRED, OURS) == []  # applied by us too: ours
    moved = {**DESIRED, "spec": {"ports": [{"name": "http", "port": 9000}], "type": "LoadBalancer"}}
    live = service([port(8000), port(9000)], managed(OURS, "Apply", {"f:spec": {"f:ports": port_fields(9000)}}), held)
    [stray] = stray_entries(live, moved, OURS)
    assert stray.field == ".spec.ports[port=8000,protocol=TCP]" and stray.hand_edit


def test_an_entry_we_want_or_own_is_never_stray() -> None:
    # The edit set a field of our entry (same key): taken back by the apply, not removed.
    live = service(
        [port(8000, name="web")],
        managed(OURS, "Apply", {"f:spec": {"f:ports": port_fields(8000)}}),
        managed("kubectl-edit", "Update", {"f:spec": {"f:ports": {key(port=8000, protocol="TCP"): {"f:name": {}}}}}),
    )
    assert stray_entries(live, DESIRED, OURS) == []
    # A desired entry that leaves the defaulted protocol out still claims port 8000/TCP.
    live = service([port(8000)], managed("kubectl-edit", "Update", {"f:spec": {"f:ports": port_fields(8000)}}))
    assert stray_entries(live, DESIRED, OURS) == []


def test_who_wrote_it_decides_whether_it_is_a_hand_edit() -> None:
    ports = [port(8000), port(9090, name="metrics")]
    by_apply = service(ports, managed("argocd", "Apply", {"f:spec": {"f:ports": port_fields(9090)}}))
    by_update = service(ports, managed("gitops-bot", "Update", {"f:spec": {"f:ports": port_fields(9090)}}))
    by_both = service(
        ports,
        managed("kubectl-edit", "Update", {"f:spec": {"f:ports": port_fields(9090)}}),
        managed("argocd", "Apply", {"f:spec": {"f:ports": port_fields(9090)}}),
    )
    for live in (by_apply, by_update, by_both):
        [stray] = stray_entries(live, DESIRED, OURS)
        assert not stray.hand_edit
    assert stray_entries(by_both, DESIRED, OURS)[0].managers == "argocd, kubectl-edit"


def test_lists_we_do_not_set_and_status_writers_are_not_ours_to_tidy() -> None:
    live = service(
        [port(8000)],
        managed("kubectl-edit", "Update", {"f:spec": {"f:externalIPs": {}, "f:ports": {}}}),
        managed(
            "kube-controller", "Update", {"f:status": {"f:conditions": {key(type="Ready"): {}}}}, subresource="status"
        ),
    )
    live["status"] = {"conditions": [{"type": "Ready"}]}
    desired_status = {**DESIRED, "status": {"conditions": []}}
    assert stray_entries(live, desired_status, OURS) == []
    no_ports = {**DESIRED, "spec": {"type": "LoadBalancer"}}
    live = service([port(6666)], managed("kubectl-edit", "Update", {"f:spec": {"f:ports": port_fields(6666)}}))
    assert stray_entries(live, no_ports, OURS) == []


def container(name: str, env: list[dict[str, str]]) -> dict[str, Any]:
    return {"name": name, "image": "vllm", "env": env}


def test_nested_lists_resolve_through_our_keyed_entries_and_removals_keep_indexes() -> None:
    desired = {"spec": {"template": {"containers": [container("main", [{"name": "A", "value": "1"}])]}}}
    env: dict[str, Any] = {"f:env": {key(name="B"): {".": {}, "f:name": {}, "f:value": {}}, key(name="C"): {".": {}}}}
    live = {
        "metadata": {
            "managedFields": [
                managed(
                    OURS,
                    "Apply",
                    {"f:spec": {"f:template": {"f:containers": {key(name="main"): {"f:env": {key(name="A"): {}}}}}}},
                ),
                managed(
                    "kubectl-edit",
                    "Update",
                    {
                        "f:spec": {
                            "f:template": {
                                "f:containers": {key(name="main"): env, key(name="sidecar"): {".": {}, **env}}
                            }
                        }
                    },
                ),
            ]
        },
        "spec": {
            "template": {
                "containers": [
                    container("sidecar", [{"name": "B", "value": "2"}]),
                    container(
                        "main", [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}, {"name": "C", "value": "3"}]
                    ),
                ]
            }
        },
    }
    strays = stray_entries(live, desired, OURS)
    # The sidecar goes whole (its env with it); main keeps A and loses B and C.
    assert sorted(s.field for s in strays) == [
        ".spec.template.containers[name=main].env[name=B]",
        ".spec.template.containers[name=main].env[name=C]",
        ".spec.template.containers[name=sidecar]",
    ]
    removes = [op["path"] for op in removal_patch(strays, live, desired) if op["op"] == "remove"]
    assert removes == [
        "/spec/template/containers/1/env/2",
        "/spec/template/containers/1/env/0",
        "/spec/template/containers/0",
    ]


def test_pointer_parts_are_escaped() -> None:
    desired = {"metadata": {"annotations": {}}, "spec": {"a/b": {"items": [{"name": "x"}]}}}
    live = {
        "metadata": {
            "managedFields": [
                managed("kubectl-edit", "Update", {"f:spec": {"f:a/b": {"f:items": {key(name="y"): {}}}}})
            ]
        },
        "spec": {"a/b": {"items": [{"name": "x"}, {"name": "y"}]}},
    }
    [stray] = stray_entries(live, desired, OURS)
    assert removal_patch([stray], live, desired)[1] == {"op": "remove", "path": "/spec/a~1b/items/1"}
