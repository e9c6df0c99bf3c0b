"""`llmEngine.parameters.kvCacheOffloading` → the LLMInferenceService's `spec.kvCacheOffloading`: the
tiers KServe 0.20 takes, and what validation refuses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.llm_topology import fails, llmisvc_spec

PREFIX = "llmEngine.parameters.kvCacheOffloading"
LIMITS = {"resources": {"limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}}}


def offloading(value: Any, **component: Any) -> dict[str, Any] | None:
    spec = llmisvc_spec({"kvCacheOffloading": value}, component={**LIMITS, **component})
    out: dict[str, Any] | None = spec.get("kvCacheOffloading")
    return out


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ({}, None),
        ({"cpu": "20Gi"}, {"cpu": "20Gi"}),
        ({"cpu": "20480Mi", "evictionPolicy": "arc"}, {"cpu": "20Gi", "evictionPolicy": "arc"}),
        ({"cpu": 1073741824}, {"cpu": "1073741824"}),  # as Kubernetes writes a plain number back
        # The UI sends empty strings for what the user left alone.
        ({"cpu": "", "evictionPolicy": "", "fileSystem": {"volume": "", "size": "", "claimName": ""}}, None),
    ],
)
def test_the_cpu_tier(value: Any, expected: dict[str, Any] | None) -> None:
    assert offloading(value) == expected


def test_a_node_local_disk_tier() -> None:
    value = {"cpu": "20Gi", "fileSystem": {"volume": "emptyDir", "size": "100Gi"}}
    assert offloading(value) == {"cpu": "20Gi", "secondary": [{"fileSystem": {"emptyDir": {"size": "100Gi"}}}]}


def test_an_existing_claim() -> None:
    value = {"cpu": "20Gi", "fileSystem": {"volume": "claim", "claimName": "kv-cache", "path": "team-a/llama"}}
    assert offloading(value) == {
        "cpu": "20Gi",
        "secondary": [{"fileSystem": {"pvc": {"ref": {"name": "kv-cache", "path": "team-a/llama"}}}}],
    }


def test_a_claim_per_pod() -> None:
    value = {"cpu": "20Gi", "fileSystem": {"volume": "ephemeralClaim", "size": "200Gi", "storageClassName": "fast"}}
    requests = {"storage": "200Gi"}
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": requests}, "storageClassName": "fast"}
    assert offloading(value) == {"cpu": "20Gi", "secondary": [{"fileSystem": {"pvc": {"spec": claim}}}]}


def test_prefill_pods_offload_like_the_main_ones() -> None:
    spec = llmisvc_spec({"kvCacheOffloading": {"cpu": "8Gi"}}, component=LIMITS, topology={"enablePrefill": True})
    assert spec["kvCacheOffloading"] == spec["prefill"]["kvCacheOffloading"] == {"cpu": "8Gi"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"cpu": "lots"}, f'{PREFIX}.cpu "lots" is not a quantity (not a quantity), e.g. 20Gi'),
        ({"cpu": "0"}, f"{PREFIX}.cpu must be more than 0, e.g. 20Gi"),
        ({"cpu": "-1Gi"}, f"{PREFIX}.cpu must be more than 0, e.g. 20Gi"),
        ({"cpu": "10E"}, f"{PREFIX}.cpu is larger than KServe takes (9223372036854775807 bytes)"),
        ({"cpu": True}, f'{PREFIX}.cpu must be a quantity such as 20Gi, not "True"'),
        ({"cpu": 1.5}, f'{PREFIX}.cpu must be a quantity such as 20Gi, not "1.5"'),
        ({"evictionPolicy": "lru"}, f"{PREFIX}.cpu is required: the CPU RAM tier comes before any other"),
        (
            {"fileSystem": {"volume": "emptyDir", "size": "1Gi"}},
            f"{PREFIX}.cpu is required: the CPU RAM tier comes before any other",
        ),
        ({"cpu": "1Gi", "evictionPolicy": "fifo"}, f"{PREFIX}.evictionPolicy: Input should be 'lru' or 'arc'"),
        ({"cpu": "1Gi", "tiers": []}, f"{PREFIX}.tiers: Extra inputs are not permitted"),
        (
            {"cpu": "1Gi", "fileSystem": {"claimName": "kv"}},
            f"{PREFIX}.fileSystem.volume is required (emptyDir, claim or ephemeralClaim)",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "emptyDir"}},
            f"{PREFIX}.fileSystem.size is required with volume emptyDir",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "claim"}},
            f"{PREFIX}.fileSystem.claimName is required with volume claim",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "ephemeralClaim", "claimName": "kv", "size": "1Gi"}},
            f"{PREFIX}.fileSystem.claimName does not apply to volume ephemeralClaim",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "claim", "claimName": "kv", "size": "1Gi"}},
            f"{PREFIX}.fileSystem.size does not apply to volume claim",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "emptyDir", "size": "1Gi", "storageClassName": "fast"}},
            f"{PREFIX}.fileSystem.storageClassName does not apply to volume emptyDir",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "claim", "claimName": "kv", "path": "../other"}},
            f"""{PREFIX}.fileSystem.path "../other" must be a relative path inside the claim, without '..'""",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "claim", "claimName": "kv", "path": "/etc"}},
            f"""{PREFIX}.fileSystem.path "/etc" must be a relative path inside the claim, without '..'""",
        ),
        (
            {"cpu": "1Gi", "fileSystem": {"volume": "emptyDir", "size": "0"}},
            f"{PREFIX}.fileSystem.size must be more than 0, e.g. 20Gi",
        ),
    ],
)  # fmt: skip
def test_refused(value: dict[str, Any], message: str) -> None:
    assert fails({"kvCacheOffloading": value}, component=LIMITS) == message


def test_a_claim_name_is_an_object_name() -> None:
    message = fails(
        {"kvCacheOffloading": {"cpu": "1Gi", "fileSystem": {"volume": "claim", "claimName": "Not_A_Name"}}},
        component=LIMITS,
    )
    assert message.startswith(f"{PREFIX}.fileSystem.claimName: String should match pattern")


def test_the_cpu_tier_lives_in_the_model_servers_memory() -> None:
    component = {"resources": {"limits": {"memory": "16Gi", "nvidia.com/gpu": "1"}}}
    assert fails({"kvCacheOffloading": {"cpu": "16Gi"}}, component=component) == (
        f"{PREFIX}.cpu (16Gi) must be less than llmEngine.resources.limits.memory (16Gi): the CPU tier lives in "
        "the model server's memory"
    )
    assert llmisvc_spec({"kvCacheOffloading": {"cpu": "8Gi"}}, component=component)["kvCacheOffloading"]
    # Without a memory limit there is nothing to hold it to.
    assert llmisvc_spec({"kvCacheOffloading": {"cpu": "512Gi"}})["kvCacheOffloading"] == {"cpu": "512Gi"}


def test_a_node_local_disk_must_fit_the_ephemeral_storage_limit() -> None:
    """KServe adds the emptyDir size to the ephemeral-storage request, and limits are mirrored into
    requests: under a limit, the pod would ask for more than it may have."""
    component = {"resources": {"limits": {"memory": "64Gi", "ephemeral-storage": "50Gi", "nvidia.com/gpu": "1"}}}
    disk = {"cpu": "8Gi", "fileSystem": {"volume": "emptyDir", "size": "10Gi"}}
    assert fails({"kvCacheOffloading": disk}, component=component) == (
        f"{PREFIX}.fileSystem.size (10Gi) is added to the model server's ephemeral-storage request, which then "
        "exceeds llmEngine.resources.limits.ephemeral-storage (50Gi); raise or remove that limit, or use volume "
        "claim or ephemeralClaim"
    )
    claim = {"cpu": "8Gi", "fileSystem": {"volume": "ephemeralClaim", "size": "10Gi"}}
    assert llmisvc_spec({"kvCacheOffloading": claim}, component=component)["kvCacheOffloading"]
