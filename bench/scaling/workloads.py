"""What one topology's Instances look like, what they produce, and how a spec change shows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject, Resource
from tests.support import null_provider
from tests.support.instances import null_instance


def _kserve_instance(topology: str, component: str, spec: dict[str, Any]) -> Callable[[str, str], KubeObject]:
    def build(name: str, namespace: str) -> KubeObject:
        return {
            "apiVersion": INSTANCES.api_version,
            "kind": INSTANCES.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "providerRef": {"name": "provider-kserve"},
                "topology": {"type": topology},
                "components": {component: {**spec, "replicas": 1}},
            },
        }

    return build


@dataclass(frozen=True)
class Workload:
    instance: Callable[[str, str], KubeObject]
    derived: Resource
    derived_suffix: str
    change: Callable[[int], dict[str, Any]]  # merge patch setting the watched value
    observed: Callable[[KubeObject], Any]  # the watched value on the derived object


WORKLOADS = {
    "null": Workload(
        instance=lambda name, namespace: null_instance(name, namespace, size=1),
        derived=null_provider.CONFIGMAPS,
        derived_suffix="-cm",
        change=lambda v: {"spec": {"topology": {"parameters": {"size": v}}}},
        observed=lambda obj: int((obj.get("data") or {}).get("size", 0)),
    ),
    "llm": Workload(
        instance=_kserve_instance(
            "llm",
            "llmEngine",
            {
                "type": "vllm",
                "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
                "parameters": {"modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "modelName": "qwen"},
            },
        ),
        derived=Resource("serving.kserve.io", "v1alpha2", "llminferenceservices", "LLMInferenceService"),
        derived_suffix="",
        change=lambda v: {"spec": {"components": {"llmEngine": {"replicas": v}}}},
        observed=lambda obj: (obj.get("spec") or {}).get("replicas"),
    ),
    "predictor": Workload(
        instance=_kserve_instance(
            "predictor",
            "predictor",
            {
                "type": "modelServer",
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                "parameters": {
                    "modelFormat": "sklearn",
                    "storageURI": "gs://kfserving-examples/models/sklearn/1.0/model",
                },
            },
        ),
        derived=Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService"),
        derived_suffix="",
        change=lambda v: {"spec": {"components": {"predictor": {"replicas": v}}}},
        observed=lambda obj: ((obj.get("spec") or {}).get("predictor") or {}).get("minReplicas"),
    ),
}


def name_of(i: int) -> str:
    return f"i{i:05d}"
