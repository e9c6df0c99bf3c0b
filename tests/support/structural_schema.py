"""A small structural validator: the subset of OpenAPI v3 the Provider CRD uses, as the API server
applies it (type, enum, required, and pruning of unknown fields)."""

from __future__ import annotations

from typing import Any


def structural_errors(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Errors a Kubernetes API server would report or silently prune for `value` under `schema`.

    Unknown fields count as errors: the API server would drop them (pruning), losing data.
    """
    errors: list[str] = []
    if path == ".metadata" or (schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema):
        return errors  # ObjectMeta is validated by the API server itself
    expected = schema.get("type")
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    }
    if expected and not checks[expected](value):
        return [f"{path or '.'}: expected {expected}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        for req in schema.get("required") or []:
            if req not in value:
                errors.append(f"{path}.{req}: required")
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            if key in props:
                errors += structural_errors(props[key], sub, f"{path}.{key}")
            elif isinstance(extra, dict):
                errors += structural_errors(extra, sub, f"{path}.{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{path}.{key}: unknown field (would be pruned)")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += structural_errors(schema["items"], item, f"{path}[{i}]")
    return errors
