"""The llmEngine component's `resources` (core/v1 ResourceRequirements): checked, then mirrored.

Limits are mirrored into requests for every compute profile (Guaranteed QoS; the Go provider did it
for cpu only, kserve-behavior §10.22): KServe merges our `main` container over its preset's, and
without requests the preset's defaults would survive the merge and could exceed the user's limits.
Explicit requests are kept. Quantities are checked here because the LLMInferenceService is applied
with server-side apply, where a malformed quantity fails the whole apply far from the field.
"""

from __future__ import annotations

import re
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from actors.interface import ValidationFailed
from provider.errors import first_error_message
from provider.field_rules import check_qualified_name

# The quantity pattern of the Kubernetes CRD schemas (resources.limits/requests).
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
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


def _quantity(where: str, value: Any) -> str | int:
    # YAML reads `cpu: 0.5` as a float, which an int-or-string schema rejects: send it as a string.
    if isinstance(value, float) and value >= 0:
        value = format(value, "g")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValidationFailed(f"{where}: {value!r} {_INVALID}")
    if isinstance(value, int):
        if value < 0:
            raise ValidationFailed(f"{where}: {value} must not be negative")
        return value
    if not re.fullmatch(QUANTITY_PATTERN, value) or value.startswith("-"):
        raise ValidationFailed(f"{where}: {value!r} {_INVALID}")
    return value


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
