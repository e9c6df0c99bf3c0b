"""KServe's own conditions (Knative-style, on LLMInferenceService and InferenceService), read and
passed through onto the Instance as `KServe<Type>` conditions with valid metav1 reasons."""

from __future__ import annotations

import re
from typing import Any, Final

from actors.interface import Condition, KubeObject

CONDITION_PREFIX: Final = "KServe"

# metav1.Condition.reason: CamelCase-ish, at most 1024 characters.
_REASON: Final = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_STATUSES: Final = frozenset({"True", "False", "Unknown"})


def conditions(obj: KubeObject) -> list[dict[str, Any]]:
    raw = (obj.get("status") or {}).get("conditions") or []
    return [c for c in raw if isinstance(c, dict) and isinstance(c.get("type"), str) and c["type"]]


def condition(obj: KubeObject, type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions(obj) if c["type"] == type_), None)


def is_true(cond: dict[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == "True"


def _fallback_reason(type_: str, status: str) -> str:
    """For a condition KServe writes without a reason: what the condition itself says, so
    `Stopped=False` (the service runs) reads `NotStopped`, never a filler such as `NotReady`."""
    if status == "Unknown":
        return "Unknown"
    words = re.findall(r"[A-Za-z0-9]+", type_)
    camel = "".join(w[:1].upper() + w[1:] for w in words).lstrip("0123456789")[:1000] or "Condition"
    return camel if status == "True" else f"Not{camel}"


def _reason(raw: Any, type_: str, status: str) -> str:
    """A valid metav1 reason: KServe's when it is one, else its words in CamelCase (KServe 0.20 puts
    sentences such as "Predictor ingress not created" there), else derived from the condition."""
    text = str(raw or "")
    if _REASON.fullmatch(text) and len(text) <= 1024:
        return text
    words = re.findall(r"[A-Za-z0-9]+", text)
    camel = "".join(w[:1].upper() + w[1:] for w in words).lstrip("0123456789")[:1024]
    return camel or _fallback_reason(type_, status)


def passthrough_conditions(obj: KubeObject) -> list[Condition]:
    out: list[Condition] = []
    for cond in conditions(obj):
        status = str(cond.get("status"))
        if status not in _STATUSES:
            status = "Unknown"
        out.append(
            Condition(
                type=CONDITION_PREFIX + cond["type"],
                status=status,
                reason=_reason(cond.get("reason"), cond["type"], status),
                message=str(cond.get("message") or ""),
            )
        )
    return out
