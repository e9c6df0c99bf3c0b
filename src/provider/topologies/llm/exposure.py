"""The Service `<instance>-external` that publishes the model as LoadBalancer or NodePort.

KServe's own workload Service is always ClusterIP (and owned by KServe), so external access gets a
second Service selecting the same pods on vLLM's port 8000. With prefill/decode disaggregation
only the decode pods take client requests (their routing sidecar listens on 8000), so the selector
then also requires `llm-d.ai/role: decode` (the Go provider also hit prefill pods, §10.25).
"""

from __future__ import annotations

from typing import Any, Final

from actors import KubeObject
from provider.model import kinds, names
from provider.topologies.llm.inputs import LlmInputs

SERVING_PORT: Final = 8000
ROLE_LABEL: Final = "llm-d.ai/role"


def workload_selector(instance: str) -> dict[str, str]:
    """The labels KServe puts on an LLMInferenceService's model pods (GetWorkloadLabelSelector)."""
    return {
        "app.kubernetes.io/name": instance,
        "app.kubernetes.io/part-of": "llminferenceservice",
        "kserve.io/component": "workload",
    }


def external_service(inputs: LlmInputs) -> KubeObject | None:
    kind = inputs.external_service_type
    if kind is None:
        return None
    metadata: dict[str, Any] = {"name": names.external_service_name(inputs.name)}
    if inputs.service_annotations:
        metadata["annotations"] = dict(inputs.service_annotations)
    selector = workload_selector(inputs.name)
    if inputs.topology.enable_prefill:
        selector[ROLE_LABEL] = "decode"
    spec: dict[str, Any] = {
        "type": kind,
        "selector": selector,
        "ports": [{"name": "http", "protocol": "TCP", "port": SERVING_PORT, "targetPort": SERVING_PORT}],
    }
    if kind == "LoadBalancer" and inputs.source_ranges:
        spec["loadBalancerSourceRanges"] = list(inputs.source_ranges)
    return {"apiVersion": kinds.SERVICE.api_version, "kind": kinds.SERVICE.kind, "metadata": metadata, "spec": spec}
