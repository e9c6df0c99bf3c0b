"""Instances and InferenceService statuses for the predictor tests."""

from __future__ import annotations

import copy
from typing import Any

from provider.model.instance import Instance

SKLEARN_URI = "gs://kfserving-examples/models/sklearn/1.0/model"


def instance_dict(
    parameters: dict[str, Any] | None = None,
    *,
    name: str = "iris",
    namespace: str = "models",
    component: dict[str, Any] | None = None,
    with_component: bool = True,
    version: str | None = "0.20",
    topology: str = "predictor",
) -> dict[str, Any]:
    params = {"modelFormat": "sklearn", "storageURI": SKLEARN_URI} if parameters is None else parameters
    spec: dict[str, Any] = {"providerRef": {"name": "provider-kserve"}, "topology": {"type": topology}}
    if version is not None:
        spec["version"] = version
    if with_component:
        predictor: dict[str, Any] = {"type": "modelServer", "parameters": params}
        predictor.update(component or {})
        spec["components"] = {"predictor": predictor}
    return {
        "apiVersion": "core.openeverest.io/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": name, "namespace": namespace, "uid": "1234", "generation": 1},
        "spec": spec,
    }


def instance(parameters: dict[str, Any] | None = None, **kwargs: Any) -> Instance:
    return Instance.model_validate(instance_dict(parameters, **kwargs))


def params(**overrides: Any) -> dict[str, Any]:
    """Valid parameters with `overrides` applied; an override of None removes the key."""
    out: dict[str, Any] = {"modelFormat": "sklearn", "storageURI": SKLEARN_URI}
    for key, value in overrides.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


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


def cond(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    out = {"type": type_, "status": status, "lastTransitionTime": "2026-01-01T00:00:00Z"}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


READY_CONDITIONS = [
    cond("IngressReady", "True"),
    cond("PredictorReady", "True"),
    cond("Ready", "True"),
]
