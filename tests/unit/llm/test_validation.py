"""Every validation rule of the llm topology, with its exact message (one test or case per rule)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.interface import ValidationFailed
from provider.llm.validation import read_llm, validate_llm

from .builders import CATALOG, GATEWAY_SETTINGS, instance, settings


def fails(engine: dict[str, Any] | None = None, *, settings_: Any = None, **kwargs: Any) -> str:
    with pytest.raises(ValidationFailed) as info:
        validate_llm(instance(engine, **kwargs), CATALOG, settings_ or settings())
    return info.value.message


def passes(engine: dict[str, Any] | None = None, *, settings_: Any = None, **kwargs: Any) -> None:
    validate_llm(instance(engine, **kwargs), CATALOG, settings_ or settings())


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
    assert fails({"modelURI": None, "tensorParallelSize": "x"}) == "llmEngine.parameters.modelURI is required"


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
    assert validate_llm(instance({"config": config}), CATALOG, settings()).engine.config_spec() is None


def test_config_as_mapping_is_accepted() -> None:
    llm = validate_llm(instance({"config": {"replicas": 2}}), CATALOG, settings())
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


def test_lora_deployment_enum() -> None:
    message = fails({"loraDeployment": "on"})
    assert message == 'llmEngine.parameters.loraDeployment must be "disabled" or "enabled"'


def test_lora_enabled_needs_a_slot() -> None:
    message = fails({"loraDeployment": "enabled", "loraSlot1": "  "})
    assert message == "llmEngine.parameters.loraDeployment enabled requires at least one adapter slot"


def test_lora_slots_distinct() -> None:
    message = fails({"loraDeployment": "enabled", "loraSlot1": "qwen2.5-0.5b-sft", "loraSlot3": "qwen2.5-0.5b-sft"})
    assert message == 'llmEngine.parameters.loraSlot1 and loraSlot3 both select adapter "qwen2.5-0.5b-sft"'


def test_lora_slot_not_in_catalog() -> None:
    message = fails({"loraDeployment": "enabled", "loraSlot2": "sql-lora"})
    assert message == (
        'llmEngine.parameters.loraSlot2 references unknown adapter "sql-lora" (add it to chart loraAdapters)'
    )


def test_lora_slot_adapter_named_like_base_model() -> None:
    message = fails({"loraDeployment": "enabled", "loraSlot1": "qwen2.5-0.5b-sft", "modelName": "qwen2.5-0.5b-sft"})
    assert message == (
        'llmEngine.parameters.loraSlot1: catalog adapter "qwen2.5-0.5b-sft" has the same name as the base served '
        'model "qwen2.5-0.5b-sft"; set llmEngine.parameters.modelName to another name or choose another adapter'
    )


def adapters(*items: dict[str, Any], **limits: Any) -> dict[str, Any]:
    return {"lora": {"adapters": list(items), **limits}}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"uri": "hf://a/b"}], "llmEngine.parameters.lora.adapters[0].name is required"),
        ([{"name": " ", "uri": "hf://a/b"}], "llmEngine.parameters.lora.adapters[0].name is required"),
        (
            [{"name": "..", "uri": "hf://a/b"}],
            'llmEngine.parameters.lora.adapters[0].name ".." is not a valid adapter name',
        ),
        (
            [{"name": "a/b", "uri": "hf://a/b"}],
            'llmEngine.parameters.lora.adapters[0].name "a/b" is not a valid adapter name '
            '(letters, digits, ".", "_" and "-")',
        ),
        (
            [{"name": "chat", "uri": "hf://a/b"}],
            'llmEngine.parameters.lora.adapters[0].name "chat" must differ from the base served model name "chat"',
        ),
        (
            [{"name": "sql", "uri": "hf://a/b"}, {"name": "sql", "uri": "hf://a/c"}],
            'llmEngine.parameters.lora.adapters[1].name "sql" duplicates adapters[0].name',
        ),
        ([{"name": "sql"}], "llmEngine.parameters.lora.adapters[0].uri is required"),
        (
            [{"name": "sql", "uri": "http://x/y"}],
            'invalid llmEngine.parameters.lora.adapters[0].uri "http://x/y": unsupported scheme "http" '
            "(use one of hf://, s3://, gs://, pvc://, oci://)",
        ),
    ],
)
def test_explicit_adapter_rules(items: list[dict[str, Any]], message: str) -> None:
    assert fails(adapters(*items)) == message


def test_adapter_base_name_is_the_model_name_when_set() -> None:
    message = fails({"modelName": "qwen", **adapters({"name": "qwen", "uri": "hf://a/b"})})
    assert (
        message
        == 'llmEngine.parameters.lora.adapters[0].name "qwen" must differ from the base served model name "qwen"'
    )


@pytest.mark.parametrize("field", ["maxRank", "maxAdapters", "maxCpuAdapters"])
def test_lora_limits_at_least_one_even_without_adapters(field: str) -> None:
    assert fails({"lora": {field: 0}}) == f"llmEngine.parameters.lora.{field} must be at least 1"


@pytest.mark.parametrize("scheme", ["hf", "s3"])
def test_adapters_need_storage_initializer(scheme: str) -> None:
    engine = {"disableStorageInitializer": True, **adapters({"name": "sql", "uri": f"{scheme}://a/b"})}
    assert fails(engine) == (
        f"llmEngine.parameters.lora.adapters[0] uses {scheme}:// which requires the storage initializer; "
        "set disableStorageInitializer to false"
    )


def test_catalog_adapters_need_storage_initializer_naming_the_slot() -> None:
    engine = {"disableStorageInitializer": "true", "loraDeployment": "enabled", "loraSlot1": "qwen2.5-0.5b-sft"}
    assert fails(engine) == (
        "llmEngine.parameters.loraSlot1 uses hf:// which requires the storage initializer; "
        "set disableStorageInitializer to false"
    )


def test_pvc_adapters_without_storage_initializer() -> None:
    passes({"disableStorageInitializer": True, **adapters({"name": "sql", "uri": "pvc://claim/sql"})})


# -- strictness the Go provider lacked (kserve-behavior §10.14, §10.18) ----------------------------


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        ({"tensorParallelSize": "2"}, "llmEngine.parameters.tensorParallelSize: Input should be a valid integer"),
        (
            {"tensorParallelSize": 0},
            "llmEngine.parameters.tensorParallelSize: Input should be greater than or equal to 1",
        ),
        ({"pipelineParallelSize": 1.5}, "llmEngine.parameters.pipelineParallelSize: Input should be a valid integer"),
        ({"dataParallelSize": 0}, "llmEngine.parameters.dataParallelSize: Input should be greater than or equal to 1"),
        (
            {"kvCacheSpaceGi": -(2**31) - 1},
            "llmEngine.parameters.kvCacheSpaceGi: Input should be greater than or equal to -2147483648",
        ),
        ({"kvCacheSpaceGi": "2"}, "llmEngine.parameters.kvCacheSpaceGi: Input should be a valid integer"),
        ({"expertParallel": "sometimes"}, 'llmEngine.parameters.expertParallel: invalid boolean value "sometimes"'),
        (
            {"disableStorageInitializer": 1},
            "llmEngine.parameters.disableStorageInitializer: Input should be a valid boolean",
        ),
        ({"computeProfile": "tpu"}, "llmEngine.parameters.computeProfile: Input should be 'gpu' or 'cpu'"),
        ({"baseRefs": "my-config"}, "llmEngine.parameters.baseRefs: Input should be a valid list"),
        (
            {"baseRefs": ["My_Config"]},
            "llmEngine.parameters.baseRefs.0: String should match pattern "
            "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
        ),
        ({"modelNmae": "x"}, "llmEngine.parameters.modelNmae: Extra inputs are not permitted"),
        (
            {"lora": {"adapters": [{"name": "a", "uri": "hf://a/b", "rank": 8}]}},
            "llmEngine.parameters.lora.adapters.0.rank: Extra inputs are not permitted",
        ),
    ],
)
def test_engine_parameter_types(engine: dict[str, Any], message: str) -> None:
    assert fails(engine) == message


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ({"enablePrefill": "maybe"}, 'topology.parameters.enablePrefill: invalid boolean value "maybe"'),
        ({"enableMetrics": 1}, "topology.parameters.enableMetrics: Input should be a valid boolean"),
        ({"prefillReplicas": -1}, "topology.parameters.prefillReplicas: Input should be greater than or equal to 0"),
        (
            {"externalAccess": 3},
            "topology.parameters.externalAccess: Input should be 'ClusterIP', 'LoadBalancer', "
            "'NodePort' or 'EnvoyAIGateway'",
        ),
        (
            {"enableTracing": True, "tracingEndpoint": "otel-collector:4317"},
            'topology.parameters.tracingEndpoint: "otel-collector:4317" is not an http:// or https:// URL '
            "(e.g. http://otel-collector.observability:4317)",
        ),
        ({"EnablePrefill": True}, "topology.parameters.EnablePrefill: Extra inputs are not permitted"),
    ],
)
def test_topology_parameter_types(topology: dict[str, Any], message: str) -> None:
    assert fails(topology=topology) == message


def test_engine_keys_match_case_insensitively_like_go() -> None:
    llm = validate_llm(
        instance({"modelURI": None, "modeluri": "s3://b/m", "TensorParallelSize": 2}), CATALOG, settings()
    )
    assert (llm.engine.model_uri, llm.engine.tensor_parallel_size) == ("s3://b/m", 2)


def test_same_engine_key_twice_in_different_case() -> None:
    message = fails({"modelName": "a", "modelname": "b"})
    assert message == "llmEngine.parameters.modelName and modelname set the same parameter; keep one"


def test_null_parameters_are_unset() -> None:
    llm = validate_llm(instance({"tensorParallelSize": None}, topology={"enablePrefill": None}), CATALOG, settings())
    assert llm.engine.tensor_parallel_size is None
    assert llm.topology.enable_prefill is False


def test_data_and_pipeline_parallel_are_exclusive() -> None:
    message = fails({"dataParallelSize": 2, "pipelineParallelSize": 2})
    assert message == (
        "llmEngine.parameters.dataParallelSize and pipelineParallelSize are mutually exclusive; set only one"
    )


def test_data_parallel_one_is_a_no_op_next_to_pipeline() -> None:
    passes(
        {"dataParallelSize": 1, "pipelineParallelSize": 2}, component={"resources": {"limits": {"nvidia.com/gpu": 2}}}
    )


def test_resources_quantity() -> None:
    message = fails(component={"resources": {"limits": {"cpu": "four"}}})
    assert message == "llmEngine.resources.limits.cpu: 'four' is not a valid quantity (e.g. 500m, 1, 2Gi)"


def test_resources_unknown_key() -> None:
    message = fails(component={"resources": {"limit": {"cpu": "1"}}})
    assert message == "llmEngine.resources.limit: Extra inputs are not permitted"


def test_fewer_gpus_than_the_parallelism_needs() -> None:
    message = fails(
        {"tensorParallelSize": 2, "dataParallelSize": 2}, component={"resources": {"limits": {"nvidia.com/gpu": "2"}}}
    )
    assert message == (
        "llmEngine.resources.limits.nvidia.com/gpu is 2, but the parallelism needs 4 GPUs per pod "
        "(tensorParallelSize 2 * pipelineParallelSize 1 * dataParallelSize 2)"
    )


def test_gpu_count_is_not_checked_on_cpu() -> None:
    passes(
        {"tensorParallelSize": 2, "computeProfile": "cpu"}, component={"resources": {"limits": {"nvidia.com/gpu": 1}}}
    )


def test_source_range_must_be_ip_or_cidr() -> None:
    message = fails(component={"service": {"loadBalancerService": {"sourceRanges": ["10.0.0.0/8", "office"]}}})
    assert message == 'llmEngine.service.loadBalancerService.sourceRanges[1]: "office" is not an IP address or CIDR'


def test_external_service_name_too_long() -> None:
    name = "a" * 60
    message = fails(name=name, topology={"externalAccess": "NodePort"})
    assert message == (
        f'the NodePort Service would be named "{name}-external", which is not a valid Service name '
        "(at most 63 characters, starting with a letter); use a shorter Instance name"
    )


def test_long_name_is_fine_without_external_service() -> None:
    passes(name="a" * 60)


def test_explicit_adapters_contradict_lora_deployment() -> None:
    message = fails({"loraDeployment": "disabled", **adapters({"name": "sql", "uri": "hf://a/b"})})
    assert message == (
        'llmEngine.parameters.lora.adapters cannot be combined with loraDeployment "disabled"; remove '
        "loraDeployment to serve explicit adapters, or choose catalog adapters with loraSlot1..3"
    )


def test_slots_are_ignored_while_lora_deployment_is_disabled() -> None:
    llm = validate_llm(instance({"loraDeployment": "disabled", "loraSlot1": "unknown"}), CATALOG, settings())
    assert llm.adapters == ()


def test_read_llm_does_not_need_the_catalog() -> None:
    engine = {"loraDeployment": "enabled", "loraSlot1": "not-in-any-catalog"}
    assert read_llm(instance(engine), settings()).adapters == ()
    assert fails(engine).startswith("llmEngine.parameters.loraSlot1 references unknown adapter")
