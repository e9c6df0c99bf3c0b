"""The chart's catalogs (what the shared catalog actors load, what validation and the form read), and
their parsing: the LoRA adapter catalog (`LORA_ADAPTER_CATALOG`, a JSON list of
{label, name, uri, baseModel}) and the model catalog (`MODEL_CATALOG`, a JSON list of {label, uri, gated}).

`baseModel` is the URI of the model an adapter was trained on: the llm topology refuses an adapter
whose base is not the Instance's model. An entry without it is not checked (catalogs written before
the field existed keep working).

The Go provider's rules are kept: entries without a name or uri are skipped and a later entry with
the same name replaces an earlier one. Unlike Go, a malformed catalog is not silently empty:
`parse_lora_catalog` raises CatalogError. Used by the LoRA catalog actor (provider.shared_actors.catalog_actors,
which keeps the last good catalog on error) and by `provider-kserve render --lora-catalog`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

from provider.rules.error_messages import first_error_message

LORA_CATALOG_ENV: Final = "LORA_ADAPTER_CATALOG"
MODEL_CATALOG_ENV: Final = "MODEL_CATALOG"


@dataclass(frozen=True)
class LoraAdapter:
    label: str
    name: str
    uri: str
    # The URI of the model the adapter was trained on; "" when the catalog does not say.
    base_model: str = ""


@dataclass(frozen=True)
class CatalogModel:
    label: str
    uri: str
    gated: bool = False


@dataclass(frozen=True)
class Catalogs:
    """The chart's model and LoRA catalogs as last loaded by their shared actors."""

    models: Sequence[CatalogModel] = ()
    lora_adapters: Sequence[LoraAdapter] = ()

    def adapter(self, name: str) -> LoraAdapter | None:
        return next((a for a in self.lora_adapters if a.name == name), None)


class CatalogError(ValueError):
    """The catalog text is not a JSON list of {label, name, uri} objects."""


class _Entry(BaseModel):
    # Unknown keys are tolerated: the chart value may carry UI-only fields.
    model_config = ConfigDict(extra="ignore", strict=True)

    label: str = ""
    name: str = ""
    uri: str = ""
    baseModel: str = ""  # noqa: N815 - the chart value's key


class _Catalog(BaseModel):
    model_config = ConfigDict(strict=True)

    entries: list[_Entry]


def parse_lora_catalog(text: str) -> tuple[LoraAdapter, ...]:
    """The adapters of a catalog document, in first-seen order, last entry per name winning."""
    if not text.strip():
        return ()
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"LoRA catalog is not valid JSON: {exc}") from None
    try:
        catalog = _Catalog.model_validate({"entries": raw})
    except ValidationError as exc:
        # loc is ("entries", index, field): show it as `entry 2.uri` rather than our wrapper's name.
        where = first_error_message("", exc).removeprefix("entries")
        raise CatalogError(f"LoRA catalog{' entry ' + where[1:] if where.startswith('.') else where}") from None
    by_name: dict[str, LoraAdapter] = {}
    for entry in catalog.entries:
        name, uri = entry.name.strip(), entry.uri.strip()
        if name and uri:
            by_name[name] = LoraAdapter(
                label=entry.label or name, name=name, uri=uri, base_model=entry.baseModel.strip()
            )
    return tuple(by_name.values())


def lora_catalog_from(path: str | None, environ: Mapping[str, str]) -> Catalogs:
    """The LoRA catalog a one-shot CLI command uses: the `--lora-catalog` file, else the
    environment's `LORA_ADAPTER_CATALOG`. Raises OSError or CatalogError."""
    text = Path(path).read_text(encoding="utf-8") if path else environ.get(LORA_CATALOG_ENV, "")
    return Catalogs(lora_adapters=parse_lora_catalog(text))


class _ModelEntry(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    label: str = ""
    uri: str
    gated: bool = False


class _ModelList(BaseModel):
    entries: list[_ModelEntry]


def parse_model_catalog(text: str) -> tuple[CatalogModel, ...]:
    """Chart `models:` as JSON: [{label, uri, gated}]. Later entries win per uri."""
    if not text.strip():
        return ()
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"model catalog is not valid JSON: {exc}") from None
    try:
        entries = _ModelList.model_validate({"entries": raw}).entries
    except ValidationError as exc:
        raise CatalogError(f"model catalog {first_error_message('', exc).removeprefix('entries.')}") from None
    by_uri = {e.uri.strip(): CatalogModel(label=e.label or e.uri, uri=e.uri.strip(), gated=e.gated) for e in entries}
    return tuple(m for uri, m in by_uri.items() if uri)
