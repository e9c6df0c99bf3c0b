"""Switching a live Instance between the predictor and llm topologies is supported cleanly.

The runtime prunes every owned object of the provider's kinds (KServeProvider.owned_resources, the
union over topologies) that desired() no longer returns. So the switch is clean exactly when each
topology's desired() holds none of the other's workload kinds and the provider owns both kinds.
"""

from __future__ import annotations

import copy
from typing import Any

from provider.kserve import KServeProvider
from provider.model import kinds as llm_kinds
from provider.model.catalog import Catalogs
from provider.model.kinds import INFERENCE_SERVICE
from provider.model.settings import ProviderSettings
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.predictor import PredictorTopology
from tests.support.instances import predictor_instance

SETTINGS = ProviderSettings()
LLM_ENGINE = {
    "type": "vllm",
    "parameters": {"modelURI": "hf://facebook/opt-125m"},
}


def provider() -> KServeProvider:
    # Explicit handlers so this holds whether or not the registry line for predictor is in yet.
    return KServeProvider(SETTINGS, topologies={"llm": LlmTopology(SETTINGS), "predictor": PredictorTopology(SETTINGS)})


def as_llm(obj: dict[str, Any]) -> dict[str, Any]:
    """The same Instance after a user switched it to the llm topology."""
    out = copy.deepcopy(obj)
    out["spec"]["topology"] = {"type": "llm"}
    out["spec"]["components"] = {"llmEngine": LLM_ENGINE}
    return out


def kinds_of(objects: list[dict[str, Any]]) -> set[str]:
    return {o["kind"] for o in objects}


def test_provider_owns_both_topologies_kinds() -> None:
    owned = set(provider().owned_resources())
    assert INFERENCE_SERVICE in owned
    assert {llm_kinds.LLM_INFERENCE_SERVICE, llm_kinds.LLM_INFERENCE_SERVICE_CONFIG} <= owned


def test_predictor_desires_no_llm_objects() -> None:
    objects = provider().render(predictor_instance(), catalogs=Catalogs())
    assert kinds_of(objects) == {"InferenceService"}


def test_llm_desires_no_inference_service() -> None:
    """predictor → llm: the InferenceService is not desired any more, so the runtime prunes it."""
    objects = provider().render(as_llm(predictor_instance()), catalogs=Catalogs())
    assert "LLMInferenceService" in kinds_of(objects)
    assert "InferenceService" not in kinds_of(objects)


def test_same_name_does_not_collide() -> None:
    """Both workloads are named after the Instance, but they are different kinds: pruning by
    (kind, name) removes the old one and leaves the new one."""
    predictor_obj = provider().render(predictor_instance(), catalogs=Catalogs())[0]
    llm_objects = provider().render(as_llm(predictor_instance()), catalogs=Catalogs())
    llm_workload = next(o for o in llm_objects if o["kind"] == "LLMInferenceService")
    assert predictor_obj["metadata"]["name"] == llm_workload["metadata"]["name"] == "iris"
    assert predictor_obj["apiVersion"] == "serving.kserve.io/v1beta1"
    assert llm_workload["apiVersion"] == "serving.kserve.io/v1alpha2"
