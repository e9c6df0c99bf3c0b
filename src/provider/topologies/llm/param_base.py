"""What the llm topology's strict parameter models share: the wire prefixes of their messages,
rule errors shown verbatim, flags that accept the UI's strings, and the published-schema cleanup.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from provider.rules.error_messages import error_message, first_error_message
from provider.rules.quote import quote

RULE_ERROR: Final = "rule"
ENGINE_PREFIX: Final = "llmEngine.parameters"
TOPOLOGY_PREFIX: Final = "topology.parameters"
INT32_MAX: Final = 2**31 - 1
INT32_MIN: Final = -(2**31)
# vLLM's smallest CPU KV cache (GiB); smaller values are raised to it, as the Go provider did.
MIN_KV_CACHE_SPACE_GI: Final = 1

# A name KServe and Kubernetes use as an object name (baseRefs): an RFC 1123 subdomain.
OBJECT_NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def rule_error(message: str) -> PydanticCustomError:
    """A validation error shown exactly as written (no `<field>: ` prefix)."""
    return PydanticCustomError(RULE_ERROR, message)


def message_of(prefix: str, exc: ValidationError) -> str:
    """The user-facing message of the first error: verbatim for rules, else `<prefix>.<field>: …`."""
    first = exc.errors(include_url=False)[0]
    if first["type"] == RULE_ERROR:
        return str(first["msg"])
    return first_error_message(prefix, exc)


def messages_of(prefix: str, exc: ValidationError, *, skip: tuple[str, ...] = ()) -> list[str]:
    """The user-facing message of every error, in field order (see message_of), but for errors in
    the fields named in `skip` (already reported in other words)."""
    return [
        str(err["msg"]) if err["type"] == RULE_ERROR else error_message(prefix, err)
        for err in exc.errors(include_url=False)
        if not (err["loc"] and err["loc"][0] in skip)
    ]


# -- flags ---------------------------------------------------------------------------------------

TRUE_WORDS: Final = ("true", "1", "enabled", "yes")
FALSE_WORDS: Final = ("false", "0", "disabled", "no", "")


def _parse_flag(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in TRUE_WORDS:
            return True
        if text in FALSE_WORDS:
            return False
        raise PydanticCustomError("flag", "invalid boolean value {value}", {"value": quote(value)})
    return value


Flag = Annotated[
    bool,
    BeforeValidator(_parse_flag),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "boolean"},
                {"type": "string", "enum": [w for w in TRUE_WORDS + FALSE_WORDS if w]},
            ]
        }
    ),
]


def publish_schema(schema: dict[str, Any]) -> None:
    """Publish optional fields as their plain type: a JSON `null` means "unset" (validation drops
    it), Kubernetes structural schemas reject an `anyOf` with a `null` branch, and the titles are
    noise next to the descriptions."""
    schema.pop("title", None)
    for prop in (schema.get("properties") or {}).values():
        prop.pop("title", None)
        branches = prop.get("anyOf")
        if branches is None:
            continue
        kept = [b for b in branches if b.get("type") != "null"]
        if len(kept) != len(branches):
            del prop["anyOf"]
            if len(kept) == 1:
                prop.update(kept[0])
            else:
                prop["anyOf"] = kept
        if "default" in prop and prop["default"] is None:
            del prop["default"]


class StrictParams(BaseModel):
    """Strict, frozen, no unknown keys; optional fields published as their plain type."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, json_schema_extra=publish_schema)
