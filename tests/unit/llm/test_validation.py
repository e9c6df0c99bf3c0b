"""The llm topology's validation rules ported from the Go provider, with their exact messages (one test or
case per rule)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.llm_topology import GATEWAY_SETTINGS, fails, inputs, passes, settings

# -- Go provider rules, in order (kserve-behavior §1.5) ------------------------------------------


def test_component_is_required() -> None:
    assert fails(with_component=False) == 'the "llmEngine" component is required for the "llm" topology'


def test_component_type_must_be_vllm() -> None:
    message = fails(component={"type": "modelServer"})
    assert message == 'spec.components.llmEngine.type is "modelServer", but the llm topology runs "vllm"'


@pytest.mark.parametrize("uri", [None, "", "   "])
def test_model_uri_is_required(uri: str | None) -> None:
    assert fails({"modelURI": uri}) == "llmEngine.parameters.modelURI is required"


def test_model_uri_required_comes_before_type_errors() -> None:
    assert fails({"modelURI": None, "tensorParallelSize": "x"}) == (
        "llmEngine.parameters.modelURI is required | "
        "llmEngine.parameters.tensorParallelSize: Input should be a valid integer"
    )


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("ftp://host/model", 'unsupported scheme "ftp" (use one of hf://, s3://, gs://, pvc://, oci://)'),
        ("https://host/model", 'unsupported scheme "https" (use one of hf://, s3://, gs://, pvc://, oci://)'),
        ("meta-llama/Llama-3.1-8B", "missing scheme (use one of hf://, s3://, gs://, pvc://, oci://)"),
        ("hf:/org/model", "missing scheme (use one of hf://, s3://, gs://, pvc://, oci://)"),
        ("hf://", 'nothing after "hf://"'),
        ("hf://org/model\n", "must not contain whitespace"),
    ],
)
def test_model_uri_scheme(uri: str, why: str) -> None:
    # Values are quoted like Go's %q: the newline shows as \n and the message stays one line.
    assert fails({"modelURI": uri}) == f"invalid llmEngine.parameters.modelURI {json.dumps(uri)}: {why}"


@pytest.mark.parametrize("uri", ["hf://org/m", "s3://b/m", "gs://b/m", "pvc://claim/m", "oci://reg/img:tag"])
def test_model_uri_supported_schemes(uri: str) -> None:
    passes({"modelURI": uri})


def test_model_uri_wrong_type() -> None:
    assert fails({"modelURI": 5}) == "llmEngine.parameters.modelURI: Input should be a valid string"


def test_negative_replicas() -> None:
    assert fails(component={"replicas": -1}) == "llmEngine replicas must not be negative"


def test_zero_replicas_allowed() -> None:
    passes(component={"replicas": 0})


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ("template: [1", "invalid YAML at line 1, column 13: expected ',' or ']', but got '<stream end>'"),
        ("just a string", "expected a mapping (an LLMInferenceServiceSpec body), got a string"),
        ("- a\n- b", "expected a mapping (an LLMInferenceServiceSpec body), got a list"),
        (
            "replica: 2",
            'unknown field "replica" (LLMInferenceServiceSpec fields: annotations, baseRefs, '
            "kvCacheOffloading, labels, model, parallelism, prefill, replicas, router, scaling, storageInitializer, "
            "template, tracing, worker)",
        ),
        ("replicas: two", "replicas must be an integer, got a string"),
        ("template: []", "template must be a mapping, got a list"),
        ("model: {name: x}", "model.uri is required when model is set (the Instance's modelURI wins anyway)"),
    ],
)
def test_invalid_config(config: str, why: str) -> None:
    assert fails({"config": config}) == f"invalid llmEngine.parameters.config: {why}"


@pytest.mark.parametrize("config", ["", "  \n", "# only a comment\n", {}])
def test_blank_config_is_no_config(config: Any) -> None:
    assert inputs({"config": config}).engine.config_spec() is None


def test_config_as_mapping_is_accepted() -> None:
    llm = inputs({"config": {"replicas": 2}})
    assert llm.engine.config_spec() == {"replicas": 2}


def test_service_type() -> None:
    message = fails(component={"service": {"serviceType": "ExternalName"}})
    assert message == "llmEngine.service.serviceType must be one of ClusterIP, LoadBalancer or NodePort"


def test_external_access_enum() -> None:
    message = fails(topology={"externalAccess": "Ingress"})
    assert message == "externalAccess must be one of ClusterIP, LoadBalancer, NodePort or EnvoyAIGateway"


@pytest.mark.parametrize("topology", [{"externalAccess": "EnvoyAIGateway"}, {"enableAIGateway": "true"}])
def test_ai_gateway_needs_chart(topology: dict[str, Any]) -> None:
    assert fails(topology=topology) == "externalAccess EnvoyAIGateway requires aiGateway.enabled in the provider chart"


def test_external_access_wins_over_legacy_ai_gateway_flag() -> None:
    passes(topology={"externalAccess": "ClusterIP", "enableAIGateway": True})


def test_ai_gateway_needs_gateway_name() -> None:
    message = fails(topology={"externalAccess": "EnvoyAIGateway"}, settings_=settings(ai_gateway_enabled=True))
    assert message == (
        "ai gateway is enabled for the instance but the provider gateway is not configured "
        "(AI_GATEWAY_NAME and AI_GATEWAY_NAMESPACE)"
    )


def test_token_limit_needs_gateway() -> None:
    message = fails(topology={"tokenLimitPerHour": 1000, "externalAccess": "LoadBalancer"})
    assert message == "tokenLimitPerHour requires External access = EnvoyAIGateway"


@pytest.mark.parametrize("limit", [0, -5])
def test_token_limit_positive(limit: int) -> None:
    message = fails(
        topology={"tokenLimitPerHour": limit, "externalAccess": "EnvoyAIGateway"},
        settings_=settings(**GATEWAY_SETTINGS),
    )
    assert message == "tokenLimitPerHour must be greater than zero"


def test_token_limit_quoted_number() -> None:
    message = fails(topology={"tokenLimitPerHour": "1000"})
    assert message == "topology.parameters.tokenLimitPerHour: Input should be a valid integer"
