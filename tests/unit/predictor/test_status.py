"""InferenceService status → Instance status."""

from __future__ import annotations

import pytest

from actors.interface import Condition, ConnectionDetails, Phase, StatusReport
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.model.kinds import INFERENCE_SERVICE
from provider.topologies.predictor import PredictorTopology
from provider.topologies.predictor.status import connection_details, predictor_status
from provider.topologies.protocol import Observed, StatusInputs
from tests.support.instances import as_model, predictor_instance, predictor_parameters as params
from tests.support.kserve_objects import ISVC_READY_CONDITIONS as READY_CONDITIONS, isvc, isvc_condition as cond

TOPOLOGY = PredictorTopology()
ADDRESS = "http://iris-predictor.models.svc.cluster.local"

NO_RUNTIME = {
    "transitionStatus": "InvalidSpec",
    "states": {"activeModelState": "", "targetModelState": "FailedToLoad"},
    "lastFailureInfo": {
        "reason": "NoSupportingRuntime",
        "message": "No runtime found to support specified framework/version",
    },
}


def status_of(inst: Instance, observed: Observed) -> StatusReport:
    """The status mapping of a validated Instance, as a pass runs it."""
    return TOPOLOGY.status(inst, TOPOLOGY.validate(inst, Catalogs()), observed, StatusInputs())


def test_no_inference_service_yet() -> None:
    report = status_of(as_model(predictor_instance()), {})
    assert report.phase is Phase.PROVISIONING
    assert report.message == "Waiting for InferenceService"
    assert report.conditions == ()
    assert report.requeue_after is None  # no poll: the InferenceService is watched


def test_handler_looks_up_the_inference_service_by_instance_name() -> None:
    observed = {(INFERENCE_SERVICE, "iris"): isvc(conditions=READY_CONDITIONS, address=ADDRESS)}
    assert status_of(as_model(predictor_instance()), observed).phase is Phase.READY
    other = {(INFERENCE_SERVICE, "other"): isvc(name="other", conditions=READY_CONDITIONS)}
    assert status_of(as_model(predictor_instance()), other).phase is Phase.PROVISIONING


def test_ready_with_cluster_address() -> None:
    report = predictor_status(isvc(conditions=READY_CONDITIONS, address=ADDRESS, url="http://iris-models.example.com"))
    assert report.phase is Phase.READY
    assert report.message == ""
    assert report.requeue_after is None
    assert report.connection == ConnectionDetails(
        type="kserve",
        provider="provider-kserve",
        host="iris-predictor.models.svc.cluster.local",
        port="80",
        uri=ADDRESS,
    )


def test_ready_falls_back_to_status_url() -> None:
    report = predictor_status(isvc(conditions=READY_CONDITIONS, url="https://iris-models.example.com"))
    assert report.connection is not None
    assert (report.connection.host, report.connection.port) == ("iris-models.example.com", "443")


def test_ready_without_any_address_has_no_details() -> None:
    report = predictor_status(isvc(conditions=READY_CONDITIONS))
    assert report.phase is Phase.READY
    assert report.connection is None


def test_kserve_conditions_passed_through_with_prefix() -> None:
    report = predictor_status(isvc(conditions=READY_CONDITIONS, address=ADDRESS))
    assert list(report.conditions) == [
        Condition("KServeIngressReady", "True", "IngressReady"),
        Condition("KServePredictorReady", "True", "PredictorReady"),
        Condition("KServeReady", "True", "Ready"),
    ]


def test_not_ready_uses_kserve_message() -> None:
    conditions = [
        cond("PredictorReady", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
        cond("Ready", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
    ]
    report = predictor_status(isvc(conditions=conditions))
    assert report.phase is Phase.PROVISIONING
    assert report.message == "Deployment does not have minimum availability."
    assert report.requeue_after is None  # no poll: the InferenceService is watched
    assert (
        Condition(
            "KServePredictorReady",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
        in report.conditions
    )


def test_not_ready_falls_back_to_reason_then_default() -> None:
    assert predictor_status(isvc(conditions=[cond("Ready", "Unknown", "Progressing")])).message == "Progressing"
    assert predictor_status(isvc(conditions=[cond("Ready", "Unknown")])).message == "InferenceService is being created"
    assert predictor_status(isvc()).message == "InferenceService is being created"


def test_no_supporting_runtime_is_failed_and_says_what_to_do() -> None:
    report = predictor_status(isvc(model_status=NO_RUNTIME, conditions=[cond("Ready", "Unknown")]))
    assert report.phase is Phase.FAILED
    assert report.message == (
        'no ServingRuntime supports model format "sklearn" (KServe: No runtime found to support specified '
        "framework/version); install KServe's ClusterServingRuntimes (the kserve-runtime-configs chart), "
        "or name a ServingRuntime that serves it in predictor.parameters.runtime"
    )
    # Still polled: installing the runtimes heals it without an edit of the Instance.
    assert report.requeue_after is None  # no poll: the InferenceService is watched


def test_named_runtime_does_not_support_format() -> None:
    status = {
        "transitionStatus": "InvalidSpec",
        "lastFailureInfo": {
            "reason": "NoSupportingRuntime",
            "message": "Specified runtime does not support specified framework/version",
        },
    }
    report = predictor_status(isvc(model_status=status, runtime="kserve-tensorflow-serving"))
    assert report.phase is Phase.FAILED
    assert report.message == (
        'ServingRuntime "kserve-tensorflow-serving" does not support model format "sklearn" (KServe: Specified '
        "runtime does not support specified framework/version); pick a runtime that lists it, or unset "
        "predictor.parameters.runtime to let KServe choose"
    )


def test_unknown_runtime_name() -> None:
    status = {
        "transitionStatus": "InvalidSpec",
        "lastFailureInfo": {"reason": "RuntimeNotRecognized", "message": "Waiting for runtime to become available"},
    }
    report = predictor_status(isvc(model_status=status, runtime="my-runtime"))
    assert report.phase is Phase.FAILED
    assert report.message == (
        'no ServingRuntime or ClusterServingRuntime named "my-runtime" (KServe: Waiting for runtime to become '
        "available); create it, install KServe's ClusterServingRuntimes (the kserve-runtime-configs chart), "
        "or fix predictor.parameters.runtime"
    )


def test_disabled_runtime() -> None:
    status = {
        "transitionStatus": "InvalidSpec",
        "lastFailureInfo": {"reason": "RuntimeDisabled", "message": "Specified runtime is disabled"},
    }
    report = predictor_status(isvc(model_status=status, runtime="kserve-mlserver"))
    assert report.message == (
        'ServingRuntime "kserve-mlserver" is disabled (KServe: Specified runtime is disabled); enable it or '
        "choose another runtime"
    )


def test_invalid_predictor_spec() -> None:
    status = {
        "transitionStatus": "InvalidSpec",
        "lastFailureInfo": {
            "reason": "InvalidPredictorSpec",
            "message": "no container configuration found in selected serving runtime",
        },
    }
    report = predictor_status(isvc(model_status=status))
    assert report.phase is Phase.FAILED
    assert report.message == (
        "KServe rejected the predictor (KServe: no container configuration found in selected serving runtime)"
    )


def test_model_load_failed() -> None:
    status = {
        "transitionStatus": "BlockedByFailedLoad",
        "lastFailureInfo": {"reason": "ModelLoadFailed", "exitCode": 1},
    }
    report = predictor_status(isvc(model_status=status))
    assert report.phase is Phase.FAILED
    assert report.message == (
        'the model from "gs://kfserving-examples/models/sklearn/1.0/model" failed to load (exit code 1); '
        "check predictor.parameters.storageURI"
    )


@pytest.mark.parametrize("transition", ["UpToDate", "InProgress", ""])
def test_stale_failure_info_is_ignored(transition: str) -> None:
    """KServe keeps lastFailureInfo after recovery; only an invalid/blocked transition counts."""
    status = dict(NO_RUNTIME, transitionStatus=transition)
    report = predictor_status(isvc(model_status=status, conditions=[cond("Ready", "Unknown", "Progressing")]))
    assert report.phase is Phase.PROVISIONING


def test_ready_wins_over_failure_info() -> None:
    report = predictor_status(isvc(model_status=NO_RUNTIME, conditions=READY_CONDITIONS, address=ADDRESS))
    assert report.phase is Phase.READY


def test_unknown_failure_reason_stays_provisioning() -> None:
    status = {"transitionStatus": "BlockedByFailedLoad", "lastFailureInfo": {"reason": "RuntimeUnhealthy"}}
    assert predictor_status(isvc(model_status=status)).phase is Phase.PROVISIONING


@pytest.mark.parametrize(
    ("raw", "status", "reason"),
    [
        # Without a reason from KServe: what the condition itself says, no filler.
        ("", "True", "RoutesReady"),
        ("", "False", "NotRoutesReady"),
        ("", "Unknown", "Unknown"),
        ("ProgressDeadlineExceeded", "False", "ProgressDeadlineExceeded"),
        ("predictor-container: NewReplicaSetAvailable", "True", "PredictorContainerNewReplicaSetAvailable"),
        ("PredictorReady not ready", "Unknown", "PredictorReadyNotReady"),
        ("1 bad", "False", "Bad"),
    ],
)
def test_condition_reasons_are_valid_metav1_reasons(raw: str, status: str, reason: str) -> None:
    report = predictor_status(isvc(conditions=[cond("RoutesReady", status, raw)]))
    assert report.conditions[0] == Condition("KServeRoutesReady", status, reason)


def test_running_service_is_not_stopped_rather_than_not_ready() -> None:
    """KServe writes `Stopped=False` without a reason on every running InferenceService."""
    report = predictor_status(isvc(conditions=[{"type": "Stopped", "status": "False", "severity": "Info"}]))
    assert list(report.conditions) == [Condition("KServeStopped", "False", "NotStopped")]


def test_odd_condition_status_and_type() -> None:
    report = predictor_status(isvc(conditions=[{"type": "Stopped", "status": "Maybe"}, {"status": "True"}]))
    assert list(report.conditions) == [Condition("KServeStopped", "Unknown", "Unknown")]


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("http://iris-predictor.models.svc.cluster.local", "iris-predictor.models.svc.cluster.local", "80"),
        ("http://iris-predictor.models.svc.cluster.local:8080", "iris-predictor.models.svc.cluster.local", "8080"),
        ("https://iris.example.com/v1/models/iris", "iris.example.com", "443"),
        ("http://[fd00::1]:8080", "fd00::1", "8080"),
    ],
)
def test_connection_details(url: str, host: str, port: str) -> None:
    details = connection_details(url)
    assert details is not None
    assert (details.host, details.port, details.uri, details.type) == (host, port, url, "kserve")


@pytest.mark.parametrize("url", ["not a url", "http://host:notaport", "/relative/path"])
def test_connection_details_rejects_garbage(url: str) -> None:
    assert connection_details(url) is None


def test_status_does_not_depend_on_parameters() -> None:
    observed = {(INFERENCE_SERVICE, "iris"): isvc(model_status=NO_RUNTIME)}
    a = status_of(as_model(predictor_instance(parameters=params(runtime="x"))), observed)
    b = status_of(as_model(predictor_instance()), observed)
    assert a == b
