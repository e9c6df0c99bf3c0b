"""The llm translation against the real CRDs on a real API server.

Every object `KServeProvider.render` produces for the shipped examples (and for two Instances that
turn every knob) is stamped as the runtime stamps it, server-side applied, read back and compared:
each field we sent must come back with the same value. A field the structural schema does not
know would be pruned silently (no error), so this is the only place such a slip shows. Kinds:
LLMInferenceService and LLMInferenceServiceConfig (serving.kserve.io/v1alpha2), ServiceAccount,
Service, PodMonitor (monitoring.coreos.com/v1), AIGatewayRoute (aigateway.envoyproxy.io/v1beta1)
and BackendTrafficPolicy (gateway.envoyproxy.io/v1alpha1).

No KServe, Prometheus or Envoy controller runs here: only the API server's schema validation,
defaulting and pruning.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from actors.client import ApiError, KubeClient
from actors.client.known_resources import INSTANCES
from actors.contract import is_owned_by, stamp
from actors.interface import KubeObject, Resource
from provider.kserve import KServeProvider
from provider.model import kinds
from provider.model.catalog import Catalogs, parse_lora_catalog
from provider.model.names import PROVIDER_NAME
from provider.model.settings import ProviderSettings
from tests.support.instances import llm_instance
from tests.support.read_back import first_difference

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
LLM_EXAMPLES = sorted(EXAMPLES.glob("instance-llm*.yaml"))
RESOURCES: dict[str, Resource] = {r.kind: r for r in kinds.OWNED}

# The chart as a production install configures it: HF token, PodMonitors, the AI Gateway with a
# rate-limit Redis (so the token quota policy is rendered too).
SETTINGS = ProviderSettings(
    hf_token_secret_name="hf-token",
    enable_pod_monitor=True,
    pod_monitor_interval="15s",
    ai_gateway_enabled=True,
    ai_gateway_name="ai-gateway",
    ai_gateway_namespace="envoy-gateway-system",
    ai_gateway_rate_limit_redis_url="redis://redis.redis-system:6379",
)
CATALOGS = Catalogs(lora_adapters=parse_lora_catalog((EXAMPLES / "lora-catalog.json").read_text()))

INLINE_CONFIG = """\
template:
  containers:
    - name: main
      args: [--enforce-eager, --max-model-len=4096]
      env:
        - name: VLLM_LOGGING_LEVEL
          value: DEBUG
router:
  scheduler: {}
labels:
  team: ml-platform
annotations:
  example.com/cost-center: "42"
"""


# LoadBalancer with source ranges and annotations, prefill/decode, tracing, HF token (from the
# settings), inline config, extra baseRefs, parallelism, explicit LoRA adapters with limits, image,
# replicas, fractional and binary quantities, resource claims, the PodMonitor.
EVERY_KNOB = llm_instance(
    "every-knob",
    None,
    uid=None,
    version="0.20",
    topology={
        "externalAccess": "LoadBalancer",
        "enablePrefill": True,
        "prefillReplicas": 2,
        "enableTracing": True,
        "tracingEndpoint": "http://otel-collector.observability:4317",
        "enableMetrics": True,
    },
    component={
        "type": "vllm",
        "version": "v0.20.0",
        "image": "registry.example/vllm/vllm-openai:v0.11.0",
        "replicas": 2,
        "resources": {
            "limits": {"cpu": "1500m", "memory": "48Gi", "nvidia.com/gpu": "4", "ephemeral-storage": 100},
            "requests": {"cpu": "0.5", "memory": "32Gi"},
            "claims": [{"name": "gpu-claim"}],
        },
        "service": {
            "annotations": {
                "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
                "example.com/owner": "ml-platform",
            },
            "loadBalancerService": {"sourceRanges": ["10.0.0.0/8", "192.168.1.10", "2001:db8::1"]},
        },
        "parameters": {
            "modelURI": "hf://meta-llama/Llama-3.1-70B-Instruct",
            "modelName": "llama-70b",
            "tensorParallelSize": 2,
            "dataParallelSize": 2,
            "expertParallel": True,
            "baseRefs": ["team-defaults"],
            "config": INLINE_CONFIG,
            "disableStorageInitializer": False,
            "lora": {
                "adapters": [
                    {"name": "sql-expert", "uri": "hf://example/sql-lora"},
                    {"name": "chat-tuned", "uri": "s3://bucket/adapters/chat"},
                ],
                "maxRank": 64,
                "maxAdapters": 4,
                "maxCpuAdapters": 8,
            },
        },
    },
)

# The Envoy AI Gateway: AIGatewayRoute (base model and catalog adapters routed) and the token quota
# BackendTrafficPolicy; KServe's Gateway API routing on top (router-route preset), on CPU.
GATEWAY_KNOBS = llm_instance(
    "gateway-knobs",
    None,
    uid=None,
    version="0.20",
    topology={"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 50000, "enableGatewayRouting": True},
    component={
        "type": "vllm",
        "replicas": 1,
        "resources": {"limits": {"cpu": "4", "memory": "16Gi"}},
        "parameters": {
            "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
            "modelName": "qwen2.5-0.5b-instruct",
            "computeProfile": "cpu",
            "kvCacheSpaceGi": 4,
            "loraDeployment": "enabled",
            "loraSlot1": "qwen2.5-0.5b-sft",
            "loraSlot2": "qwen2.5-0.5b-maestro",
        },
    },
)


def load_example(path: Path) -> KubeObject:
    doc: KubeObject = yaml.safe_load(path.read_text())
    return doc


CASES: list[tuple[str, KubeObject]] = [
    *((path.stem, load_example(path)) for path in LLM_EXAMPLES),
    ("every-knob", EVERY_KNOB),
    ("gateway-knobs", GATEWAY_KNOBS),
]


def test_first_difference_reports_the_first_differing_path() -> None:
    """The comparison itself can fail: pruned keys, changed scalars, types, list shape."""
    assert first_difference({"a": {"b": [1, {"c": "x"}]}}, {"a": {"b": [1, {"c": "x", "d": 2}]}, "e": 3}) is None
    assert first_difference({"a": {"b": 1}}, {"a": {}}) == ".a.b: pruned (sent 1)"
    assert first_difference({"a": [{"c": "500m"}]}, {"a": [{"c": "0.5"}]}) == '.a[0].c: sent "500m", read back "0.5"'
    assert first_difference({"n": 1}, {"n": "1"}) == '.n: sent 1, read back "1"'
    assert first_difference({"l": [1, 2]}, {"l": [1]}) == ".l: sent [1, 2], read back [1]"
    assert first_difference({"f": True}, {"f": 1}) == ".f: sent true, read back 1"


def rendered(doc: KubeObject, namespace: str) -> list[KubeObject]:
    body = copy.deepcopy(doc)
    body["metadata"]["namespace"] = namespace
    return KServeProvider(SETTINGS).render(body, catalogs=CATALOGS)


@pytest.mark.parametrize(("case", "doc"), CASES, ids=[case for case, _ in CASES])
async def test_every_rendered_object_is_accepted_and_reads_back_unchanged(
    kube: KubeClient, namespace: str, case: str, doc: KubeObject
) -> None:
    body = copy.deepcopy(doc)
    body["metadata"]["namespace"] = namespace
    instance = await kube.create(INSTANCES, body)
    objects = rendered(doc, namespace)
    assert objects, case

    for obj in objects:
        resource = RESOURCES[obj["kind"]]
        want = stamp(obj, instance, PROVIDER_NAME)
        name = want["metadata"]["name"]
        applied = await kube.apply(resource, want, field_manager=PROVIDER_NAME)
        got = await kube.get(resource, namespace, name)
        assert got is not None, f"{obj['kind']}/{name} not found after apply"
        sent = {k: v for k, v in want.items() if k not in ("apiVersion", "kind")}
        problem = first_difference(sent, got)
        assert problem is None, f"{case}: {obj['kind']}/{name} {problem}"
        assert (got["apiVersion"], got["kind"]) == (want["apiVersion"], want["kind"])
        assert is_owned_by(got, instance)

        # Applying the same object again changes nothing: the stored form is exactly ours, so the
        # runtime does not write on every reconcile.
        again = await kube.apply(resource, want, field_manager=PROVIDER_NAME)
        assert again["metadata"]["resourceVersion"] == applied["metadata"]["resourceVersion"], (
            f"{case}: re-applying {obj['kind']}/{name} wrote a new version"
        )


def test_the_knob_cases_render_every_kind() -> None:
    """Guards the test above: together the cases cover every kind the llm topology writes, and the
    knob Instances really carry the knobs (a renamed parameter would silently drop them)."""
    kinds_seen = {obj["kind"] for _, doc in CASES for obj in rendered(doc, "ns")}
    assert kinds_seen == set(RESOURCES)

    by_kind = {obj["kind"]: obj for obj in rendered(EVERY_KNOB, "ns")}
    spec = by_kind["LLMInferenceService"]["spec"]
    assert set(spec) >= {"model", "replicas", "parallelism", "labels", "template", "baseRefs", "prefill", "tracing"}
    assert spec["model"]["lora"]["maxCpuAdapters"] == 8
    assert spec["template"]["serviceAccountName"] == "every-knob-model-puller"
    assert by_kind["Service"]["spec"]["loadBalancerSourceRanges"] == [
        "10.0.0.0/8",
        "192.168.1.10/32",
        "2001:db8::1/128",
    ]
    assert by_kind["LLMInferenceServiceConfig"]["spec"]["annotations"] == {"example.com/cost-center": "42"}

    gateway = {obj["kind"]: obj for obj in rendered(GATEWAY_KNOBS, "ns")}
    # Gateway routing keeps the HF token away (KServe owns the pods' ServiceAccount): no model-puller.
    assert set(gateway) == {"LLMInferenceService", "PodMonitor", "AIGatewayRoute", "BackendTrafficPolicy"}
    assert gateway["AIGatewayRoute"]["spec"]["rules"][0]["matches"][2]["headers"][0]["value"] == "qwen2.5-0.5b-maestro"
    assert len(gateway["BackendTrafficPolicy"]["spec"]["rateLimit"]["global"]["rules"]) == 3


async def test_token_quota_per_user_and_model_on_the_envoy_gateway_crd(kube: KubeClient, namespace: str) -> None:
    """The rendered BackendTrafficPolicy of an Instance with two catalog adapters passes the real
    Envoy Gateway CRD (schema and CEL rules) and is stored with one rule per served model, each
    keyed by the user (Distinct x-user-id) and that model (Exact x-ai-eg-model)."""
    body = copy.deepcopy(GATEWAY_KNOBS)
    body["metadata"]["namespace"] = namespace
    instance = await kube.create(INSTANCES, body)
    (policy,) = [o for o in rendered(GATEWAY_KNOBS, namespace) if o["kind"] == "BackendTrafficPolicy"]
    await kube.apply(kinds.BACKEND_TRAFFIC_POLICY, stamp(policy, instance, PROVIDER_NAME), field_manager=PROVIDER_NAME)
    stored = await kube.get(kinds.BACKEND_TRAFFIC_POLICY, namespace, policy["metadata"]["name"])
    assert stored is not None
    keys = [
        [(h["name"], h["type"], h.get("value")) for h in rule["clientSelectors"][0]["headers"]]
        for rule in stored["spec"]["rateLimit"]["global"]["rules"]
    ]
    assert keys == [
        [("x-user-id", "Distinct", None), ("x-ai-eg-model", "Exact", model)]
        for model in ("qwen2.5-0.5b-instruct", "qwen2.5-0.5b-sft", "qwen2.5-0.5b-maestro")
    ]
    assert {rule["limit"]["requests"] for rule in stored["spec"]["rateLimit"]["global"]["rules"]} == {50000}


async def test_a_field_unknown_to_the_schema_fails_the_apply(kube: KubeClient, namespace: str) -> None:
    """Server-side apply builds a typed patch from the CRD schema, so a field the schema does not
    declare is not pruned silently: the apply fails and names the field (the runtime then reports
    it as Synced=False). The read-back comparison above therefore guards what SSA does accept:
    defaulting, normalisation and subtrees that preserve unknown fields."""
    body = copy.deepcopy(EVERY_KNOB)
    body["metadata"]["namespace"] = namespace
    instance = await kube.create(INSTANCES, body)
    (llmisvc,) = [o for o in rendered(EVERY_KNOB, namespace) if o["kind"] == "LLMInferenceService"]
    want = stamp(llmisvc, instance, PROVIDER_NAME)
    want["spec"]["model"]["servedName"] = "typo-of-name"
    with pytest.raises(ApiError) as failed:
        await kube.apply(kinds.LLM_INFERENCE_SERVICE, want, field_manager=PROVIDER_NAME)
    assert ".spec.model.servedName: field not declared in schema" in failed.value.message
    assert await kube.get(kinds.LLM_INFERENCE_SERVICE, namespace, want["metadata"]["name"]) is None
