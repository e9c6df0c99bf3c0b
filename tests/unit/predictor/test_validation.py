"""Every validation rule of the predictor topology, with its exact message."""

from __future__ import annotations

from typing import Any

import pytest

from actors.interface import ValidationFailed
from provider.model.catalog import Catalogs
from provider.topologies.predictor import PredictorTopology
from tests.support.instances import SKLEARN_URI, as_model, predictor_instance, predictor_parameters as params

TOPOLOGY = PredictorTopology()


def passes(parameters: dict[str, Any] | None = None, **kwargs: Any) -> None:
    TOPOLOGY.validate(as_model(predictor_instance(parameters=parameters, **kwargs)), Catalogs())


def fails(parameters: dict[str, Any] | None = None, **kwargs: Any) -> str:
    with pytest.raises(ValidationFailed) as err:
        passes(parameters, **kwargs)
    return err.value.message


def test_valid_instance_passes() -> None:
    passes(params(runtime="kserve-sklearnserver", minReplicas=0))


def test_missing_component() -> None:
    assert fails(with_component=False) == 'the "predictor" component is required for the "predictor" topology'


@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_model_format(value: str | None) -> None:
    raw = params(modelFormat=None)
    if value is not None:
        raw["modelFormat"] = value
    assert fails(raw) == "predictor.parameters.modelFormat is required"


@pytest.mark.parametrize("value", [None, "", "  "])
def test_missing_storage_uri(value: str | None) -> None:
    raw = params(storageURI=None)
    if value is not None:
        raw["storageURI"] = value
    assert fails(raw) == "predictor.parameters.storageURI is required"


def test_empty_parameters_name_model_format_first() -> None:
    assert fails({}) == "predictor.parameters.modelFormat is required | predictor.parameters.storageURI is required"


def test_model_format_checked_before_storage_uri() -> None:
    assert fails({"storageURI": ""}) == (
        "predictor.parameters.modelFormat is required | predictor.parameters.storageURI is required"
    )


def test_negative_min_replicas() -> None:
    assert fails(params(minReplicas=-1)) == "predictor.parameters.minReplicas must not be negative"


def test_negative_max_replicas() -> None:
    assert fails(params(maxReplicas=-2)) == "predictor.parameters.maxReplicas must not be negative"


def test_negative_component_replicas() -> None:
    assert fails(params(), component={"replicas": -1}) == "predictor replicas must not be negative"


def test_min_greater_than_max() -> None:
    assert (
        fails(params(minReplicas=5, maxReplicas=3))
        == "predictor.parameters.maxReplicas (3) must be greater than or equal to minReplicas (5)"
    )


def test_component_replicas_greater_than_max() -> None:
    assert (
        fails(params(maxReplicas=2), component={"replicas": 4})
        == "predictor.parameters.maxReplicas (2) must be greater than or equal to predictor replicas (4)"
    )


def test_min_replicas_overrides_replicas_in_the_max_check() -> None:
    passes(params(minReplicas=1, maxReplicas=2), component={"replicas": 4})


def test_max_zero_means_unset_and_passes() -> None:
    passes(params(minReplicas=2, maxReplicas=0))


def test_min_equal_max_passes() -> None:
    passes(params(minReplicas=3, maxReplicas=3))


@pytest.mark.parametrize(
    ("runtime", "shown"),
    [("Kserve-SKLearn", "'Kserve-SKLearn'"), ("my_runtime", "'my_runtime'"), ("-x", "'-x'"), ("a..b", "'a..b'")],
)
def test_runtime_name_format(runtime: str, shown: str) -> None:
    assert fails(params(runtime=runtime)) == (
        f"predictor.parameters.runtime: {shown} is not a valid ServingRuntime name (a lowercase RFC 1123 "
        "subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
    )


def test_runtime_name_too_long() -> None:
    assert fails(params(runtime="a" * 254)) == "predictor.parameters.runtime: String should have at most 253 characters"


@pytest.mark.parametrize("runtime", ["kserve-sklearnserver", "kserve-mlserver", "team.runtime-1"])
def test_runtime_name_valid(runtime: str) -> None:
    passes(params(runtime=runtime))


def test_model_format_uppercase_rejected() -> None:
    assert fails(params(modelFormat="SKLearn")) == (
        "predictor.parameters.modelFormat: 'SKLearn' is not a valid model format name (lowercase letters, "
        "digits, '-', '_' and '.'; e.g. sklearn, xgboost, lightgbm, pytorch)"
    )


@pytest.mark.parametrize("fmt", ["sklearn", "xgboost", "huggingface", "my-custom_format.v2"])
def test_model_format_any_lowercase_name_allowed(fmt: str) -> None:
    # A custom ServingRuntime may declare any format; a missing runtime is reported via status.
    passes(params(modelFormat=fmt))


def test_runtime_version_must_be_an_image_tag() -> None:
    assert fails(params(runtimeVersion="1.5 beta")) == (
        "predictor.parameters.runtimeVersion: '1.5 beta' is not a valid image tag (letters, digits, '_', "
        "'.' and '-', at most 128 characters, not starting with '.' or '-')"
    )


def test_storage_uri_with_whitespace() -> None:
    assert (
        fails(params(storageURI=SKLEARN_URI + "\n"))
        == f"predictor.parameters.storageURI: {SKLEARN_URI + chr(10)!r} must not contain whitespace"
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("minReplicas", "1", "predictor.parameters.minReplicas: Input should be a valid integer"),
        ("minReplicas", True, "predictor.parameters.minReplicas: Input should be a valid integer"),
        ("minReplicas", 1.5, "predictor.parameters.minReplicas: Input should be a valid integer"),
        ("maxReplicas", "3", "predictor.parameters.maxReplicas: Input should be a valid integer"),
        ("modelFormat", 7, "predictor.parameters.modelFormat: Input should be a valid string"),
        ("storageURI", ["gs://a"], "predictor.parameters.storageURI: Input should be a valid string"),
        ("runtime", 1, "predictor.parameters.runtime: Input should be a valid string"),
        ("runtimeVersion", 1.1, "predictor.parameters.runtimeVersion: Input should be a valid string"),
        (
            "minReplicas",
            2**31,
            "predictor.parameters.minReplicas: Input should be less than or equal to 2147483647",
        ),
    ],
)
def test_wrong_types(key: str, value: Any, message: str) -> None:
    assert fails(params(**{key: value})) == message


def test_unknown_parameter() -> None:
    assert fails(params(modelName="x")) == "predictor.parameters.modelName: Extra inputs are not permitted"


def test_keys_match_case_insensitively_like_go() -> None:
    raw = {"modelformat": "sklearn", "storageUri": SKLEARN_URI, "MINREPLICAS": 1}
    passes(raw)


def test_same_parameter_twice_in_different_case() -> None:
    raw = params(storageUri="s3://b/m")
    assert fails(raw) == "predictor.parameters.storageURI and storageUri set the same parameter; keep one"


def test_null_parameter_is_unset() -> None:
    passes(params(runtime=None) | {"runtime": None, "maxReplicas": None})


def test_go_rule_order_min_replicas_negative_before_type_errors() -> None:
    assert fails(params(minReplicas=-1, runtime=5)) == (
        "predictor.parameters.minReplicas must not be negative | "
        "predictor.parameters.runtime: Input should be a valid string"
    )


def test_every_problem_is_reported_once_in_rule_order() -> None:
    message = fails(
        params(modelFormat="Bad Format!", bogus=1, maxReplicas=1, minReplicas=3),
        component={"replicas": -1, "resources": {"limits": {"cpu": "lots"}}},
    )
    assert message.split(" | ") == [
        "predictor.parameters.modelFormat: 'Bad Format!' is not a valid model format name (lowercase letters, "
        "digits, '-', '_' and '.'; e.g. sklearn, xgboost, lightgbm, pytorch)",
        "predictor.parameters.bogus: Extra inputs are not permitted",
        "predictor replicas must not be negative",
        "predictor.resources.limits.cpu: 'lots' is not a valid quantity (e.g. 500m, 1, 2Gi)",
    ]


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (
            {"limits": {"cpu": "lots"}},
            "predictor.resources.limits.cpu: 'lots' is not a valid quantity (e.g. 500m, 1, 2Gi)",
        ),
        (
            {"requests": {"memory": "2 Gi"}},
            "predictor.resources.requests.memory: '2 Gi' is not a valid quantity (e.g. 500m, 1, 2Gi)",
        ),
        ({"limits": {"cpu": -1}}, "predictor.resources.limits.cpu: -1 must not be negative"),
        ({"limits": {"cpu": "-1"}}, "predictor.resources.limits.cpu: -1 must not be negative"),
        (
            {"limits": {"cpu": "1e2.5"}},
            "predictor.resources.limits.cpu: '1e2.5' is not a valid quantity (e.g. 500m, 1, 2Gi)",
        ),
        (
            {"limits": {"cpu": float("nan")}},
            "predictor.resources.limits.cpu: nan is not a valid quantity (e.g. 500m, 1, 2Gi)",
        ),
        (
            {"limits": {"memory": "1" * 65}},
            "predictor.resources.limits.memory: a quantity has at most 64 characters (e.g. 500m, 1, 2Gi)",
        ),
        ({"limit": {"cpu": "1"}}, "predictor.resources.limit: Extra inputs are not permitted"),
        ({"limits": ["cpu"]}, "predictor.resources.limits: Input should be a valid dictionary"),
    ],
)
def test_resources(resources: dict[str, Any], message: str) -> None:
    assert fails(params(), component={"resources": resources}) == message


@pytest.mark.parametrize(
    "scaling",
    [{"scaleMetric": "cpu"}, {"scaleMetric": "memory", "scaleTarget": 70}, {"scaleTarget": 60}, {"scaleMetric": ""}],
)
def test_how_to_scale_passes_with_a_range(scaling: dict[str, Any]) -> None:
    passes(params(minReplicas=1, maxReplicas=3, **scaling))


@pytest.mark.parametrize(
    ("bounds", "said"),
    [
        ({}, "maxReplicas (unset) is not above minReplicas (1)"),
        ({"minReplicas": 2, "maxReplicas": 2}, "maxReplicas (2) is not above minReplicas (2)"),
        ({"minReplicas": 0, "maxReplicas": 1}, "maxReplicas (1) is not above minReplicas (1)"),  # KServe keeps one
    ],
)
def test_how_to_scale_needs_a_range_above_min_replicas(bounds: dict[str, Any], said: str) -> None:
    assert fails(params(scaleMetric="cpu", **bounds)) == (
        f"predictor.parameters.scaleMetric says how KServe's autoscaler scales, but {said}: "
        "set maxReplicas above minReplicas"
    )


def test_scaling_on_memory_needs_a_target() -> None:
    assert fails(params(scaleMetric="memory", maxReplicas=3)) == (
        "predictor.parameters.scaleTarget is required with scaleMetric memory: KServe has no default for it"
    )


@pytest.mark.parametrize(
    ("scaling", "message"),
    [
        ({"scaleMetric": "gpu"}, "predictor.parameters.scaleMetric: Input should be 'cpu' or 'memory'"),
        ({"scaleTarget": 0}, "predictor.parameters.scaleTarget: Input should be greater than or equal to 1"),
        ({"scaleTarget": 101}, "predictor.parameters.scaleTarget: Input should be less than or equal to 100"),
    ],
)
def test_how_to_scale_is_a_known_metric_and_a_percentage(scaling: dict[str, Any], message: str) -> None:
    assert fails(params(maxReplicas=3, **scaling)) == message
