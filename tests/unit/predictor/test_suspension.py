"""The predictor's lifecycle: `predictor.replicas: 0` becomes KServe's stop annotation (nothing else
changes), and the InferenceService's `Stopped` condition, its rollout and a change this pass sent
become Suspending, Suspended, Resuming and Updating."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.interface import KubeObject, Phase, StatusReport
from provider.model.catalog import Catalogs
from provider.model.kinds import INFERENCE_SERVICE
from provider.topologies.lifecycle import CHANGE_POLL
from provider.topologies.predictor import PredictorTopology
from provider.topologies.protocol import StatusInputs
from provider.topologies.suspension import STOP_ANNOTATION
from tests.support.instances import as_model, predictor_instance, predictor_parameters as params
from tests.support.kserve_objects import ISVC_READY_CONDITIONS, isvc, isvc_condition as cond

TOPOLOGY = PredictorTopology()
ADDRESS = "http://iris-predictor.models.svc.cluster.local"
KEY = (INFERENCE_SERVICE, "iris")
SERVING = isvc(conditions=ISVC_READY_CONDITIONS, address=ADDRESS)


def rendered(component: dict[str, Any], parameters: dict[str, Any] | None = None, live: Any = None) -> KubeObject:
    inst = as_model(predictor_instance(parameters=parameters, component=component))
    (obj,) = TOPOLOGY.desired(inst, TOPOLOGY.validate(inst, Catalogs()), frozenset(), lambda r, n: live)
    return obj


def report(
    obj: KubeObject | None, *, phase: str | None = None, replicas: int = 1, changed: bool = False
) -> StatusReport:
    body = predictor_instance(component={"replicas": replicas})
    if phase is not None:
        body["status"] = {"phase": phase}
    inst = as_model(body)
    observed = {} if obj is None else {KEY: obj}
    context = StatusInputs(written=frozenset({KEY}) if changed else frozenset())
    return TOPOLOGY.status(inst, TOPOLOGY.validate(inst, Catalogs()), observed, context)


def annotated(obj: KubeObject) -> KubeObject:
    out = copy.deepcopy(obj)
    out["metadata"]["annotations"] = {STOP_ANNOTATION: "true"}
    return out


def stopped() -> KubeObject:
    """What KServe 0.20 leaves: every status cleared but the predictor's Stopped and `Stopped=True`."""
    return annotated(
        isvc(
            conditions=[
                cond("PredictorReady", "False", "Stopped", "Inference service is stopped"),
                cond("Stopped", "True"),
            ]
        )
    )


# -- what is applied --------------------------------------------------------------------------------


def test_replicas_zero_is_the_stop_annotation() -> None:
    obj = rendered({"replicas": 0})
    assert obj["metadata"]["annotations"] == {
        "serving.kserve.io/deploymentMode": "Standard",
        STOP_ANNOTATION: "true",
    }
    assert "minReplicas" not in obj["spec"]["predictor"]  # created stopped: nothing stands yet


def test_nothing_but_the_stop_annotation_changes() -> None:
    serving = rendered({"replicas": 2}, params(maxReplicas=4))
    live = {"spec": {"predictor": {"minReplicas": 2}}}
    suspended = rendered({"replicas": 0}, params(maxReplicas=4), live=live)
    assert suspended["metadata"]["annotations"].pop(STOP_ANNOTATION) == "true"
    assert suspended == serving


def test_min_replicas_the_instance_sets_stay_while_suspended() -> None:
    obj = rendered({"replicas": 0}, params(minReplicas=3), live={"spec": {"predictor": {"minReplicas": 1}}})
    assert obj["spec"]["predictor"]["minReplicas"] == 3


# -- what status says -------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["Ready", "Provisioning", None])
def test_suspending_then_suspended(phase: str | None) -> None:
    suspending = report(annotated(SERVING), phase=phase, replicas=0, changed=True)
    assert (suspending.phase, suspending.message) == (
        Phase.SUSPENDING,
        "Waiting for KServe to stop the InferenceService",
    )
    suspended = report(stopped(), phase=phase, replicas=0)
    assert suspended.phase is Phase.SUSPENDED
    assert suspended.message.startswith("predictor replicas is 0, so KServe stopped the InferenceService")
    assert suspended.connection is None
    assert {c.type: c.status for c in suspended.conditions}["KServeStopped"] == "True"
    assert report(None, replicas=0).phase is Phase.SUSPENDING


def test_resuming_then_ready() -> None:
    # The pass that takes the annotation off still sees KServe's Stopped=True.
    unannotated = copy.deepcopy(stopped())
    del unannotated["metadata"]["annotations"]
    first = report(unannotated, phase="Suspended", changed=True)
    assert (first.phase, first.message) == (
        Phase.RESUMING,
        "KServe still reports the InferenceService stopped",
    )
    unavailable = cond("PredictorReady", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum …")
    pending = isvc(conditions=[unavailable, cond("Stopped", "False")])
    assert report(pending, phase="Resuming").phase is Phase.RESUMING
    assert report(SERVING, phase="Resuming").phase is Phase.READY


def test_a_change_of_a_ready_instance_is_updating_until_the_rollout_completes() -> None:
    first = report(SERVING, phase="Ready", changed=True)
    assert (first.phase, first.requeue_after) == (Phase.UPDATING, CHANGE_POLL)
    assert (
        first.message == "Waiting for KServe to reconcile the changed InferenceService; the previous generation serves"
    )
    assert first.connection is not None and first.connection.uri == ADDRESS
    rolling = isvc(
        conditions=[
            cond("IngressReady", "True"),
            cond("PredictorReady", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            cond("Ready", "True"),
        ],
        address=ADDRESS,
    )
    during = report(rolling, phase="Updating")
    assert (during.phase, during.message) == (
        Phase.UPDATING,
        "KServe rolls out the InferenceService: the predictor Deployment still replaces its pods "
        "(MinimumReplicasAvailable: Deployment has minimum availability.)",
    )
    done = copy.deepcopy(rolling)
    done["status"]["conditions"][1].update(
        reason="NewReplicaSetAvailable", message="ReplicaSet has successfully progressed."
    )
    assert report(done, phase="Updating").phase is Phase.READY
    # A Ready Instance the HPA scales, without a change of ours, stays Ready.
    assert report(rolling, phase="Ready").phase is Phase.READY


def test_a_changed_spec_kserve_cannot_serve_is_failed_once_kserve_looked() -> None:
    failing = isvc(
        model_status={
            "transitionStatus": "InvalidSpec",
            "lastFailureInfo": {"reason": "NoSupportingRuntime", "message": "No runtime found"},
        }
    )
    assert report(failing, phase="Updating").phase is Phase.FAILED
    # Right after a change, the failure of the spec before it is not taken for the new one.
    waiting = report(failing, phase="Failed", changed=True)
    assert (waiting.phase, waiting.requeue_after) == (Phase.PROVISIONING, CHANGE_POLL)
