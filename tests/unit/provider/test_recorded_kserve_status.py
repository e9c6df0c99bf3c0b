"""The status mappers on what KServe 0.20's controllers really write.

Each fixture in fixtures/kserve/ holds an Instance and the InferenceService or LLMInferenceService
KServe made of it, spec and status exactly as KServe wrote them, recorded from the local KServe
stack by dev/scripts/record_kserve_shapes.py (rerun it after a KServe upgrade).
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from actors.interface import Condition, ConnectionDetails, KubeObject, Phase, StatusReport
from provider.model import kinds
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.model.settings import ProviderSettings
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.llm.status import CONFIG_FAILURES
from provider.topologies.predictor import PredictorTopology
from provider.topologies.protocol import StatusInputs, TopologyHandler

FIXTURES = Path(__file__).parents[1] / "fixtures" / "kserve"
PENDING = "Deployment does not have minimum availability."
METAV1_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


@cache
def fixture(name: str) -> tuple[KubeObject, KubeObject]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return data["instance"], data["kserve"]


def report(
    name: str, kserve: KubeObject | None = None, phase: Phase | None = None, replicas: int | None = None
) -> StatusReport:
    """The mapping of fixture `name` (or of `kserve` in its place) for its Instance, whose current
    phase is `phase` (and its serving component's replicas `replicas`, when given)."""
    instance, recorded = fixture(name)
    if phase is not None:
        instance = {**instance, "status": {"phase": phase.value}}
    if replicas is not None:
        instance = copy.deepcopy(instance)
        (component,) = instance["spec"]["components"].values()
        component["replicas"] = replicas
    obj = kserve or recorded
    topology: TopologyHandler[Any] = (
        LlmTopology(ProviderSettings()) if obj["kind"] == "LLMInferenceService" else PredictorTopology()
    )
    resource = kinds.LLM_INFERENCE_SERVICE if obj["kind"] == "LLMInferenceService" else kinds.INFERENCE_SERVICE
    observed = {(resource, obj["metadata"]["name"]): obj}
    parsed = Instance.model_validate(instance)
    return topology.status(parsed, topology.validate(parsed, Catalogs()), observed, StatusInputs())


def condition(result: StatusReport, type_: str) -> Condition:
    return next(c for c in result.conditions if c.type == type_)


def test_every_scenario_is_recorded() -> None:
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert names == sorted(
        [
            "isvc-no-runtime",
            "isvc-pending",
            "isvc-ready",
            "isvc-scaling",
            "isvc-stopped",
            "isvc-unknown-runtime",
            "llmisvc-config-not-found",
            "llmisvc-gateway-routing",
            "llmisvc-pending",
            "llmisvc-ready",
            "llmisvc-stopped",
        ]
    )


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_passed_through_reasons_are_valid_and_never_filler(name: str) -> None:
    """Every KServe condition arrives with a valid metav1 reason; where KServe gave none, the reason
    says what the condition says (`Stopped=False` is `NotStopped`: the service runs)."""
    for cond in report(name).conditions:
        assert METAV1_REASON.fullmatch(cond.reason), cond
        if cond.type.startswith("KServe") and cond.reason.startswith("Not"):
            assert cond.reason == "Not" + cond.type.removeprefix("KServe"), cond


# -- InferenceService ---------------------------------------------------------------------------


def test_isvc_ready_publishes_the_predictor_service() -> None:
    result = report("isvc-ready")
    assert (result.phase, result.message, result.requeue_after) == (Phase.READY, "", None)
    assert result.connection == ConnectionDetails(
        type="kserve",
        provider="provider-kserve",
        host="iris-predictor.models.svc.cluster.local",
        port="80",
        uri="http://iris-predictor.models.svc.cluster.local",
    )
    assert condition(result, "KServeReady") == Condition("KServeReady", "True", "Ready")
    assert condition(result, "KServePredictorReady").reason == "NewReplicaSetAvailable"
    # KServe writes Stopped=False without a reason on every running InferenceService.
    assert condition(result, "KServeStopped") == Condition("KServeStopped", "False", "NotStopped")


def test_isvc_pending_pods_say_why_not_the_ingress() -> None:
    """Ready's reason is "Predictor ingress not created" for as long as the predictor is not ready;
    the predictor's own condition says what is wrong."""
    _, recorded = fixture("isvc-pending")
    ready = next(c for c in recorded["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Predictor ingress not created")
    result = report("isvc-pending")
    assert (result.phase, result.message) == (Phase.PROVISIONING, PENDING)
    assert condition(result, "KServePredictorReady") == Condition(
        "KServePredictorReady", "False", "MinimumReplicasUnavailable", PENDING
    )
    assert condition(result, "KServeReady").reason == "PredictorIngressNotCreated"
    assert result.connection is None


def test_isvc_scaling_up_stays_ready_while_the_model_serves() -> None:
    """The HPA raises the Deployment to a new minReplicas: Kubernetes reports minimum availability
    missing until the new pod is ready, and KServe drops Ready (and the ingress) meanwhile, though
    the model keeps serving. A Ready Instance stays Ready and says so; a new one waits for KServe."""
    _, recorded = fixture("isvc-scaling")
    assert recorded["status"]["modelStatus"]["states"]["activeModelState"] == "Loaded"
    result = report("isvc-scaling", phase=Phase.READY)
    assert result.phase is Phase.READY
    copies = recorded["status"]["modelStatus"]["copies"]["totalCopies"]
    assert result.message == (
        f"Serving from {copies} ready cop{'y' if copies == 1 else 'ies'} while KServe scales the predictor ({PENDING})"
    )
    assert result.connection is not None and result.connection.host == "iris-scale-predictor.models.svc.cluster.local"
    assert condition(result, "KServeReady").status == "False"
    # Not Ready before: KServe's word decides the first Ready.
    for phase in (None, Phase.PROVISIONING):
        first = report("isvc-scaling", phase=phase)
        assert (first.phase, first.message) == (Phase.PROVISIONING, PENDING)


def test_isvc_pending_pods_of_a_ready_instance_without_a_serving_copy_are_provisioning() -> None:
    # The pending fixture has no loaded model: nothing serves, whatever the phase was.
    result = report("isvc-pending", phase=Phase.READY)
    assert (result.phase, result.message) == (Phase.PROVISIONING, PENDING)


def test_isvc_without_a_runtime_for_the_format_fails() -> None:
    result = report("isvc-no-runtime")
    assert result.phase is Phase.FAILED
    assert result.message == (
        'no ServingRuntime supports model format "nosuchformat" (KServe: No runtime found to support specified '
        "framework/version); install KServe's ClusterServingRuntimes (the kserve-runtime-configs chart), "
        "or name a ServingRuntime that serves it in predictor.parameters.runtime"
    )


def test_isvc_with_an_unknown_runtime_fails() -> None:
    result = report("isvc-unknown-runtime")
    assert result.phase is Phase.FAILED
    assert result.message.startswith(
        'no ServingRuntime or ClusterServingRuntime named "no-such-runtime" (KServe: Waiting for runtime to '
        "become available); "
    )


# -- LLMInferenceService ------------------------------------------------------------------------


def test_llmisvc_ready_publishes_the_workload_service() -> None:
    result = report("llmisvc-ready")
    assert (result.phase, result.message) == (Phase.READY, "")
    assert result.connection == ConnectionDetails(
        type="kserve",
        provider="provider-kserve",
        host="chat-kserve-workload-svc.models.svc.cluster.local",
        port="8000",
        uri="http://chat-kserve-workload-svc.models.svc.cluster.local:8000",
    )
    for type_ in ("Ready", "WorkloadsReady", "MainWorkloadReady", "RouterReady", "PresetsCombined"):
        assert condition(result, f"KServe{type_}").status == "True"
        assert condition(result, f"KServe{type_}").reason == type_


def test_llmisvc_edited_spec_waits_for_kserve() -> None:
    _, recorded = fixture("llmisvc-ready")
    edited = copy.deepcopy(recorded)
    edited["metadata"]["generation"] += 1
    waiting = "Waiting for KServe to reconcile the LLMInferenceService (generation 2, observed 1)"
    for phase in (None, Phase.PROVISIONING):
        result = report("llmisvc-ready", edited, phase)
        assert (result.phase, result.message) == (Phase.PROVISIONING, waiting)
    # A Ready (or Updating) Instance being edited is Updating while the previous generation serves.
    for phase in (Phase.READY, Phase.UPDATING):
        result = report("llmisvc-ready", edited, phase)
        assert (result.phase, result.message) == (Phase.UPDATING, f"{waiting}; the previous generation serves")
        assert result.connection is not None and result.connection.port == "8000"
    # Updating too when KServe's last word was not Ready, with that word.
    _, pending = fixture("llmisvc-pending")
    edited = copy.deepcopy(pending)
    edited["metadata"]["generation"] += 1
    result = report("llmisvc-pending", edited, Phase.READY)
    assert (result.phase, result.message) == (Phase.UPDATING, f"{waiting} (it last said: {PENDING})")
    assert result.connection is None


def test_llmisvc_serving_through_a_failed_kserve_update_stays_ready() -> None:
    """Seen while scaling a Ready service: KServe's update of its Deployment lost a conflict, and it
    wrote Ready=False (ReconcileSingleNodeWorkloadError, workload.go) until its next pass, though
    the pod kept serving. The recorded Ready object with the conditions KServe writes then."""
    _, recorded = fixture("llmisvc-ready")
    failed = copy.deepcopy(recorded)
    error = (
        "failed to reconcile main workload: failed to get defaults for v1.Deployment models/chat-kserve: Operation "
        'cannot be fulfilled on deployments.apps "chat-kserve": the object has been modified; please apply your '
        "changes to the latest version and try again"
    )
    for cond in failed["status"]["conditions"]:
        if cond["type"] in ("MainWorkloadReady", "WorkloadsReady", "Ready"):
            cond.update(status="False", reason="ReconcileSingleNodeWorkloadError", message=error)
    assert failed["status"]["workloads"]["primary"]["readyReplicas"] == 1
    result = report("llmisvc-ready", failed, Phase.READY)
    assert result.phase is Phase.READY
    assert result.message == f"Serving from 1 ready replica while KServe reconciles the LLMInferenceService ({error})"
    assert result.connection is not None and result.connection.port == "8000"
    assert condition(result, "KServeReady").reason == "ReconcileSingleNodeWorkloadError"
    # The first Ready is KServe's.
    first = report("llmisvc-ready", failed)
    assert (first.phase, first.message) == (Phase.PROVISIONING, error)


def test_llmisvc_pending_pods_are_provisioning_with_kserves_words() -> None:
    result = report("llmisvc-pending")
    assert (result.phase, result.message) == (Phase.PROVISIONING, PENDING)
    assert condition(result, "KServeMainWorkloadReady") == Condition(
        "KServeMainWorkloadReady", "False", "MinimumReplicasUnavailable", PENDING
    )
    assert condition(result, "KServeRouterReady") == Condition("KServeRouterReady", "True", "RouterReady")


def test_llmisvc_missing_base_ref_fails_naming_it() -> None:
    result = report("llmisvc-config-not-found")
    assert result.phase is Phase.FAILED
    assert result.message.startswith(
        "KServe cannot combine the LLMInferenceService configuration (ConfigNotFound: LLMInferenceServiceConfig "
        '"no-such-config" not found in namespaces [models kserve]); check llmEngine.parameters.baseRefs'
    )
    assert condition(result, "KServePresetsCombined").reason in CONFIG_FAILURES
    # KServe's Ready roll-up is Unknown here: nothing says it is a failure but PresetsCombined.
    assert condition(result, "KServeReady").status == "Unknown"


def test_llmisvc_gateway_routing_without_a_gateway_says_so() -> None:
    result = report("llmisvc-gateway-routing")
    assert result.phase is Phase.PROVISIONING
    assert result.message == "Managed HTTPRoute references non-existent Gateway kserve/kserve-ingress-gateway"
    assert condition(result, "KServeWorkloadsReady").status == "True"
    assert condition(result, "KServeHTTPRoutesReady").reason == "RefsInvalid"


# -- stopped (replicas 0: KServe's stop annotation) ---------------------------------------------------


@pytest.mark.parametrize("name", ["isvc-stopped", "llmisvc-stopped"])
def test_a_stopped_object_is_suspended_and_resuming_once_replicas_are_back(name: str) -> None:
    _, recorded = fixture(name)
    kind = recorded["kind"]
    component = "predictor" if kind == "InferenceService" else "llmEngine"
    for phase in (None, Phase.SUSPENDING, Phase.SUSPENDED):
        result = report(name, phase=phase)
        assert result.phase is Phase.SUSPENDED
        assert result.message.startswith(f"{component} replicas is 0, so KServe stopped the {kind}")
        assert result.connection is None
    # The pass that takes the annotation off still sees what KServe wrote while stopped.
    resumed = copy.deepcopy(recorded)
    del resumed["metadata"]["annotations"]["serving.kserve.io/stop"]
    result = report(name, resumed, Phase.SUSPENDED, replicas=1)
    assert (result.phase, result.message) == (Phase.RESUMING, f"KServe still reports the {kind} stopped")


def test_kserve_reports_a_stopped_inference_service_in_its_conditions() -> None:
    result = report("isvc-stopped")
    assert condition(result, "KServeStopped") == Condition("KServeStopped", "True", "Stopped")
    assert condition(result, "KServePredictorReady").reason == "Stopped"


def test_kserve_reports_a_stopped_llm_inference_service_on_every_part() -> None:
    result = report("llmisvc-stopped")
    for type_ in ("MainWorkloadReady", "WorkloadsReady", "Ready"):
        assert (condition(result, f"KServe{type_}").status, condition(result, f"KServe{type_}").reason) == (
            "False",
            "Stopped",
        )
