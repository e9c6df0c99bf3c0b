"""The inline `llmEngine.parameters.config`: an LLMInferenceServiceConfig spec body.

It becomes the Instance-owned LLMInferenceServiceConfig `<instance>-config`, attached last in
baseRefs. It is checked here, at validation time, because the API server would only reject it at
apply time (a type mismatch), or worse silently prune it (an unknown, misspelled key): both far
away from the field the user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from provider.llm.quote import quote

# Top-level LLMInferenceServiceSpec fields (serving.kserve.io_llminferenceserviceconfigs.yaml,
# v1alpha2) and the JSON type each must have.
SPEC_FIELDS: Final[Mapping[str, type]] = {
    "annotations": dict,
    "baseRefs": list,
    "kvCacheOffloading": dict,
    "labels": dict,
    "model": dict,
    "parallelism": dict,
    "prefill": dict,
    "replicas": int,
    "router": dict,
    "scaling": dict,
    "storageInitializer": dict,
    "template": dict,
    "tracing": dict,
    "worker": dict,
}
_JSON_TYPE: Final[Mapping[type, str]] = {dict: "a mapping", list: "a list", int: "an integer"}


class ConfigError(ValueError):
    """Why the inline config cannot be used (the message names no field: the caller adds it)."""


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {exc}"


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def parse_config(value: str | Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec body, or None when the config is blank/empty. Raises ConfigError."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            body = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ConfigError(_yaml_problem(exc)) from None
    else:
        body = dict(value)
    if body is None:
        return None
    if not isinstance(body, dict):
        raise ConfigError(f"expected a mapping (an LLMInferenceServiceSpec body), got {_describe(body)}")
    for key, item in body.items():
        expected = SPEC_FIELDS.get(str(key))
        if expected is None:
            known = ", ".join(sorted(SPEC_FIELDS))
            raise ConfigError(f"unknown field {quote(key)} (LLMInferenceServiceSpec fields: {known})")
        wrong_int = expected is int and (isinstance(item, bool) or not isinstance(item, int))
        if wrong_int or (expected is not int and not isinstance(item, expected)):
            raise ConfigError(f"{key} must be {_JSON_TYPE[expected]}, got {_describe(item)}")
    model = body.get("model")
    if isinstance(model, dict) and not model.get("uri"):
        # The CRD requires model.uri whenever model is present in a config.
        raise ConfigError("model.uri is required when model is set (the Instance's modelURI wins anyway)")
    return body or None
