"""The published schema of PredictorParameters (what the UI and the Provider CR show)."""

from __future__ import annotations

from provider.topologies.predictor.params import KNOWN_MODEL_FORMATS, PredictorParameters

SCHEMA = PredictorParameters.model_json_schema(by_alias=True)


def test_wire_names_and_required() -> None:
    assert set(SCHEMA["properties"]) == {
        "modelFormat",
        "storageURI",
        "runtimeVersion",
        "runtime",
        "minReplicas",
        "maxReplicas",
        "scaleMetric",
        "scaleTarget",
    }
    assert SCHEMA["required"] == ["modelFormat", "storageURI"]
    assert SCHEMA["additionalProperties"] is False


def test_every_property_is_described() -> None:
    assert all(prop.get("description") for prop in SCHEMA["properties"].values())


def test_replica_bounds() -> None:
    for key in ("minReplicas", "maxReplicas"):
        (integer,) = [b for b in SCHEMA["properties"][key]["anyOf"] if b.get("type") == "integer"]
        assert integer["minimum"] == 0
        assert integer["maximum"] == 2**31 - 1


def test_model_format_lists_kserve_formats_and_pattern() -> None:
    prop = SCHEMA["properties"]["modelFormat"]
    assert prop["examples"] == list(KNOWN_MODEL_FORMATS)
    assert "pattern" in prop
    assert {"sklearn", "xgboost", "lightgbm", "pytorch", "tensorflow", "onnx", "triton"} <= set(KNOWN_MODEL_FORMATS)
    assert {"huggingface", "pmml", "paddle", "mlflow"} <= set(KNOWN_MODEL_FORMATS)


def test_runtime_pattern_is_a_dns_subdomain() -> None:
    assert SCHEMA["properties"]["runtime"]["pattern"].startswith("^[a-z0-9]")


def test_python_names_populate_too() -> None:
    python_names = {"model_format": "sklearn", "storage_uri": "gs://b/m", "min_replicas": 1}
    params = PredictorParameters.model_validate(python_names)
    assert params.model_dump(by_alias=True, exclude_none=True) == {
        "modelFormat": "sklearn",
        "storageURI": "gs://b/m",
        "minReplicas": 1,
    }
