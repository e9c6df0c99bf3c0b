"""`spec.components.predictor.parameters` of the `predictor` topology, as a strict pydantic model.

The aliases are the wire names (camelCase, as users write them in the Instance and as the published
JSON schema shows them: `PredictorParameters.model_json_schema(by_alias=True)`).

Requiredness and the negative-replica rules are checked *before* this model, in
`provider.topologies.predictor.validation`, because they must keep the Go provider's exact messages
(`predictor.parameters.modelFormat is required`); the model itself still declares them (required,
`minimum: 0`) so that the published schema tells the UI the same thing.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Model format names of the ClusterServingRuntimes that KServe 0.20's kserve-runtime-configs chart
# installs (sklearn/xgboost/lightgbm servers, MLServer, TorchServe, TF Serving, Triton, PMML,
# Paddle, Hugging Face). A custom (Cluster)ServingRuntime may declare any other name in its
# `supportedModelFormats`, so unknown names are *allowed*; a format no runtime serves is reported
# by KServe at reconcile time and surfaces as a Failed status naming kserve-runtime-configs.
KNOWN_MODEL_FORMATS: Final[tuple[str, ...]] = (
    "sklearn",
    "xgboost",
    "lightgbm",
    "pytorch",
    "tensorflow",
    "onnx",
    "triton",
    "tensorrt",
    "huggingface",
    "pmml",
    "paddle",
    "mlflow",
)

# Lowercase, DNS-1123-label-like, plus `_` and `.` which runtime authors use in format names
# (e.g. `custom_format`). Lowercase only: KServe matches format names as written.
MODEL_FORMAT_PATTERN: Final = r"^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"
MODEL_FORMAT_MAX_LENGTH: Final = 63

# A (Cluster)ServingRuntime is an object name: an RFC 1123 subdomain.
RUNTIME_NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
RUNTIME_NAME_MAX_LENGTH: Final = 253

# KServe puts runtimeVersion into the runtime container's image tag, so it must be a valid tag.
RUNTIME_VERSION_PATTERN: Final = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"


class PredictorParameters(BaseModel):
    """Parameters of the `predictor` component (component type `modelServer`)."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        populate_by_name=True,
        frozen=True,
        title="PredictorParameters",
    )

    model_format: str = Field(
        alias="modelFormat",
        min_length=1,
        max_length=MODEL_FORMAT_MAX_LENGTH,
        description=(
            "Model format, as the ServingRuntimes' supportedModelFormats name it. KServe's "
            "ClusterServingRuntimes know: " + ", ".join(KNOWN_MODEL_FORMATS) + ". A custom "
            "ServingRuntime may declare other names."
        ),
        examples=list(KNOWN_MODEL_FORMATS),
        json_schema_extra={"pattern": MODEL_FORMAT_PATTERN},
    )
    storage_uri: str = Field(
        alias="storageURI",
        min_length=1,
        description=(
            "Where the model is stored, e.g. gs://bucket/path, s3://bucket/path, pvc://claim/path, "
            "hf://org/model, oci://registry/image or https://host/model.joblib."
        ),
        examples=["gs://kfserving-examples/models/sklearn/1.0/model"],
    )
    runtime_version: str | None = Field(
        default=None,
        alias="runtimeVersion",
        description="Image tag of the serving runtime container; the runtime's default when unset.",
        examples=["1.14.0"],
        json_schema_extra={"pattern": RUNTIME_VERSION_PATTERN},
    )
    runtime: str | None = Field(
        default=None,
        max_length=RUNTIME_NAME_MAX_LENGTH,
        description=(
            "Name of the ServingRuntime (Instance namespace) or ClusterServingRuntime to use. "
            "When unset KServe picks one that supports modelFormat."
        ),
        examples=["kserve-sklearnserver"],
        json_schema_extra={"pattern": RUNTIME_NAME_PATTERN},
    )
    min_replicas: int | None = Field(
        default=None,
        alias="minReplicas",
        ge=0,
        le=2**31 - 1,
        description="Minimum replicas for KServe's autoscaler (its Standard mode keeps at least 1 running). "
        "Overrides the component's replicas while the Instance serves; replicas 0 suspends it.",
    )
    max_replicas: int | None = Field(
        default=None,
        alias="maxReplicas",
        ge=0,
        le=2**31 - 1,
        description=("Maximum replicas; at least minReplicas. 0 or unset leaves the upper bound to KServe."),
    )

    scale_metric: Literal["cpu", "memory"] | None = Field(
        default=None,
        alias="scaleMetric",
        description=(
            "What KServe's autoscaler scales the predictor on, between minReplicas and maxReplicas: the pods' "
            "average CPU or memory use, as a percentage of what they request (scaleTarget). cpu when unset."
        ),
        examples=["cpu", "memory"],
    )
    scale_target: int | None = Field(
        default=None,
        alias="scaleTarget",
        ge=1,
        le=100,
        description=(
            "The average use, in percent of the pods' requests, that KServe's autoscaler keeps the predictor's "
            "pods at: more replicas above it, fewer below. KServe's default for cpu is 80; memory needs one."
        ),
        examples=[80],
    )

    @field_validator("scale_metric", mode="before")
    @classmethod
    def _blank_metric_is_unset(cls, value: Any) -> Any:
        # OpenEverest's form posts an untouched optional select as "".
        return None if value == "" else value

    @field_validator("model_format")
    @classmethod
    def _model_format_name(cls, value: str) -> str:
        if not re.fullmatch(MODEL_FORMAT_PATTERN, value):
            raise ValueError(
                f"{value!r} is not a valid model format name (lowercase letters, digits, '-', '_' "
                f"and '.'; e.g. {', '.join(KNOWN_MODEL_FORMATS[:4])})"
            )
        return value

    @field_validator("storage_uri")
    @classmethod
    def _storage_uri_no_whitespace(cls, value: str) -> str:
        # A trailing newline from a YAML block scalar would otherwise reach the storage initializer.
        if any(ch.isspace() for ch in value):
            raise ValueError(f"{value!r} must not contain whitespace")
        return value

    @field_validator("runtime_version")
    @classmethod
    def _runtime_version_tag(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(RUNTIME_VERSION_PATTERN, value):
            raise ValueError(
                f"{value!r} is not a valid image tag (letters, digits, '_', '.' and '-', "
                "at most 128 characters, not starting with '.' or '-')"
            )
        return value

    @field_validator("runtime")
    @classmethod
    def _runtime_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(RUNTIME_NAME_PATTERN, value):
            raise ValueError(
                f"{value!r} is not a valid ServingRuntime name (a lowercase RFC 1123 subdomain: "
                "lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
            )
        return value
