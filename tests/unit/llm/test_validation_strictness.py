"""The llm topology's validation strictness the Go provider lacked: parameter types, parallelism, resources, names."""

from __future__ import annotations

from typing import Any

import pytest

from provider.topologies.llm.validation import validate_llm
from tests.support.instances import as_model, llm_instance
from tests.support.llm_topology import CATALOG, fails, passes, settings

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
        as_model(llm_instance(engine={"modelURI": None, "modeluri": "s3://b/m", "TensorParallelSize": 2})),
        CATALOG,
        settings(),
    )
    assert (llm.engine.model_uri, llm.engine.tensor_parallel_size) == ("s3://b/m", 2)


def test_same_engine_key_twice_in_different_case() -> None:
    message = fails({"modelName": "a", "modelname": "b"})
    assert message == "llmEngine.parameters.modelName and modelname set the same parameter; keep one"


def test_null_parameters_are_unset() -> None:
    instance = llm_instance(engine={"tensorParallelSize": None}, topology={"enablePrefill": None})
    llm = validate_llm(as_model(instance), CATALOG, settings())
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
