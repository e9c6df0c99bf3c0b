"""The helper objects: model-puller ServiceAccount, external Service, PodMonitor, AI Gateway objects,
and which of them `desired` returns for which inputs and served kinds."""

from __future__ import annotations

from typing import Any

import pytest

from provider.model import kinds
from tests.support.llm_topology import GATEWAY_SETTINGS, REQUIRED_KINDS, desired, settings

HF = settings(hf_token_secret_name="hf-token")
GATEWAY = settings(**GATEWAY_SETTINGS)
SELECTOR = {
    "app.kubernetes.io/name": "chat",
    "app.kubernetes.io/part-of": "llminferenceservice",
    "kserve.io/component": "workload",
}


def test_objects_in_apply_order() -> None:
    objs = desired(
        {"config": "replicas: 1"},
        topology={"externalAccess": "LoadBalancer"},
        settings_=HF,
    )
    assert list(objs) == ["ServiceAccount", "LLMInferenceServiceConfig", "LLMInferenceService", "PodMonitor", "Service"]


# -- ServiceAccount -------------------------------------------------------------------------------


def test_model_puller_service_account() -> None:
    assert desired(settings_=HF)["ServiceAccount"] == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "chat-model-puller"},
        "secrets": [{"name": "hf-token"}],
    }


def test_no_service_account_without_token() -> None:
    assert "ServiceAccount" not in desired()


def test_no_service_account_with_gateway_routing() -> None:
    assert "ServiceAccount" not in desired(settings_=HF, topology={"enableGatewayRouting": "true"})


# -- external Service -----------------------------------------------------------------------------


def test_load_balancer_service() -> None:
    service = desired(
        topology={"externalAccess": "LoadBalancer"},
        component={
            "service": {
                "serviceType": "ClusterIP",
                "annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
                "loadBalancerService": {"sourceRanges": ["10.0.0.0/8", "192.168.1.10", "2001:db8::1"]},
            }
        },
    )["Service"]
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "chat-external",
            "annotations": {"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
        },
        "spec": {
            "type": "LoadBalancer",
            "selector": SELECTOR,
            "ports": [{"name": "http", "protocol": "TCP", "port": 8000, "targetPort": 8000}],
            "loadBalancerSourceRanges": ["10.0.0.0/8", "192.168.1.10/32", "2001:db8::1/128"],
        },
    }


def test_node_port_service_honours_annotations_but_not_source_ranges() -> None:
    service = desired(
        topology={"externalAccess": "NodePort"},
        component={"service": {"annotations": {"a": "b"}, "loadBalancerService": {"sourceRanges": ["10.0.0.0/8"]}}},
    )["Service"]
    assert service["spec"]["type"] == "NodePort"
    assert service["metadata"]["annotations"] == {"a": "b"}
    assert "loadBalancerSourceRanges" not in service["spec"]


def test_component_service_type_used_when_external_access_unset() -> None:
    assert desired(component={"service": {"serviceType": "NodePort"}})["Service"]["spec"]["type"] == "NodePort"


def test_external_access_wins_over_component_service_type() -> None:
    assert "Service" not in desired(
        topology={"externalAccess": "ClusterIP"}, component={"service": {"serviceType": "LoadBalancer"}}
    )


def test_no_service_for_cluster_ip() -> None:
    assert "Service" not in desired()


def test_no_external_service_behind_the_ai_gateway() -> None:
    objs = desired(
        settings_=GATEWAY, topology={"enableAIGateway": True}, component={"service": {"serviceType": "LoadBalancer"}}
    )
    assert "Service" not in objs


def test_external_service_selects_decode_pods_with_prefill() -> None:
    service = desired(topology={"externalAccess": "LoadBalancer", "enablePrefill": True})["Service"]
    assert service["spec"]["selector"] == {**SELECTOR, "llm-d.ai/role": "decode"}


# -- PodMonitor -----------------------------------------------------------------------------------


def test_pod_monitor() -> None:
    assert desired(settings_=settings(pod_monitor_interval="1m"))["PodMonitor"] == {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "chat-metrics"},
        "spec": {
            "selector": {"matchLabels": SELECTOR},
            "podMetricsEndpoints": [{"portNumber": 8000, "path": "/metrics", "interval": "1m"}],
        },
    }


def test_pod_monitor_off_per_instance() -> None:
    assert "PodMonitor" not in desired(topology={"enableMetrics": "disabled"})


def test_pod_monitor_off_in_chart() -> None:
    assert "PodMonitor" not in desired(settings_=settings(enable_pod_monitor=False))


def test_pod_monitor_skipped_without_its_crd() -> None:
    assert "PodMonitor" not in desired(available=REQUIRED_KINDS)


def test_pod_monitor_name_is_length_safe() -> None:
    name = "m" * 60
    monitor = desired(name=name)["PodMonitor"]
    assert len(monitor["metadata"]["name"]) == 63
    assert monitor["metadata"]["name"].endswith("-metrics")


# -- AI Gateway -----------------------------------------------------------------------------------


def test_ai_gateway_route() -> None:
    route = desired(
        {"modelName": "qwen", "lora": {"adapters": [{"name": "sql", "uri": "hf://o/sql"}]}},
        settings_=GATEWAY,
        topology={"externalAccess": "EnvoyAIGateway"},
    )["AIGatewayRoute"]
    assert route == {
        "apiVersion": "aigateway.envoyproxy.io/v1beta1",
        "kind": "AIGatewayRoute",
        "metadata": {"name": "chat-ai-gateway"},
        "spec": {
            "parentRefs": [
                {"name": "kserve-gw", "namespace": "kserve", "kind": "Gateway", "group": "gateway.networking.k8s.io"}
            ],
            "rules": [
                {
                    "matches": [
                        {"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "qwen"}]},
                        {"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "sql"}]},
                    ],
                    "backendRefs": [
                        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "chat-inference-pool"}
                    ],
                    "timeouts": {"request": "60s"},
                }
            ],
            "llmRequestCosts": [
                {"metadataKey": "llm_input_token", "type": "InputToken"},
                {"metadataKey": "llm_output_token", "type": "OutputToken"},
                {"metadataKey": "llm_total_token", "type": "TotalToken"},
            ],
        },
    }


def _rule(model: str, tokens: int) -> dict[str, Any]:
    return {
        "clientSelectors": [
            {
                "headers": [
                    {"name": "x-user-id", "type": "Distinct"},
                    {"name": "x-ai-eg-model", "type": "Exact", "value": model},
                ]
            }
        ],
        "limit": {"requests": tokens, "unit": "Hour"},
        "cost": {
            "request": {"from": "Number", "number": 0},
            "response": {
                "from": "Metadata",
                "metadata": {"namespace": "io.envoy.ai_gateway", "key": "llm_total_token"},
            },
        },
    }


def test_token_limit_policy_with_redis() -> None:
    policy = desired(
        settings_=settings(**GATEWAY_SETTINGS, ai_gateway_rate_limit_redis_url="redis:6379"),
        topology={"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 5000},
    )["BackendTrafficPolicy"]
    assert policy == {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "BackendTrafficPolicy",
        "metadata": {"name": "chat-token-limit"},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "chat-ai-gateway"}],
            # Keyed by user and by model: the served model name defaults to the Instance name.
            "rateLimit": {"global": {"rules": [_rule("chat", 5000)]}},
        },
    }


@pytest.mark.parametrize(
    ("engine", "models"),
    [
        # Explicit adapters.
        (
            {
                "modelName": "qwen",
                "lora": {"adapters": [{"name": "sql", "uri": "hf://o/sql"}, {"name": "chat-tuned", "uri": "s3://b/c"}]},
            },
            ["qwen", "sql", "chat-tuned"],
        ),
        # Adapters chosen from the chart's catalog.
        (
            {
                "modelName": "qwen",
                "loraDeployment": "enabled",
                "loraSlot1": "qwen2.5-0.5b-sft",
                "loraSlot3": "smollm2-135m-sft",
            },
            ["qwen", "qwen2.5-0.5b-sft", "smollm2-135m-sft"],
        ),
    ],
)
def test_token_limit_per_user_and_model_with_adapters(engine: dict[str, Any], models: list[str]) -> None:
    """Each served model (the base and every adapter) has its own per-user quota: one rule per
    model, each matching exactly the routed model names, with the same limit."""
    objs = desired(
        engine,
        settings_=settings(**GATEWAY_SETTINGS, ai_gateway_rate_limit_redis_url="redis:6379"),
        topology={"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 250},
    )
    assert objs["BackendTrafficPolicy"]["spec"]["rateLimit"]["global"]["rules"] == [_rule(m, 250) for m in models]
    routed = [match["headers"][0]["value"] for match in objs["AIGatewayRoute"]["spec"]["rules"][0]["matches"]]
    assert routed == models


def test_token_limit_defaults_to_1000() -> None:
    policy = desired(
        settings_=settings(**GATEWAY_SETTINGS, ai_gateway_rate_limit_redis_url="redis:6379"),
        topology={"enableAIGateway": True},
    )["BackendTrafficPolicy"]
    assert policy["spec"]["rateLimit"]["global"]["rules"][0]["limit"] == {"requests": 1000, "unit": "Hour"}


def test_no_token_policy_without_redis() -> None:
    objs = desired(settings_=GATEWAY, topology={"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 10})
    assert "AIGatewayRoute" in objs
    assert "BackendTrafficPolicy" not in objs


def test_gateway_objects_skipped_without_their_crds() -> None:
    objs = desired(settings_=GATEWAY, topology={"externalAccess": "EnvoyAIGateway"}, available=REQUIRED_KINDS)
    assert list(objs) == ["LLMInferenceService"]


def test_no_gateway_objects_otherwise() -> None:
    objs = desired(settings_=GATEWAY)
    assert not ({"AIGatewayRoute", "BackendTrafficPolicy"} & set(objs))


def test_owned_kinds_cover_everything_desired() -> None:
    objs = desired(
        {"config": "replicas: 1"},
        settings_=settings(hf_token_secret_name="t", **GATEWAY_SETTINGS, ai_gateway_rate_limit_redis_url="r"),
        topology={"externalAccess": "EnvoyAIGateway"},
    )
    assert set(objs) <= {r.kind for r in kinds.OWNED}
    assert set(objs) == {
        "ServiceAccount",
        "LLMInferenceServiceConfig",
        "LLMInferenceService",
        "PodMonitor",
        "AIGatewayRoute",
        "BackendTrafficPolicy",
    }
