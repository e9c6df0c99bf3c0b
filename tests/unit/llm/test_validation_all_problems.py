"""Validation names every problem of an llm Instance at once (bounded), in rule order, and refuses
a catalog adapter made for another base model."""

from __future__ import annotations

import pytest

from actors.interface import ValidationFailed
from provider.kserve import KServeProvider
from provider.model.catalog import Catalogs, LoraAdapter, parse_lora_catalog
from provider.rules.problems import MAX_PROBLEM_CHARS, MAX_PROBLEMS, SEPARATOR
from provider.topologies.llm.validation import validate_llm
from tests.support.instances import LLM_MODEL_URI, as_model, llm_instance
from tests.support.llm_topology import fails, inputs, settings


def test_two_wrong_parameters_are_both_reported() -> None:
    # The case: an unknown key and an unknown compute profile, reported together.
    message = fails({"bogus": 1, "computeProfile": "tpu"})
    assert message.split(SEPARATOR) == [
        "llmEngine.parameters.computeProfile: Input should be 'gpu' or 'cpu'",
        "llmEngine.parameters.bogus: Extra inputs are not permitted",
    ]


def test_problems_of_independent_rules_are_reported_in_rule_order() -> None:
    message = fails(
        {"tensorParallelSize": "x"},
        topology={"enablePrefill": "maybe"},
        component={"replicas": -1, "resources": {"limits": {"cpu": "lots"}}, "service": {"serviceType": "Foo"}},
    )
    assert message.split(SEPARATOR) == [
        "llmEngine.parameters.tensorParallelSize: Input should be a valid integer",
        "llmEngine replicas must not be negative",
        "llmEngine.resources.limits.cpu: 'lots' is not a valid quantity (e.g. 500m, 1, 2Gi)",
        "llmEngine.service.serviceType must be one of ClusterIP, LoadBalancer or NodePort",
        'topology.parameters.enablePrefill: invalid boolean value "maybe"',
    ]


def test_the_message_is_bounded_in_count_and_length() -> None:
    many = {f"unknown{i:02d}": 1 for i in range(MAX_PROBLEMS + 4)}
    message = fails({"k" * 1000: 1, **many})
    parts = message.split(SEPARATOR)
    assert len(parts) == MAX_PROBLEMS + 1
    assert parts[-1] == "and 5 more"
    assert parts[0].startswith("llmEngine.parameters.kkk") and parts[0].endswith(" …")
    assert all(len(part) <= MAX_PROBLEM_CHARS for part in parts)


def test_a_single_problem_reads_exactly_as_before() -> None:
    assert fails({"computeProfile": "tpu"}) == "llmEngine.parameters.computeProfile: Input should be 'gpu' or 'cpu'"


# -- the base model of catalog adapters ----------------------------------------------------------

QWEN = "hf://Qwen/Qwen2.5-0.5B-Instruct"
CATALOG = Catalogs(
    lora_adapters=(
        LoraAdapter(
            "SmolLM2 SFT", "smollm2-135m-sft", "hf://p/smollm2-lora", "hf://HuggingFaceTB/SmolLM2-135M-Instruct"
        ),
        LoraAdapter("Qwen SFT", "qwen2.5-0.5b-sft", "hf://lewtun/Qwen2.5-0.5B-SFT-LoRA", QWEN),
        LoraAdapter("Unsaid", "any-base", "hf://someone/adapter"),
    )
)


def lora(*slots: str, model: str = QWEN) -> dict[str, str]:
    engine = {"modelURI": model, "computeProfile": "cpu", "loraDeployment": "enabled"}
    engine.update({f"loraSlot{i}": name for i, name in enumerate(slots, start=1)})
    return engine


def check(engine: dict[str, str]) -> None:
    validate_llm(as_model(llm_instance(engine=engine)), CATALOG, settings())


def test_an_adapter_for_another_base_model_is_refused_naming_both() -> None:
    with pytest.raises(ValidationFailed) as info:
        check(lora("qwen2.5-0.5b-sft", "smollm2-135m-sft"))
    assert info.value.message == (
        'llmEngine.parameters.loraSlot2: adapter "smollm2-135m-sft" is for the base model '
        '"hf://HuggingFaceTB/SmolLM2-135M-Instruct", not for this Instance\'s model '
        '"hf://Qwen/Qwen2.5-0.5B-Instruct"; choose an adapter made for it'
    )


def test_every_mismatched_adapter_is_named() -> None:
    with pytest.raises(ValidationFailed) as info:
        check(lora("smollm2-135m-sft", "qwen2.5-0.5b-sft", model="hf://facebook/opt-125m"))
    assert [p.split(":")[0] for p in info.value.message.split(SEPARATOR)] == [
        "llmEngine.parameters.loraSlot1",
        "llmEngine.parameters.loraSlot2",
    ]


@pytest.mark.parametrize("model", [QWEN, "hf://qwen/qwen2.5-0.5b-instruct/", f"  {QWEN}"])
def test_an_adapter_for_the_instance_model_is_served(model: str) -> None:
    check(lora("qwen2.5-0.5b-sft", "any-base", model=model.strip() if model.startswith(" ") else model))


def test_a_catalog_entry_without_base_model_is_not_checked() -> None:
    check(lora("any-base", model=LLM_MODEL_URI))


def test_the_catalog_reads_base_model() -> None:
    (entry,) = parse_lora_catalog('[{"name": "a", "uri": "hf://x/y", "baseModel": " hf://b/c "}]')
    assert entry.base_model == "hf://b/c"


def test_the_reconciler_validate_and_render_refuse_it_alike() -> None:
    # KServeProvider.check is what the reconciler's validate(), /validate and render all run.
    provider = KServeProvider(settings(), catalogs=CATALOG)
    obj = llm_instance(engine=lora("smollm2-135m-sft"))
    with pytest.raises(ValidationFailed, match="is for the base model"):
        provider.check(obj, CATALOG)
    with pytest.raises(ValidationFailed, match="is for the base model"):
        provider.render(obj, catalogs=CATALOG)


# -- gpuCount: the form's GPU field ----------------------------------------------------------------


def test_gpu_count_sets_the_gpu_limit_and_request() -> None:
    resources = inputs({"gpuCount": 2, "tensorParallelSize": 2}).resources or {}
    assert resources["limits"]["nvidia.com/gpu"] == "2"
    assert resources["requests"]["nvidia.com/gpu"] == "2"


def test_gpu_count_is_ignored_on_the_cpu_profile() -> None:
    resources = inputs({"gpuCount": 2, "computeProfile": "cpu"}).resources or {}
    assert "nvidia.com/gpu" not in resources.get("limits", {})


def test_gpu_count_agreeing_with_the_resources_is_accepted() -> None:
    resources = inputs({"gpuCount": 1}, component={"resources": {"limits": {"nvidia.com/gpu": 1}}}).resources or {}
    assert resources["limits"]["nvidia.com/gpu"] == "1"


def test_gpu_count_disagreeing_with_the_resources_is_refused() -> None:
    message = fails({"gpuCount": 2}, component={"resources": {"limits": {"nvidia.com/gpu": "1"}}})
    assert message == (
        "llmEngine.parameters.gpuCount is 2, but llmEngine.resources.limits.nvidia.com/gpu is 1; set only one of them"
    )


def test_gpu_count_below_the_parallelism_is_refused() -> None:
    message = fails({"gpuCount": 1, "tensorParallelSize": 2})
    assert message.startswith("llmEngine.resources.limits.nvidia.com/gpu is 1, but the parallelism needs 2 GPUs")


def test_without_gpu_count_the_parallelism_asks_for_its_gpus() -> None:
    # What the form posts when the user raises the parallelism and leaves GPUs per Replica empty.
    resources = inputs({"tensorParallelSize": 2, "pipelineParallelSize": 2}).resources or {}
    assert (resources["limits"]["nvidia.com/gpu"], resources["requests"]["nvidia.com/gpu"]) == ("4", "4")
    # A count in the resources is the user's, checked against the parallelism as before.
    assert fails({"tensorParallelSize": 2}, component={"resources": {"limits": {"nvidia.com/gpu": "1"}}}).startswith(
        "llmEngine.resources.limits.nvidia.com/gpu is 1, but the parallelism needs 2 GPUs"
    )
    # No parallelism: the preset's one GPU, nothing written.
    assert "nvidia.com/gpu" not in (inputs({}).resources or {}).get("limits", {})
