"""The published JSON schema of a parameters model, and its OpenAPI v3 form for the Provider CR."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from provider.generate.definition import DefinitionError

# JSON-schema keywords that OpenAPI v3 (as Kubernetes and the OpenEverest core read it) knows.
OPENAPI_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "description",
        "default",
        "enum",
        "nullable",
        "example",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
    }
)
# JSON-schema keywords with no OpenAPI v3 meaning that only annotate: dropped.
DROPPED_KEYWORDS = frozenset(
    {"title", "$schema", "$id", "$comment", "readOnly", "writeOnly", "deprecated", "discriminator"}
)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The published JSON schema: exactly what pydantic generates, with wire names."""
    return model.model_json_schema(by_alias=True)


def openapi_v3(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic (JSON Schema 2020-12) schema as a self-contained OpenAPI v3 schema.

    `$ref`s are inlined, `X | None` becomes `X` with `nullable: true`, `const` becomes a one-value
    `enum`, numeric `exclusiveMinimum`/`exclusiveMaximum` become the OpenAPI v3.0 boolean form,
    `examples` becomes `example`, titles are dropped. Anything else with no OpenAPI v3 meaning is an
    error, so a model change cannot silently publish a schema the core cannot read.
    """
    defs = schema.get("$defs") or {}
    return _convert(dict(schema), defs, "#", ())


def _convert(node: Mapping[str, Any], defs: Mapping[str, Any], where: str, seen: tuple[str, ...]) -> dict[str, Any]:
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        prefix = "#/$defs/"
        if not isinstance(ref, str) or not ref.startswith(prefix) or ref[len(prefix) :] not in defs:
            raise DefinitionError(f"{where}: unresolvable $ref {ref!r}")
        name = ref[len(prefix) :]
        if name in seen:
            raise DefinitionError(f"{where}: recursive schema {name} cannot be inlined")
        target = _convert(defs[name], defs, f"{where}->{name}", (*seen, name))
        siblings = _convert(node, defs, where, seen)
        return {**target, **siblings}

    out: dict[str, Any] = {}
    nullable = False
    for branch_key in ("anyOf", "oneOf"):
        branches = node.pop(branch_key, None)
        if branches is None:
            continue
        kept = [b for b in branches if b != {"type": "null"}]
        nullable = nullable or len(kept) != len(branches)
        if len(kept) == 1:
            merged = _convert(kept[0], defs, where, seen)
            out.update({k: v for k, v in merged.items() if k not in out})
        elif kept:
            out[branch_key] = [_convert(b, defs, f"{where}/{branch_key}", seen) for b in kept]
    for key, value in node.items():
        if key in DROPPED_KEYWORDS or key == "$defs":
            continue
        if key.startswith("x-"):
            out[key] = copy.deepcopy(value)
        elif key == "const":
            out["enum"] = [value]
        elif key == "examples":
            if isinstance(value, list) and value:
                out["example"] = value[0]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
        elif key == "default" and value is None:
            continue
        elif key == "properties":
            out[key] = {p: _convert(s, defs, f"{where}.{p}", seen) for p, s in value.items()}
        elif key in ("items", "not") or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = _convert(value, defs, f"{where}/{key}", seen)
        elif key == "allOf":
            out[key] = [_convert(s, defs, f"{where}/allOf", seen) for s in value]
        elif key == "type" and value == "null":
            nullable = True
        elif key in OPENAPI_KEYWORDS:
            out[key] = copy.deepcopy(value)
        else:
            raise DefinitionError(f"{where}: JSON-schema keyword {key!r} has no OpenAPI v3 equivalent")
    if nullable:
        out["nullable"] = True
    return out
