"""A component's `resources` (core/v1 ResourceRequirements): checked, canonicalised, then mirrored.

Limits are mirrored into requests for every compute profile (Guaranteed QoS; the Go provider did it
for cpu only, kserve-behavior §10.22): KServe merges our `main` container over its preset's, and
without requests the preset's defaults would survive the merge and could exceed the user's limits.
Explicit requests are kept. Quantities are checked here because the LLMInferenceService is applied
with server-side apply, where a malformed quantity fails the whole apply far from the field, and
written in Kubernetes' canonical form (`0.5` → `500m`, `1024Mi` → `1Gi`, `10` → `"10"`,
provider.rules.quantity) as the Go provider's typed objects were, so they diff cleanly against what other
Kubernetes tools write.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from actors import ValidationFailed
from provider.rules.error_messages import first_error_message
from provider.rules.fields import check_qualified_name
from provider.rules.quantity import MAX_LENGTH, QuantityError, canonical_quantity

_INVALID: Final = "is not a valid quantity (e.g. 500m, 1, 2Gi)"


class _Claim(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: str = Field(min_length=1)
    request: str | None = None


class _Requirements(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    limits: dict[str, Any] = Field(default_factory=dict)
    requests: dict[str, Any] = Field(default_factory=dict)
    claims: list[_Claim] = Field(default_factory=list)


def _quantity(where: str, value: Any) -> str:
    """`value` as its canonical quantity string. YAML reads `cpu: 0.5` as a float and `cpu: 2` as an
    int; both become strings (`500m`, `"2"`), as Kubernetes writes them."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValidationFailed(f"{where}: {value!r} {_INVALID}")
    # repr, not str formatting: the shortest text that reads back as the same float (0.1234567 stays).
    text = repr(value) if isinstance(value, float) else str(value)
    if text.startswith("-"):
        raise ValidationFailed(f"{where}: {text} must not be negative")
    if len(text) > MAX_LENGTH:
        raise ValidationFailed(f"{where}: a quantity has at most {MAX_LENGTH} characters (e.g. 500m, 1, 2Gi)")
    try:
        return canonical_quantity(text)
    except QuantityError:
        raise ValidationFailed(f"{where}: {value!r} {_INVALID}") from None


def container_resources(raw: dict[str, Any] | None, prefix: str) -> dict[str, Any]:
    """The `main` container's resources with limits mirrored into requests; {} when unset.

    Raises ValidationFailed naming the field, e.g. `llmEngine.resources.limits.cpu: 'x' is not a
    valid quantity (e.g. 500m, 1, 2Gi)`.
    """
    if not raw:
        return {}
    try:
        spec = _Requirements.model_validate(raw)
    except ValidationError as exc:
        raise ValidationFailed(first_error_message(prefix, exc)) from None
    for section, values in (("limits", spec.limits), ("requests", spec.requests)):
        for name in values:
            check_qualified_name(name, f"{prefix}.{section}")
    limits = {name: _quantity(f"{prefix}.limits.{name}", v) for name, v in spec.limits.items()}
    explicit = {name: _quantity(f"{prefix}.requests.{name}", v) for name, v in spec.requests.items()}
    requests = {**limits, **explicit}
    out: dict[str, Any] = {}
    if limits:
        out["limits"] = limits
    if requests:
        out["requests"] = requests
    if spec.claims:
        out["claims"] = [claim.model_dump(exclude_none=True) for claim in spec.claims]
    return out
