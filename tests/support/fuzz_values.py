"""Values for fuzzing Instance specs: arbitrary JSON, and plausible-but-wrong values per field (enough
of them right that the deeper validation rules are reached)."""

from __future__ import annotations

from typing import Any, Final

from tests.support import gen as st
from tests.support.gen import Gen

# -- JSON values -----------------------------------------------------------------------------------

HUGE_INTS: Final = (2**31 - 1, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 10**30, -1, 0)
ODD_STRINGS: Final = (
    "",
    " ",
    "\n",
    "\t\u00a0",
    "\x00",
    "🦙" * 40,
    "ünïcødé",
    "名前",
    "a" * 300,
    "1e400",
    "NaN",
    "-1",
    "0x10",
    "true",
    "null",
    "{}",
    "[]",
    "a\nb",
    "../..",
    "${HOME}",
)

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(HUGE_INTS)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(ODD_STRINGS)
)
json_values: Gen[Any] = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
)

# -- plausible values per field: enough of them right that the deeper rules are reached -----------

URIS = st.sampled_from(
    (
        "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "hf://a",
        "hf://",
        "s3://bucket/model",
        "gs://bucket/path",
        "pvc://claim/path",
        "oci://registry/image:tag",
        "https://example.com/model",
        "ftp://nope",
        "hf://x/y?rev=main",
        "hf://" + "x" * 300,
        "file:///etc/passwd",
        "hf://🦙/🦙",
    )
)
QUANTITIES = st.sampled_from(("1", "500m", "2Gi", "0", "-1", "1.5", "abc", "1e3", "10Ki", "", "٣", 4, 0.5, -2))
FLAGS = st.sampled_from((True, False, "true", "false", "enabled", "disabled", "yes", "no", "1", "0", "maybe", 1, 0, 2))
SMALL_INTS = st.integers(min_value=-3, max_value=12) | st.sampled_from(HUGE_INTS)
NAMES = st.sampled_from(
    ("chat", "a", "x" * 63, "x" * 64, "y" * 250, "Upper", "with.dot", "-lead", "trail-", "ok-name", "名前", "")
)
CONFIGS = (
    st.sampled_from(
        (
            "template:\n  containers:\n    - name: main\n      args: [--enforce-eager]\n",
            "a: [unclosed",
            "- just\n- a list\n",
            "x: .inf\n",
            "x: .nan\n",
            "",
            "spec: {}",
            "!!python/object:os.system ls",
            "a: &a [*a]",
            "\t",
            "template: 5",
        )
    )
    | json_values
)
CIDRS = st.lists(
    st.sampled_from(("10.0.0.0/8", "192.168.1.10", "::1/128", "300.1.1.1", "10.0.0.0/33", "", "fe80::/10", "x")),
    max_size=4,
)

ENGINE_KEYS: Final[dict[str, Gen[Any]]] = {
    "modelURI": URIS,
    "modelName": NAMES,
    "tensorParallelSize": SMALL_INTS,
    "pipelineParallelSize": SMALL_INTS,
    "dataParallelSize": SMALL_INTS,
    "expertParallel": FLAGS,
    "computeProfile": st.sampled_from(("gpu", "cpu", "GPU", "tpu", "")),
    "kvCacheSpaceGi": SMALL_INTS,
    "baseRefs": st.lists(NAMES, max_size=3),
    "config": CONFIGS,
    "disableStorageInitializer": FLAGS,
    "lora": st.fixed_dictionaries(
        {},
        optional={
            "adapters": st.lists(
                st.fixed_dictionaries({}, optional={"name": NAMES | json_values, "uri": URIS | json_values}),
                max_size=3,
            ),
            "maxRank": SMALL_INTS,
            "maxAdapters": SMALL_INTS,
            "maxCpuAdapters": SMALL_INTS,
        },
    ),
    "loraDeployment": st.sampled_from(("enabled", "disabled", "Enabled", "")),
    "loraSlot1": st.sampled_from(("qwen2.5-0.5b-sft", "smollm2-135m-sft", "unknown", "")),
    "loraSlot2": st.sampled_from(("qwen2.5-0.5b-maestro", "qwen2.5-0.5b-sft", "")),
    "loraSlot3": st.sampled_from(("smollm2-135m-sft", "nope")),
    "modeluri": URIS,  # Go matched engine keys case-insensitively: both spellings at once
}
TOPOLOGY_KEYS: Final[dict[str, Gen[Any]]] = {
    "externalAccess": st.sampled_from(("ClusterIP", "LoadBalancer", "NodePort", "EnvoyAIGateway", "clusterip", "")),
    "enableGatewayRouting": FLAGS,
    "enableAIGateway": FLAGS,
    "tokenLimitPerHour": SMALL_INTS,
    "enablePrefill": FLAGS,
    "prefillReplicas": SMALL_INTS,
    "enableMetrics": FLAGS,
    "enableTracing": FLAGS,
    "tracingEndpoint": st.sampled_from(("http://otel:4317", "not a url", "", "grpc://x:1")),
}
PREDICTOR_KEYS: Final[dict[str, Gen[Any]]] = {
    "modelFormat": st.sampled_from(("sklearn", "xgboost", "onnx", "pytorch", "", "Unknown")),
    "storageURI": URIS,
    "storageUri": URIS,
    "runtimeVersion": st.sampled_from(("v0.20.0", "", "latest", "💥")),
    "runtime": NAMES,
    "minReplicas": SMALL_INTS,
    "maxReplicas": SMALL_INTS,
}
COMPONENT_KEYS: Final[dict[str, Gen[Any]]] = {
    "type": st.sampled_from(("vllm", "modelServer", "", "other")),
    "replicas": SMALL_INTS,
    "image": st.sampled_from(("vllm/vllm-openai:latest", "", " ", "bad image ref")),
    "version": st.sampled_from(("0.20", "", "v1")),
    "resources": st.fixed_dictionaries(
        {},
        optional={
            "limits": st.dictionaries(
                st.sampled_from(("cpu", "memory", "nvidia.com/gpu", "x")), QUANTITIES, max_size=3
            ),
            "requests": st.dictionaries(st.sampled_from(("cpu", "memory", "nvidia.com/gpu")), QUANTITIES, max_size=3),
        },
    ),
    "service": st.fixed_dictionaries(
        {},
        optional={
            "serviceType": st.sampled_from(("ClusterIP", "LoadBalancer", "NodePort", "ExternalName", "")),
            "annotations": st.dictionaries(st.text(max_size=10), st.text(max_size=10) | json_values, max_size=2),
            "loadBalancerService": st.fixed_dictionaries({}, optional={"sourceRanges": CIDRS | json_values}),
        },
    ),
}
