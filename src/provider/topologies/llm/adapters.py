"""The LoRA adapters an llm Instance serves, resolved and checked (validation rule 10).

`loraDeployment` unset serves the explicit `lora.adapters`; `enabled` serves the catalog adapters
chosen in loraSlot1..3 (chart value loraAdapters); `disabled` serves none. Each catalog entry may
say which base model it was trained for (`baseModel`, a model URI): an adapter for another base
cannot be loaded by vLLM (the model would never start), so it is refused naming both models. Every
adapter's problem is reported, not only the first one's (provider.rules.problems). Each `pvc://`
claim holds one URI of the Instance's (the model's or an adapter's).
"""

from __future__ import annotations

import re
from typing import Final

from actors import ValidationFailed
from provider.model.catalog import Catalogs
from provider.rules.problems import Problems
from provider.rules.quote import quote
from provider.topologies.llm.inputs import Adapter, LlmInputs
from provider.topologies.llm.param_base import ENGINE_PREFIX
from provider.topologies.llm.params import LlmEngineParameters
from provider.topologies.llm.uris import scheme_of, uri_problem

# Adapter names end up as vLLM --lora-modules names and in KServe paths.
ADAPTER_NAME_PATTERN: Final = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"


def same_model(a: str, b: str) -> bool:
    """Two model URIs name the same model: equal but for surrounding blanks and a trailing `/`, and
    but for case on Hugging Face, whose repository ids are case-insensitive."""
    left, right = a.strip().rstrip("/"), b.strip().rstrip("/")
    if scheme_of(left) == "hf" and scheme_of(right) == "hf":
        return left.casefold() == right.casefold()
    return left == right


def _catalog_adapters(engine: LlmEngineParameters, catalogs: Catalogs, problems: Problems) -> list[Adapter]:
    """The slots of `loraDeployment: enabled`, each a known, distinct catalog entry for this model."""
    slots = engine.lora_slots()
    if not slots:
        problems.add(f"{ENGINE_PREFIX}.loraDeployment enabled requires at least one adapter slot")
        return []
    chosen_by: dict[str, str] = {}
    adapters: list[Adapter] = []
    for field, name in slots:
        if name in chosen_by:
            problems.add(f"{ENGINE_PREFIX}.{chosen_by[name]} and {field} both select adapter {quote(name)}")
            continue
        chosen_by[name] = field
        entry = catalogs.adapter(name)
        if entry is None:
            problems.add(
                f"{ENGINE_PREFIX}.{field} references unknown adapter {quote(name)} (add it to chart loraAdapters)"
            )
            continue
        if entry.base_model and not same_model(entry.base_model, engine.model_uri):
            problems.add(
                f"{ENGINE_PREFIX}.{field}: adapter {quote(name)} is for the base model {quote(entry.base_model)}, "
                f"not for this Instance's model {quote(engine.model_uri)}; choose an adapter made for it"
            )
            continue
        adapters.append(Adapter(name=entry.name, uri=entry.uri, field=f"{ENGINE_PREFIX}.{field}", from_catalog=True))
    return adapters


def _explicit_adapters(engine: LlmEngineParameters) -> list[Adapter]:
    specs = engine.lora.adapters if engine.lora is not None else []
    return [
        Adapter(name=spec.name.strip(), uri=spec.uri.strip(), field=f"{ENGINE_PREFIX}.lora.adapters[{i}]")
        for i, spec in enumerate(specs)
    ]


def _selected_adapters(engine: LlmEngineParameters, catalogs: Catalogs, problems: Problems) -> list[Adapter]:
    """Explicit adapters next to an explicit loraDeployment are contradictory (Go deployed them
    even with `disabled`, kserve-behavior §10.16), so they are an error."""
    explicit = _explicit_adapters(engine)
    if engine.lora_deployment is None:
        return explicit
    if explicit:
        problems.add(
            f"{ENGINE_PREFIX}.lora.adapters cannot be combined with loraDeployment "
            f'"{engine.lora_deployment}"; remove loraDeployment to serve explicit adapters, '
            "or choose catalog adapters with loraSlot1..3"
        )
        return []
    if engine.lora_deployment == "disabled":
        return []
    return _catalog_adapters(engine, catalogs, problems)


def _check_adapter(adapter: Adapter, base: str, seen: dict[str, str]) -> None:
    """Go rule 12, naming the field the adapter came from (Go always said lora.adapters[i])."""
    if adapter.from_catalog:
        what, fix = f"{adapter.field}: catalog adapter {quote(adapter.name)}", " (fix chart loraAdapters)"
        if adapter.name == base:
            raise ValidationFailed(
                f"{what} has the same name as the base served model {quote(base)}; set {ENGINE_PREFIX}.modelName "
                "to another name or choose another adapter"
            )
        if not re.fullmatch(ADAPTER_NAME_PATTERN, adapter.name):
            raise ValidationFailed(f"{what} is not a valid adapter name{fix}")
        problem = uri_problem(adapter.uri)
        if problem is not None:
            raise ValidationFailed(f"{what} has an invalid uri {quote(adapter.uri)}: {problem}{fix}")
        return
    where = adapter.field
    if not adapter.name:
        raise ValidationFailed(f"{where}.name is required")
    if adapter.name in (".", ".."):
        raise ValidationFailed(f"{where}.name {quote(adapter.name)} is not a valid adapter name")
    if not re.fullmatch(ADAPTER_NAME_PATTERN, adapter.name):
        raise ValidationFailed(
            f'{where}.name {quote(adapter.name)} is not a valid adapter name (letters, digits, ".", "_" and "-")'
        )
    if adapter.name == base:
        raise ValidationFailed(
            f"{where}.name {quote(adapter.name)} must differ from the base served model name {quote(base)}"
        )
    if adapter.name in seen:
        raise ValidationFailed(f"{where}.name {quote(adapter.name)} duplicates {seen[adapter.name]}.name")
    if not adapter.uri:
        raise ValidationFailed(f"{where}.uri is required")
    problem = uri_problem(adapter.uri)
    if problem is not None:
        raise ValidationFailed(f"invalid {where}.uri {quote(adapter.uri)}: {problem}")


def pvc_claim(uri: str) -> str | None:
    """The claim of a `pvc://<claim>/<path>` URI (as KServe's ParsePvcURI splits it), else None."""
    return uri.partition("://")[2].split("/", 1)[0] if scheme_of(uri) == "pvc" else None


def _check_claims_mounted_once(model_uri: str, adapters: list[Adapter], problems: Problems) -> None:
    """KServe mounts each `pvc://` URI as a volume of its own, and a pod with two volumes of one
    claim never starts (kubernetes/kubernetes#132921; seen on a real node): one URI per claim."""
    mounted: dict[str, str] = {}
    if (claim := pvc_claim(model_uri)) is not None:
        mounted[claim] = f"{ENGINE_PREFIX}.modelURI"
    for adapter in adapters:
        if (claim := pvc_claim(adapter.uri)) is None:
            continue
        where = adapter.field if adapter.from_catalog else f"{adapter.field}.uri"
        if claim in mounted:
            problems.add(
                f"{where} {quote(adapter.uri)} is on claim {quote(claim)}, as {mounted[claim]}: KServe mounts "
                "each pvc:// URI as a volume of its own, and a pod with two volumes of one claim never starts "
                "(it stays ContainerCreating); put the adapter on a claim of its own"
            )
            continue
        mounted[claim] = where


def resolve_adapters(inputs: LlmInputs, catalogs: Catalogs) -> tuple[Adapter, ...]:
    """The adapters to serve, or ValidationFailed naming every adapter's problem."""
    engine = inputs.engine
    problems = Problems()
    adapters = _selected_adapters(engine, catalogs, problems)
    seen: dict[str, str] = {}
    for adapter in adapters:
        with problems.collect():
            _check_adapter(adapter, inputs.served_model_name, seen)
        seen.setdefault(adapter.name, adapter.field.removeprefix(f"{ENGINE_PREFIX}.lora."))
    if engine.disable_storage_initializer:
        for adapter in adapters:
            scheme = scheme_of(adapter.uri)
            if scheme in ("hf", "s3"):
                problems.add(
                    f"{adapter.field} uses {scheme}:// which requires the storage initializer; "
                    "set disableStorageInitializer to false"
                )
    _check_claims_mounted_once(engine.model_uri, adapters, problems)
    problems.raise_any()
    return tuple(adapters)
