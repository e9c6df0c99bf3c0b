"""KServe's own conditions (Knative-style, on LLMInferenceService and InferenceService), read and
passed through onto the Instance as `KServe<Type>` conditions with valid metav1 reasons."""

from __future__ import annotations

import re
from typing import Any, Final

from actors import Condition, KubeObject, valid_reason

CONDITION_PREFIX: Final = "KServe"
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


def passthrough_conditions(obj: KubeObject) -> list[Condition]:
    """KServe's conditions with KServe's reason when it is a valid one, else its words in
    CamelCase (KServe 0.20 puts sentences such as "Predictor ingress not created" there), else one
    derived from the condition itself."""
    out: list[Condition] = []
    for cond in conditions(obj):
        status = str(cond.get("status"))
        if status not in _STATUSES:
            status = "Unknown"
        out.append(
            Condition(
                type=CONDITION_PREFIX + cond["type"],
                status=status,
                reason=valid_reason(cond.get("reason"), status, _fallback_reason(cond["type"], status)),
                message=str(cond.get("message") or ""),
            )
        )
    return out


def stale_generation(obj: KubeObject, kind: str) -> str | None:
    """Why KServe's status cannot be trusted for the current spec yet, or None.

    Status describes the spec of `status.observedGeneration`. Behind `metadata.generation`, it is
    about an older spec; absent after the spec was edited (generation above 1), nothing says which
    spec it describes, so a Ready from before the edit is not taken for the edited spec either.
    """
    generation = (obj.get("metadata") or {}).get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    if not isinstance(generation, int) or isinstance(generation, bool):
        return None
    if isinstance(observed, int) and not isinstance(observed, bool):
        if observed < generation:
            return f"Waiting for KServe to reconcile the {kind} (generation {generation}, observed {observed})"
        return None
    if generation > 1:
        return f"Waiting for KServe to reconcile the {kind} (generation {generation}, not yet observed)"
    return None
