"""The LLMInferenceService and inline config: one test per parameter."""

from __future__ import annotations

from typing import Any

import pytest

from provider.model.settings import ProviderSettings
from tests.support.instances import LLM_MODEL_URI
from tests.support.llm_topology import desired, llmisvc_spec, settings

HF = settings(hf_token_secret_name="hf-token")


def test_minimal_instance() -> None:
    obj = desired()["LLMInferenceService"]
    assert obj["apiVersion"] == "serving.kserve.io/v1alpha2"
    assert obj["metadata"] == {"name": "chat"}
    assert obj["spec"] == {
        "model": {"uri": LLM_MODEL_URI, "name": "chat"},
        "labels": {
            "core.openeverest.io/instance": "chat",
            "core.openeverest.io/component": "llmEngine",
            "core.openeverest.io/provider": "provider-kserve",
        },
    }


def test_no_ownership_metadata_in_desired_objects() -> None:
    for obj in desired(settings_=HF, engine={"config": "replicas: 1"}).values():
        assert "ownerReferences" not in obj["metadata"]
        assert "labels" not in obj["metadata"]
        assert "namespace" not in obj["metadata"]


def test_model_name() -> None:
    assert llmisvc_spec({"modelName": "qwen"})["model"]["name"] == "qwen"


def test_replicas_copied() -> None:
    assert llmisvc_spec(component={"replicas": 3})["replicas"] == 3
    assert "replicas" not in llmisvc_spec()


def test_tensor_and_pipeline_parallelism() -> None:
    spec = llmisvc_spec({"tensorParallelSize": 2, "pipelineParallelSize": 2})
    assert spec["parallelism"] == {"tensor": 2, "pipeline": 2}


def test_data_parallelism_mirrored_into_data_local() -> None:
    assert llmisvc_spec({"dataParallelSize": 4})["parallelism"] == {"data": 4, "dataLocal": 4}


def test_data_parallel_size_one_is_omitted() -> None:
    assert "parallelism" not in llmisvc_spec({"dataParallelSize": 1})


def test_expert_parallel() -> None:
    assert llmisvc_spec({"expertParallel": "enabled"})["parallelism"] == {"expert": True}
    assert llmisvc_spec({"expertParallel": "disabled"})["parallelism"] == {"expert": False}


def test_resources_limits_mirrored_into_requests_on_gpu() -> None:
    resources = {"limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 1}}
    container = llmisvc_spec(component={"resources": resources})["template"]["containers"][0]
    assert container == {
        "name": "main",
        "resources": {
            "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
            "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
        },
    }


def test_explicit_requests_are_kept() -> None:
    resources = {"requests": {"cpu": "2"}, "limits": {"cpu": "4", "memory": "16Gi"}}
    container = llmisvc_spec({"computeProfile": "cpu"}, component={"resources": resources})["template"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "2", "memory": "16Gi"}


def test_quantities_are_canonical_strings() -> None:
    """As a typed Go client writes them: YAML floats and ints become strings, then canonical form."""
    limits = {"cpu": 0.5, "memory": "1024Mi", "ephemeral-storage": 10, "nvidia.com/gpu": "1", "example.com/x": "1000"}
    requests = {"cpu": "0.25", "memory": "1.5Gi"}
    resources = {"limits": limits, "requests": requests}
    container = llmisvc_spec(component={"resources": resources})["template"]["containers"][0]
    assert container["resources"] == {
        "limits": {
            "cpu": "500m",
            "memory": "1Gi",
            "ephemeral-storage": "10",
            "nvidia.com/gpu": "1",
            "example.com/x": "1k",
        },
        "requests": {
            "cpu": "250m",
            "memory": "1536Mi",
            "ephemeral-storage": "10",
            "nvidia.com/gpu": "1",
            "example.com/x": "1k",
        },
    }


def test_cpu_profile_preset_is_first_base_ref() -> None:
    spec = llmisvc_spec({"computeProfile": "cpu", "baseRefs": ["mine"]})
    assert spec["baseRefs"] == [{"name": "kserve-config-llm-cpu"}, {"name": "mine"}]


def test_kv_cache_space_on_cpu() -> None:
    container = llmisvc_spec({"computeProfile": "cpu", "kvCacheSpaceGi": 6})["template"]["containers"][0]
    assert container == {"name": "main", "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "6"}]}


def test_kv_cache_space_ignored_on_gpu() -> None:
    assert "template" not in llmisvc_spec({"kvCacheSpaceGi": 6})


@pytest.mark.parametrize("requested", [0, -3, -(2**31)])
def test_kv_cache_space_below_one_is_raised_to_one(requested: int) -> None:
    """The Go provider clamped it to 1 and served; rejecting it would fail Instances that ran there."""
    container = llmisvc_spec({"computeProfile": "cpu", "kvCacheSpaceGi": requested})["template"]["containers"][0]
    assert container["env"] == [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "1"}]


def test_component_image_overrides_main_container() -> None:
    container = llmisvc_spec(component={"image": "registry.local/vllm-cpu:v0.25.1"})["template"]["containers"][0]
    assert container == {"name": "main", "image": "registry.local/vllm-cpu:v0.25.1"}


def test_version_bundle_recorded_as_annotations() -> None:
    obj = desired(version="0.20", component={"version": "0.25.1"})["LLMInferenceService"]
    assert obj["metadata"]["annotations"] == {
        "core.openeverest.io/version": "0.20",
        "core.openeverest.io/component-version": "0.25.1",
    }


def test_storage_initializer_toggle() -> None:
    assert llmisvc_spec({"disableStorageInitializer": True})["storageInitializer"] == {"enabled": False}
    assert llmisvc_spec({"disableStorageInitializer": "false"})["storageInitializer"] == {"enabled": True}
    assert "storageInitializer" not in llmisvc_spec()


def test_base_ref_order() -> None:
    spec = llmisvc_spec(
        {"computeProfile": "cpu", "baseRefs": ["team-a", "team-b"], "config": "replicas: 1"},
        topology={"enableGatewayRouting": True},
    )
    assert [ref["name"] for ref in spec["baseRefs"]] == [
        "kserve-config-llm-cpu",
        "kserve-config-llm-scheduler",
        "kserve-config-llm-router-route",
        "team-a",
        "team-b",
        "chat-config",
    ]


def test_ai_gateway_adds_only_the_scheduler() -> None:
    spec = llmisvc_spec(
        topology={"externalAccess": "EnvoyAIGateway"},
        settings_=settings(ai_gateway_enabled=True, ai_gateway_name="gw", ai_gateway_namespace="kserve"),
    )
    assert spec["baseRefs"] == [{"name": "kserve-config-llm-scheduler"}]


def test_no_base_refs_without_routing_or_configs() -> None:
    assert "baseRefs" not in llmisvc_spec()


def test_inline_config_object() -> None:
    config = "template:\n  containers:\n  - name: main\n    args: [--enforce-eager]\n"
    obj = desired({"config": config})["LLMInferenceServiceConfig"]
    assert obj == {
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceServiceConfig",
        "metadata": {"name": "chat-config"},
        "spec": {"template": {"containers": [{"name": "main", "args": ["--enforce-eager"]}]}},
    }


def test_no_config_object_without_config() -> None:
    assert "LLMInferenceServiceConfig" not in desired({"config": "  "})


def test_structured_fields_stay_on_the_service_when_config_sets_them_too() -> None:
    # KServe applies the service's own spec last, so these win over the config's values.
    spec = llmisvc_spec(
        {"config": "replicas: 5\nparallelism: {tensor: 4}", "tensorParallelSize": 1}, component={"replicas": 1}
    )
    assert (spec["replicas"], spec["parallelism"]) == (1, {"tensor": 1})


def test_hf_token_service_account_used_by_the_workload() -> None:
    assert llmisvc_spec(settings_=HF)["template"] == {"serviceAccountName": "chat-model-puller"}


def test_hf_token_not_used_with_gateway_routing() -> None:
    assert "template" not in llmisvc_spec(settings_=HF, topology={"enableGatewayRouting": True})


def test_prefill() -> None:
    spec = llmisvc_spec(
        topology={"enablePrefill": True, "prefillReplicas": 2},
        component={"resources": {"limits": {"cpu": "4"}}},
        settings_=HF,
    )
    assert spec["prefill"] == {
        "replicas": 2,
        "labels": spec["labels"],
        "template": spec["template"],
    }
    assert spec["template"]["containers"][0]["resources"] == {"limits": {"cpu": "4"}, "requests": {"cpu": "4"}}


def test_prefill_replicas_ignored_without_prefill() -> None:
    assert "prefill" not in llmisvc_spec(topology={"prefillReplicas": 2})


def test_tracing_default_collector() -> None:
    spec = llmisvc_spec(topology={"enableTracing": True})
    assert spec["tracing"] == {}
    assert "template" not in spec


def test_tracing_endpoint() -> None:
    endpoint = "http://otel.observability:4317"
    spec = llmisvc_spec(topology={"enableTracing": "true", "tracingEndpoint": endpoint})
    assert spec["tracing"] == {"exporterEndpoint": endpoint}
    assert spec["template"]["containers"][0]["env"] == [{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": endpoint}]


def test_tracing_endpoint_ignored_without_tracing() -> None:
    assert "tracing" not in llmisvc_spec(topology={"tracingEndpoint": "http://otel:4317"})


CHART_COLLECTOR = "http://jaeger-collector.observability:4317"


def test_tracing_goes_to_the_charts_collector_by_default() -> None:
    chart = settings(llm_tracing_endpoint=CHART_COLLECTOR)
    spec = llmisvc_spec(topology={"enableTracing": True}, settings_=chart)
    assert spec["tracing"] == {"exporterEndpoint": CHART_COLLECTOR}
    env = spec["template"]["containers"][0]["env"]
    assert env == [{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": CHART_COLLECTOR}]
    # Only for Instances that ask, unless the chart says every one traces.
    assert "tracing" not in llmisvc_spec(settings_=chart)


def test_the_instances_collector_wins_over_the_charts() -> None:
    own = "http://otel.team:4317"
    chart = settings(llm_tracing_endpoint=CHART_COLLECTOR, llm_tracing_all=True)
    spec = llmisvc_spec(topology={"enableTracing": True, "tracingEndpoint": own}, settings_=chart)
    assert spec["tracing"] == {"exporterEndpoint": own}


def test_chart_traces_every_llm_instance() -> None:
    chart = settings(llm_tracing_endpoint=CHART_COLLECTOR, llm_tracing_all=True)
    assert llmisvc_spec(settings_=chart)["tracing"] == {"exporterEndpoint": CHART_COLLECTOR}
    # Without a collector of the chart's, "all" has nowhere to send them.
    assert "tracing" not in llmisvc_spec(settings_=settings(llm_tracing_all=True))


def test_tracing_settings_from_the_environment() -> None:
    env = {"LLM_TRACING_ENDPOINT": CHART_COLLECTOR, "LLM_TRACING_ALL": "true"}
    parsed = ProviderSettings.from_env(env)
    assert (parsed.llm_tracing_endpoint, parsed.llm_tracing_all) == (CHART_COLLECTOR, True)


def lora(spec: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = spec["model"]["lora"]
    return result


def test_explicit_lora_adapters_and_limits() -> None:
    spec = llmisvc_spec(
        {"lora": {"adapters": [{"name": " sql ", "uri": "hf://org/sql-lora"}], "maxRank": 16, "maxCpuAdapters": 4}}
    )
    assert lora(spec) == {"adapters": [{"name": "sql", "uri": "hf://org/sql-lora"}], "maxRank": 16, "maxCpuAdapters": 4}


def test_catalog_adapters_in_slot_order() -> None:
    spec = llmisvc_spec(
        {"loraDeployment": "enabled", "loraSlot1": "qwen2.5-0.5b-maestro", "loraSlot3": "qwen2.5-0.5b-sft"}
    )
    assert lora(spec) == {
        "adapters": [
            {"name": "qwen2.5-0.5b-maestro", "uri": "hf://umsa-v1/maestro_Qwen2.5_0.5B_grupo1"},
            {"name": "qwen2.5-0.5b-sft", "uri": "hf://lewtun/Qwen2.5-0.5B-SFT-LoRA"},
        ]
    }


def test_lora_limits_without_adapters_are_not_sent() -> None:
    assert "lora" not in llmisvc_spec({"lora": {"maxRank": 8}})["model"]


def test_lora_deployment_disabled_serves_no_adapters() -> None:
    assert "lora" not in llmisvc_spec({"loraDeployment": "disabled", "loraSlot1": "qwen2.5-0.5b-sft"})["model"]
