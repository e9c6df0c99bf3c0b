"""The llm topology in-process, for its unit tests: settings, catalogs, what validation says and
what `desired` renders for an Instance built by tests.support.instances."""

from __future__ import annotations

from typing import Any

import pytest

from actors.interface import KubeObject, ValidationFailed
from provider.model import kinds
from provider.model.catalog import Catalogs, LoraAdapter
from provider.model.settings import ProviderSettings
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.llm.inputs import LlmInputs
from provider.topologies.llm.validation import validate_llm
from provider.topologies.protocol import Live, nothing_live
from tests.support.instances import as_model, llm_instance

ALL_KINDS = frozenset(kinds.OWNED)
REQUIRED_KINDS = ALL_KINDS - kinds.OPTIONAL

CATALOG = Catalogs(
    lora_adapters=(
        LoraAdapter("SmolLM2 SFT", "smollm2-135m-sft", "hf://Premchan369/smollm2-135m-sft-lora"),
        LoraAdapter("Qwen SFT", "qwen2.5-0.5b-sft", "hf://lewtun/Qwen2.5-0.5B-SFT-LoRA"),
        LoraAdapter("Qwen Maestro", "qwen2.5-0.5b-maestro", "hf://umsa-v1/maestro_Qwen2.5_0.5B_grupo1"),
    )
)

GATEWAY_SETTINGS = {"ai_gateway_enabled": True, "ai_gateway_name": "kserve-gw", "ai_gateway_namespace": "kserve"}


def settings(**overrides: Any) -> ProviderSettings:
    return ProviderSettings(**overrides)


def inputs(
    engine: dict[str, Any] | None = None,
    *,
    settings_: ProviderSettings | None = None,
    catalogs: Catalogs = CATALOG,
    **kwargs: Any,
) -> LlmInputs:
    return validate_llm(as_model(llm_instance(engine=engine, **kwargs)), catalogs, settings_ or settings())


def desired(
    engine: dict[str, Any] | None = None,
    *,
    settings_: ProviderSettings | None = None,
    available: frozenset[Any] = ALL_KINDS,
    catalogs: Catalogs = CATALOG,
    live: Live = nothing_live,
    **kwargs: Any,
) -> dict[str, KubeObject]:
    """Desired objects by kind (each kind appears at most once per Instance); `live`: what exists."""
    handler = LlmTopology(settings_ or settings())
    parsed = as_model(llm_instance(engine=engine, **kwargs))
    objects = handler.desired(parsed, handler.validate(parsed, catalogs), available, live)
    by_kind = {obj["kind"]: obj for obj in objects}
    assert len(by_kind) == len(objects)
    return by_kind


def llmisvc_spec(engine: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    spec: dict[str, Any] = desired(engine, **kwargs)["LLMInferenceService"]["spec"]
    return spec


# -- validation outcomes --------------------------------------------------------------------------


def fails(engine: dict[str, Any] | None = None, *, settings_: Any = None, **kwargs: Any) -> str:
    with pytest.raises(ValidationFailed) as info:
        validate_llm(as_model(llm_instance(engine=engine, **kwargs)), CATALOG, settings_ or settings())
    return info.value.message


def passes(engine: dict[str, Any] | None = None, *, settings_: Any = None, **kwargs: Any) -> None:
    validate_llm(as_model(llm_instance(engine=engine, **kwargs)), CATALOG, settings_ or settings())
