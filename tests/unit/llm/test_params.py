"""The parameter models: flag parsing, defaults, predicates and the published JSON schema."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from provider.topologies.llm.param_base import ENGINE_PREFIX, message_of
from provider.topologies.llm.params import LlmEngineParameters
from provider.topologies.llm.topology_params import LlmTopologyParameters

ENGINE = {"modelURI": "hf://org/model"}


def topology(**raw: Any) -> LlmTopologyParameters:
    return LlmTopologyParameters.model_validate(raw)


@pytest.mark.parametrize("word", [True, "true", "TRUE", " yes ", "1", "enabled", "Enabled"])
def test_flag_true_words(word: Any) -> None:
    assert topology(enablePrefill=word).enable_prefill is True


@pytest.mark.parametrize("word", [False, "false", "no", "0", "disabled", "", "  "])
def test_flag_false_words(word: Any) -> None:
    assert topology(enablePrefill=word).enable_prefill is False


def test_flag_rejects_numbers() -> None:
    with pytest.raises(ValidationError) as info:
        topology(enableGatewayRouting=1)
    assert message_of("topology.parameters", info.value) == (
        "topology.parameters.enableGatewayRouting: Input should be a valid boolean"
    )


def test_topology_defaults() -> None:
    params = topology()
    assert params.external_access is None
    assert params.metrics_enabled() is True
    assert (params.enable_prefill, params.enable_tracing, params.enable_gateway_routing) == (False, False, False)


def test_metrics_can_be_turned_off() -> None:
    assert topology(enableMetrics="false").metrics_enabled() is False


@pytest.mark.parametrize(
    ("raw", "uses_gateway", "resolved", "routing"),
    [
        ({}, False, None, False),
        ({"externalAccess": "ClusterIP"}, False, "ClusterIP", False),
        ({"externalAccess": "LoadBalancer"}, False, "LoadBalancer", False),
        ({"externalAccess": "NodePort"}, False, "NodePort", False),
        ({"externalAccess": "EnvoyAIGateway"}, True, "ClusterIP", True),
        ({"enableAIGateway": True}, True, None, True),
        ({"enableAIGateway": True, "externalAccess": "NodePort"}, False, "NodePort", False),
        ({"externalAccess": ""}, False, None, False),
        ({"enableGatewayRouting": "true"}, False, None, True),
    ],
)
def test_exposure_predicates(raw: dict[str, Any], uses_gateway: bool, resolved: str | None, routing: bool) -> None:
    params = topology(**raw)
    assert params.uses_ai_gateway() is uses_gateway
    assert params.resolved_service_type() == resolved
    assert params.gateway_routing() is routing


def test_engine_defaults() -> None:
    params = LlmEngineParameters.model_validate(ENGINE)
    assert params.compute_profile == "gpu"
    assert params.served_model_name("chat") == "chat"
    assert params.base_refs == []
    assert params.config_spec() is None


def test_compute_profile_is_case_insensitive() -> None:
    assert LlmEngineParameters.model_validate({**ENGINE, "computeProfile": " CPU "}).cpu is True


def test_blank_model_name_means_instance_name() -> None:
    assert LlmEngineParameters.model_validate({**ENGINE, "modelName": " "}).served_model_name("chat") == "chat"


def test_data_parallel_one_is_no_data_parallelism() -> None:
    assert LlmEngineParameters.model_validate({**ENGINE, "dataParallelSize": 1}).data_parallel is None
    assert LlmEngineParameters.model_validate({**ENGINE, "dataParallelSize": 4}).data_parallel == 4


def test_rule_errors_are_shown_verbatim() -> None:
    with pytest.raises(ValidationError) as info:
        LlmEngineParameters.model_validate({**ENGINE, "loraDeployment": "maybe"})
    assert (
        message_of(ENGINE_PREFIX, info.value) == 'llmEngine.parameters.loraDeployment must be "disabled" or "enabled"'
    )


def test_lora_slots_in_order_without_blanks() -> None:
    params = LlmEngineParameters.model_validate({**ENGINE, "loraSlot1": "a", "loraSlot2": "", "loraSlot3": "c"})
    assert params.lora_slots() == [("loraSlot1", "a"), ("loraSlot3", "c")]


# -- the published schema ------------------------------------------------------------------------


def engine_schema() -> dict[str, Any]:
    return LlmEngineParameters.model_json_schema(by_alias=True)


def topology_schema() -> dict[str, Any]:
    return LlmTopologyParameters.model_json_schema(by_alias=True)


def test_schema_uses_wire_names() -> None:
    assert list(engine_schema()["properties"]) == [
        "modelURI", "modelName", "tensorParallelSize", "pipelineParallelSize", "dataParallelSize",
        "expertParallel", "gpuCount", "computeProfile", "kvCacheSpaceGi", "kvCacheOffloading", "baseRefs", "config",
        "disableStorageInitializer", "lora", "loraDeployment", "loraSlot1", "loraSlot2", "loraSlot3",
    ]  # fmt: skip
    assert list(topology_schema()["properties"]) == [
        "externalAccess", "enableGatewayRouting", "enableAIGateway", "tokenLimitPerHour", "enablePrefill",
        "prefillReplicas", "enableMetrics", "enableTracing", "tracingEndpoint",
    ]  # fmt: skip


def test_schema_required_and_closed() -> None:
    schema = engine_schema()
    assert schema["required"] == ["modelURI"]
    assert schema["additionalProperties"] is False
    assert topology_schema()["additionalProperties"] is False


def test_every_field_is_described() -> None:
    for schema in (engine_schema(), topology_schema()):
        missing = [name for name, prop in schema["properties"].items() if not prop.get("description")]
        assert missing == []


def test_schema_constraints() -> None:
    engine, topo = engine_schema()["properties"], topology_schema()["properties"]
    assert engine["tensorParallelSize"]["minimum"] == 1
    assert engine["computeProfile"] == {
        "default": "gpu",
        "description": engine["computeProfile"]["description"],
        "enum": ["gpu", "cpu"],
        "type": "string",
    }
    assert engine["loraDeployment"]["enum"] == ["disabled", "enabled"]
    assert topo["externalAccess"]["enum"] == ["ClusterIP", "LoadBalancer", "NodePort", "EnvoyAIGateway"]
    assert topo["tokenLimitPerHour"]["minimum"] == 1
    assert topo["prefillReplicas"]["minimum"] == 0


def test_optional_fields_have_no_null_branch() -> None:
    for schema in (engine_schema(), topology_schema()):
        for name, prop in schema["properties"].items():
            assert {"type": "null"} not in prop.get("anyOf", []), name


def test_flags_accept_booleans_or_words_in_the_schema() -> None:
    flag = topology_schema()["properties"]["enablePrefill"]
    assert flag["anyOf"][0] == {"type": "boolean"}
    assert set(flag["anyOf"][1]["enum"]) == {"true", "false", "enabled", "disabled", "yes", "no", "1", "0"}


def test_adapter_schema_requires_name_and_uri() -> None:
    adapter = engine_schema()["$defs"]["LoraAdapterSpec"]
    assert adapter["required"] == ["name", "uri"]
    assert adapter["properties"]["name"]["minLength"] == 1
