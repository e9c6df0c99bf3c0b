"""The llm topology's LoRA validation rules: catalog slots and explicit adapters, with their exact messages."""

from __future__ import annotations

from typing import Any

import pytest

from provider.topologies.llm.validation import read_llm, validate_llm
from tests.support.instances import as_model, llm_instance
from tests.support.llm_topology import CATALOG, GATEWAY_SETTINGS, fails, passes, settings

# -- catalog slots and explicit adapters (Go provider rules, kserve-behavior §1.5) -----------------


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


def test_an_adapter_on_the_models_claim_is_refused() -> None:
    engine = {"modelURI": "pvc://files/model", **adapters({"name": "sql", "uri": "pvc://files/sql"})}
    assert fails(engine) == (
        'llmEngine.parameters.lora.adapters[0].uri "pvc://files/sql" is on claim "files", as '
        "llmEngine.parameters.modelURI: KServe mounts each pvc:// URI as a volume of its own, and a pod with "
        "two volumes of one claim never starts (it stays ContainerCreating); put the adapter on a claim of its own"
    )


def test_two_adapters_on_one_claim_are_refused() -> None:
    engine = adapters({"name": "sql", "uri": "pvc://loras/sql"}, {"name": "code", "uri": "pvc://loras"})
    message = fails(engine)
    assert message.startswith(
        'llmEngine.parameters.lora.adapters[1].uri "pvc://loras" is on claim "loras", as '
        "llmEngine.parameters.lora.adapters[0].uri: "
    )


def test_adapters_on_claims_of_their_own() -> None:
    own_claims = adapters({"name": "sql", "uri": "pvc://sql-lora/adapter"}, {"name": "code", "uri": "pvc://code-lora"})
    passes({"modelURI": "pvc://model/llm", **own_claims})
    # What the storage initializer downloads all lands in one volume.
    passes(
        {"modelURI": "hf://org/model", **adapters({"name": "a", "uri": "hf://org/a"}, {"name": "b", "uri": "s3://b/b"})}
    )


def test_explicit_adapters_contradict_lora_deployment() -> None:
    message = fails({"loraDeployment": "disabled", **adapters({"name": "sql", "uri": "hf://a/b"})})
    assert message == (
        'llmEngine.parameters.lora.adapters cannot be combined with loraDeployment "disabled"; remove '
        "loraDeployment to serve explicit adapters, or choose catalog adapters with loraSlot1..3"
    )


def test_slots_are_ignored_while_lora_deployment_is_disabled() -> None:
    engine = {"loraDeployment": "disabled", "loraSlot1": "unknown"}
    llm = validate_llm(as_model(llm_instance(engine=engine)), CATALOG, settings())
    assert llm.adapters == ()


def test_read_llm_does_not_need_the_catalog() -> None:
    engine = {"loraDeployment": "enabled", "loraSlot1": "not-in-any-catalog"}
    assert read_llm(as_model(llm_instance(engine=engine)), settings()).adapters == ()
    assert fails(engine).startswith("llmEngine.parameters.loraSlot1 references unknown adapter")


def test_adapters_are_held_to_what_the_ai_gateway_route_takes() -> None:
    gateway = settings(**GATEWAY_SETTINGS)
    adapters = [{"name": f"a{i}", "uri": f"hf://o/a{i}"} for i in range(127)]
    topology = {"externalAccess": "EnvoyAIGateway"}
    passes({"lora": {"adapters": adapters}}, settings_=gateway, topology=topology)  # 128 models: the limit
    message = fails(
        {"lora": {"adapters": [*adapters, {"name": "one-more", "uri": "hf://o/x"}]}},
        settings_=gateway,
        topology=topology,
    )
    assert message == (
        "externalAccess EnvoyAIGateway routes at most 128 models (the base model and 127 LoRA adapters); "
        "this Instance serves 129"
    )
    long_name = [{"name": "a" * 1025, "uri": "hf://o/long"}]
    passes({"lora": {"adapters": long_name}}, settings_=gateway, topology=topology)  # a route takes 4096
    quota = settings(**GATEWAY_SETTINGS, ai_gateway_rate_limit_redis_url="redis://r:6379")
    message = fails({"lora": {"adapters": long_name}}, settings_=quota, topology=topology)
    assert message.endswith("is 1025 characters long; the token limit policy matches names of at most 1024")
    # Without the AI Gateway, no route: the limits are the route's, not the adapters'.
    passes({"lora": {"adapters": [*adapters, {"name": "b" * 5000, "uri": "hf://o/x"}]}})
