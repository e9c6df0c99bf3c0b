"""Instance → InferenceService, parameter by parameter."""

from __future__ import annotations

from typing import Any

import pytest

from actors.interface import ValidationFailed
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.model.kinds import INFERENCE_SERVICE
from provider.topologies.predictor import PredictorTopology
from tests.support.instances import SKLEARN_URI, as_model, predictor_instance, predictor_parameters as params

TOPOLOGY = PredictorTopology()


def desired(inst: Instance) -> list[dict[str, Any]]:
    """What a pass applies: the Instance validated, then translated."""
    return TOPOLOGY.desired(inst, TOPOLOGY.validate(inst, Catalogs()), frozenset())


def render(parameters: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    objects = desired(as_model(predictor_instance(parameters=parameters, **kwargs)))
    assert len(objects) == 1
    return objects[0]


def predictor_of(parameters: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    spec: dict[str, Any] = render(parameters, **kwargs)["spec"]["predictor"]
    return spec


def test_worked_example_from_the_go_provider() -> None:
    """kserve-behavior §3.2, plus our pod labels and limits mirrored into requests."""
    obj = render(
        params(minReplicas=1, maxReplicas=3),
        name="test-kserve-predictor",
        component={"replicas": 1, "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}},
    )
    assert obj == {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": "test-kserve-predictor",
            "annotations": {"serving.kserve.io/deploymentMode": "Standard"},
        },
        "spec": {
            "predictor": {
                "labels": {
                    "core.openeverest.io/instance": "test-kserve-predictor",
                    "core.openeverest.io/component": "predictor",
                },
                "minReplicas": 1,
                "maxReplicas": 3,
                "model": {
                    "modelFormat": {"name": "sklearn"},
                    "storageUri": SKLEARN_URI,
                    "resources": {
                        "limits": {"cpu": "1", "memory": "2Gi"},
                        "requests": {"cpu": "1", "memory": "2Gi"},
                    },
                },
            }
        },
    }


def test_no_ownership_metadata() -> None:
    meta = render()["metadata"]
    assert set(meta) == {"name", "annotations"}


def test_resource_matches_the_object() -> None:
    obj = render()
    assert (obj["apiVersion"], obj["kind"]) == (INFERENCE_SERVICE.api_version, INFERENCE_SERVICE.kind)
    assert TOPOLOGY.resources() == (INFERENCE_SERVICE,)
    assert INFERENCE_SERVICE.path("ns", "x") == "/apis/serving.kserve.io/v1beta1/namespaces/ns/inferenceservices/x"


def test_minimal_parameters() -> None:
    assert predictor_of() == {
        "labels": {"core.openeverest.io/instance": "iris", "core.openeverest.io/component": "predictor"},
        "model": {"modelFormat": {"name": "sklearn"}, "storageUri": SKLEARN_URI},
    }


def test_model_format() -> None:
    assert predictor_of(params(modelFormat="xgboost"))["model"]["modelFormat"] == {"name": "xgboost"}


def test_storage_uri_verbatim() -> None:
    uri = "s3://bucket/models/iris?version=2"
    assert predictor_of(params(storageURI=uri))["model"]["storageUri"] == uri


def test_runtime() -> None:
    assert predictor_of(params(runtime="kserve-mlserver"))["model"]["runtime"] == "kserve-mlserver"
    assert "runtime" not in predictor_of()["model"]


def test_runtime_version() -> None:
    assert predictor_of(params(runtimeVersion="1.5.0"))["model"]["runtimeVersion"] == "1.5.0"
    assert "runtimeVersion" not in predictor_of()["model"]


@pytest.mark.parametrize(
    ("parameters", "replicas", "expected"),
    [
        (params(minReplicas=2), None, 2),
        (params(minReplicas=0), None, 0),  # passed on; KServe's HPA keeps at least one pod
        (params(minReplicas=0), 3, 0),  # minReplicas wins over replicas, even 0
        (params(), 3, 3),  # replicas is the fallback
        (params(), None, None),  # omitted
    ],
)
def test_min_replicas(parameters: dict[str, Any], replicas: int | None, expected: int | None) -> None:
    component = {} if replicas is None else {"replicas": replicas}
    assert predictor_of(parameters, component=component).get("minReplicas") == expected


@pytest.mark.parametrize(("value", "expected"), [(5, 5), (0, None), (None, None)])
def test_max_replicas(value: int | None, expected: int | None) -> None:
    # 0 is "unset", as with the Go provider's omitempty int32.
    assert predictor_of(params(maxReplicas=value)).get("maxReplicas") == expected


def test_resources_limits_mirrored_into_requests_explicit_requests_kept() -> None:
    resources = {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}, "requests": {"cpu": "500m"}}
    model = predictor_of(params(), component={"resources": resources})["model"]
    assert model["resources"] == {
        "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
        "requests": {"cpu": "500m", "memory": "4Gi", "nvidia.com/gpu": "1"},
    }


def test_resources_requests_only() -> None:
    model = predictor_of(params(), component={"resources": {"requests": {"cpu": "250m"}}})["model"]
    assert model["resources"] == {"requests": {"cpu": "250m"}}


def test_resources_quantities_are_canonical_strings() -> None:
    resources = {"limits": {"cpu": 0.5, "memory": "2048Mi"}, "requests": {"cpu": 1}}
    model = predictor_of(params(), component={"resources": resources})["model"]
    assert model["resources"] == {"limits": {"cpu": "500m", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}}


def test_resources_claims_passed() -> None:
    model = predictor_of(params(), component={"resources": {"claims": [{"name": "gpu"}]}})["model"]
    assert model["resources"] == {"claims": [{"name": "gpu"}]}


@pytest.mark.parametrize("resources", [None, {}])
def test_no_resources_no_key(resources: dict[str, Any] | None) -> None:
    assert "resources" not in predictor_of(params(), component={"resources": resources})["model"]


def test_ignored_component_fields() -> None:
    """type, version, image and service do not reach the InferenceService (as in the Go provider)."""
    component = {"version": "9.9.9", "image": "evil/image:1", "service": {"serviceType": "LoadBalancer"}}
    assert predictor_of(params(), component=component) == predictor_of()


def test_bundle_version_change_is_a_no_op() -> None:
    """Changing spec.version re-renders the same object: the apply is a no-op, never a recreate."""
    assert render(version="0.20") == render(version="0.21") == render(version=None)


def test_runtime_version_change_only_touches_runtime_version() -> None:
    before = render(params(runtimeVersion="1.4.0"))
    after = render(params(runtimeVersion="1.5.0"))
    before["spec"]["predictor"]["model"]["runtimeVersion"] = "1.5.0"
    assert before == after


def test_case_variant_keys_translate() -> None:
    assert predictor_of({"modelformat": "onnx", "storageUri": "pvc://models/onnx"})["model"] == {
        "modelFormat": {"name": "onnx"},
        "storageUri": "pvc://models/onnx",
    }


def test_desired_validates() -> None:
    with pytest.raises(ValidationFailed):
        render(params(modelFormat=None))


def test_desired_is_pure() -> None:
    inst = as_model(
        predictor_instance(parameters=params(minReplicas=1), component={"resources": {"limits": {"cpu": "1"}}})
    )
    before = inst.model_dump(by_alias=True)
    first = desired(inst)
    first[0]["spec"]["predictor"]["model"]["resources"]["limits"]["cpu"] = "99"
    assert desired(inst) != first
    assert inst.model_dump(by_alias=True) == before


def test_how_to_scale_is_kserves_metric_and_target() -> None:
    """KServe's HPA in Standard mode reads scaleMetric and scaleTarget (ComponentExtensionSpec)."""
    predictor = predictor_of(params(minReplicas=1, maxReplicas=3, scaleMetric="memory", scaleTarget=70))
    assert (predictor["scaleMetric"], predictor["scaleTarget"]) == ("memory", 70)
    unset = predictor_of(params(minReplicas=1, maxReplicas=3, scaleMetric=""))
    assert "scaleMetric" not in unset and "scaleTarget" not in unset
