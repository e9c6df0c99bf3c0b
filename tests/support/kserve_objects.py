"""KServe's objects as its controllers leave them, for the status mappers' unit tests: an observed
LLMInferenceService or InferenceService with the given conditions and addresses."""

from __future__ import annotations

import copy
from typing import Any

from actors.interface import KubeObject
from tests.support.instances import SKLEARN_URI


def kserve_condition(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": status}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def llmisvc(
    name: str = "chat",
    *,
    conditions: list[dict[str, Any]] | None = None,
    ready: bool | None = True,
    generation: int = 1,
    observed_generation: int | None = 1,
    url: str | None = None,
    addresses: list[str] | None = None,
) -> KubeObject:
    """An observed LLMInferenceService; `ready` adds the three top-level conditions."""
    conds = list(conditions or [])
    if ready is not None and not any(c["type"] == "Ready" for c in conds):
        truth = "True" if ready else "False"
        conds += [
            kserve_condition("PresetsCombined", "True"),
            kserve_condition("WorkloadsReady", truth, "" if ready else "MinimumReplicasUnavailable"),
            kserve_condition("RouterReady", "True"),
            kserve_condition(
                "Ready",
                truth,
                "" if ready else "MinimumReplicasUnavailable",
                "" if ready else "Deployment does not have minimum availability.",
            ),
        ]
    status: dict[str, Any] = {"conditions": conds}
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    if url:
        status["url"] = url
    status["addresses"] = [
        {"url": u}
        for u in (
            addresses if addresses is not None else [f"http://{name}-kserve-workload-svc.models.svc.cluster.local"]
        )
    ]
    return {
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": name, "namespace": "models", "generation": generation},
        "status": status,
    }


def isvc(
    *,
    name: str = "iris",
    namespace: str = "models",
    conditions: list[dict[str, Any]] | None = None,
    address: str | None = None,
    url: str | None = None,
    model_status: dict[str, Any] | None = None,
    runtime: str | None = None,
    model_format: str = "sklearn",
) -> dict[str, Any]:
    """An InferenceService as KServe 0.20 leaves it, with the given status parts."""
    model: dict[str, Any] = {"modelFormat": {"name": model_format}, "storageUri": SKLEARN_URI}
    if runtime:
        model["runtime"] = runtime
    status: dict[str, Any] = {}
    if conditions is not None:
        status["conditions"] = copy.deepcopy(conditions)
    if address is not None:
        status["address"] = {"url": address}
    if url is not None:
        status["url"] = url
    if model_status is not None:
        status["modelStatus"] = model_status
    obj: dict[str, Any] = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"predictor": {"model": model}},
    }
    if status:
        obj["status"] = status
    return obj


def isvc_condition(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    """An InferenceService condition (with the transition time KServe stamps)."""
    out = {"type": type_, "status": status, "lastTransitionTime": "2026-01-01T00:00:00Z"}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


ISVC_READY_CONDITIONS = [
    isvc_condition("IngressReady", "True"),
    isvc_condition("PredictorReady", "True"),
    isvc_condition("Ready", "True"),
]
