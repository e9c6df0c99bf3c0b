"""`provider.inspect.inventory`: the pure part, from an Instance and its objects to the report and its forms.

The API calls (`gather`) run against the real control plane in the conformance tests.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from actors.contract import stamp
from actors.interface import KubeObject
from provider.inspect.inventory import (
    Owner,
    build_report,
    condition_summary,
    field_paths,
    format_table,
    owner_summary,
    owners_of,
    report_document,
)
from provider.kserve import KServeProvider
from provider.model.catalog import Catalogs
from provider.model.names import PROVIDER_NAME
from provider.model.settings import ProviderSettings
from tests.support.instances import INLINE_CONFIG, llm_instance

PROVIDER = KServeProvider(ProviderSettings())
INSTANCE: KubeObject = {
    **llm_instance("chat", "models", engine={"config": INLINE_CONFIG}, topology={"externalAccess": "LoadBalancer"}),
    "status": {
        "phase": "Failed",
        "message": "apply conflict",
        "conditions": [
            {"type": "Valid", "status": "True", "reason": "Validated", "message": ""},
            {"type": "Synced", "status": "False", "reason": "ApplyConflict", "message": ".spec.replicas"},
        ],
    },
}
INSTANCE["metadata"]["managedFields"] = [
    {"manager": PROVIDER_NAME, "operation": "Update", "subresource": "status", "fieldsV1": {"f:status": {}}}
]
EXPECTED = PROVIDER.render(INSTANCE, catalogs=Catalogs())

FIELDS_V1: dict[str, Any] = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:template": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:args": {}}}},
        "f:finalizers": {"v:example.com/hold": {}},
        "f:items": {"i:0": {}},
    },
}


def live(obj: KubeObject, **managers: Any) -> KubeObject:
    """`obj` as the API server stores it for the Instance: stamped, with managedFields."""
    out = stamp(obj, INSTANCE, PROVIDER_NAME)
    out["metadata"]["managedFields"] = [
        {"manager": PROVIDER_NAME, "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        *(
            {"manager": name, "operation": "Update", "time": "2026-01-01T00:00:00Z", "fieldsV1": fields}
            for name, fields in managers.items()
        ),
    ]
    return out


def test_field_paths_flatten_fields_v1_into_readable_leaves() -> None:
    assert field_paths(FIELDS_V1) == [
        ".metadata.labels.app",
        ".spec.replicas",
        '.spec.template.containers[name="main"].image',
        '.spec.template.containers[name="main"].args',
        ".spec.finalizers[=example.com/hold]",
        ".spec.items[0]",
    ]
    assert field_paths({}) == []
    assert field_paths({"f:spec": {".": {}}}) == [".spec"]


def test_owners_keep_manager_operation_subresource_and_fields() -> None:
    obj = live(EXPECTED[0], **{"kubectl-edit": {"f:spec": {"f:replicas": {}}}})
    owners = owners_of(obj)
    assert owners == (
        Owner(PROVIDER_NAME, "Apply", fields=(".spec.replicas",)),
        Owner("kubectl-edit", "Update", time="2026-01-01T00:00:00Z", fields=(".spec.replicas",)),
    )
    assert Owner("kserve", "Update", "status").label() == "kserve (Update/status)"


def test_states_ok_missing_foreign_extra_deleting() -> None:
    config, llmisvc, monitor, service = EXPECTED
    foreign = copy.deepcopy(service)
    foreign["metadata"]["namespace"] = "models"  # same name, but not ours: no labels, no owner
    deleting = live(monitor)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    stale = live({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "chat-model-puller"}})
    namesake = live(config)
    namesake["metadata"]["ownerReferences"][0]["uid"] = "another-instance"
    report = build_report(INSTANCE, EXPECTED, [live(llmisvc), deleting, foreign, stale])
    assert [(o.kind, o.name, o.state) for o in report.objects] == [
        ("LLMInferenceServiceConfig", "chat-config", "missing"),
        ("LLMInferenceService", "chat", "ok"),
        ("PodMonitor", "chat-metrics", "deleting"),
        ("Service", "chat-external", "foreign"),
        ("ServiceAccount", "chat-model-puller", "extra"),
    ]
    # Our labels with another Instance's controller reference is not ours either.
    again = build_report(INSTANCE, EXPECTED[:1], [namesake])
    assert [o.state for o in again.objects] == ["foreign"]


def test_report_carries_instance_status_and_raw_conditions() -> None:
    llmisvc = live(EXPECTED[1])
    llmisvc["status"] = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "waiting"},
            {"type": "PresetsCombined", "status": "True"},
        ]
    }
    report = build_report(INSTANCE, EXPECTED[1:2], [llmisvc], problem=None)
    assert (report.namespace, report.name, report.phase, report.message) == (
        "models",
        "chat",
        "Failed",
        "apply conflict",
    )
    assert [c["type"] for c in report.conditions] == ["Valid", "Synced"]
    assert report.objects[0].conditions == tuple(llmisvc["status"]["conditions"])
    assert (
        condition_summary(report.objects[0].conditions)
        == "Ready=False(MinimumReplicasUnavailable) PresetsCombined=True"
    )
    assert condition_summary(()) == "-"


def test_owner_summary_lists_the_fields_of_other_managers_only() -> None:
    owners = owners_of(live(EXPECTED[1], **{"kubectl-edit": FIELDS_V1}))
    text = owner_summary(owners)
    assert text.startswith(f"{PROVIDER_NAME} (Apply); kubectl-edit (Update): .metadata.labels.app, .spec.replicas")
    assert text.endswith("… 2 more")
    assert owner_summary(owners, fields=False) == f"{PROVIDER_NAME} (Apply); kubectl-edit (Update)"
    assert owner_summary(()) == "-"


def test_table_shows_instance_header_conditions_and_one_row_per_object() -> None:
    objects = [live(EXPECTED[1], **{"kubectl-edit": {"f:spec": {"f:replicas": {}}}})]
    text = format_table(build_report(INSTANCE, EXPECTED, objects))
    lines = text.splitlines()
    assert lines[0] == f"Instance models/chat  uid {INSTANCE['metadata']['uid']}"
    assert lines[1] == "  phase:    Failed  apply conflict"
    assert lines[2] == f"  managers: {PROVIDER_NAME} (Update/status)"
    assert any(line.split() == ["Synced", "False", "ApplyConflict", ".spec.replicas"] for line in lines)
    header = next(i for i, line in enumerate(lines) if line.startswith("KIND"))
    assert lines[header].split() == ["KIND", "NAME", "STATE", "MANAGERS", "CONDITIONS"]
    rows = {line.split()[0]: line for line in lines[header + 1 :]}
    assert set(rows) == {"LLMInferenceServiceConfig", "LLMInferenceService", "PodMonitor", "Service"}
    assert "kubectl-edit (Update): .spec.replicas" in rows["LLMInferenceService"]
    assert rows["PodMonitor"].split()[2] == "missing"


def test_table_says_why_expected_objects_are_unknown() -> None:
    text = format_table(build_report(INSTANCE, [], [], problem="llmEngine.parameters.modelURI is required"))
    assert "  expected objects unknown: llmEngine.parameters.modelURI is required" in text.splitlines()
    assert text.splitlines()[-1] == "no derived objects expected or present"


def test_yaml_document_round_trips_with_every_field() -> None:
    objects = [live(EXPECTED[1], **{"kubectl-edit": {"f:spec": {"f:replicas": {}}}})]
    report = build_report(INSTANCE, EXPECTED[1:2], objects, problem=None)
    doc = yaml.safe_load(yaml.safe_dump(report_document(report)))
    assert doc["instance"]["name"] == "chat" and doc["instance"]["phase"] == "Failed"
    assert doc["instance"]["managedFields"] == [
        {"manager": PROVIDER_NAME, "operation": "Update", "subresource": "status", "fields": [".status"]}
    ]
    (obj,) = doc["objects"]
    assert (obj["kind"], obj["apiVersion"], obj["name"], obj["state"]) == (
        "LLMInferenceService",
        "serving.kserve.io/v1alpha2",
        "chat",
        "ok",
    )
    assert obj["managedFields"][1] == {
        "manager": "kubectl-edit",
        "operation": "Update",
        "time": "2026-01-01T00:00:00Z",
        "fields": [".spec.replicas"],
    }
    failed = report_document(build_report(INSTANCE, [], [], problem="bad"))
    assert failed["instance"]["validation"] == "bad" and failed["objects"] == []
