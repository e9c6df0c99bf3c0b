"""Compose Instance.status from a provider's report, the way the OpenEverest runtime does.

Conditions follow metav1 semantics: `lastTransitionTime` moves only when `status` flips, while
reason, message and observedGeneration are refreshed. The composed status is compared with the
stored one so that a pass that changed nothing writes nothing.

What goes into status must be accepted by the Instance CRD whatever the input was, or the write
fails every time and status goes on showing an older truth: messages are cut to MAX_MESSAGE
characters (a 40 000-character URI echoed in a message, a long KServe message), reasons are made
valid metav1 reasons and a condition whose type the CRD would reject is dropped.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Final

import structlog

from actors.interface import ComponentStatus, Condition, ConnectionDetails, KubeObject, Phase

log = structlog.get_logger(__name__)

CONNECTION_DETAILS_READY = "ConnectionDetailsReady"

# Well under the CRD's 32768 for condition messages, and short enough for `kubectl get`.
MAX_MESSAGE: Final = 4096
_ELLIPSIS: Final = " …(truncated)"
# metav1.Condition's type and reason, as the Instance CRD validates them.
_TYPE: Final = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_TYPE_MAX: Final = 316
_REASON: Final = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASON_MAX: Final = 1024
_FALLBACK_REASON: Final = {"True": "Ready", "False": "NotReady", "Unknown": "Unknown"}
# status.components: pods named per component at most (a name is at most 253 characters), and the
# int32 the CRD's counts are.
MAX_POD_REFS: Final = 64
_INT32_MAX: Final = 2**31 - 1
# The fields of a status.components entry as the newest core has them; an older CRD declares fewer
# (no `name`), and only the declared ones are written.
COMPONENT_FIELDS: Final = frozenset({"name", "podRefs", "ready", "total", "state"})


def bounded_message(text: str) -> str:
    """`text` cut to MAX_MESSAGE characters, saying so."""
    if len(text) <= MAX_MESSAGE:
        return text
    return text[: MAX_MESSAGE - len(_ELLIPSIS)] + _ELLIPSIS


def valid_reason(raw: Any, status: str, fallback: str | None = None) -> str:
    """A valid metav1 reason: `raw` when it is one, else its words in CamelCase, else `fallback`,
    else a default for the status."""
    text = str(raw or "")
    if len(text) <= _REASON_MAX and _REASON.fullmatch(text):
        return text
    words = re.findall(r"[A-Za-z0-9]+", text)
    camel = "".join(w[:1].upper() + w[1:] for w in words).lstrip("0123456789")[:_REASON_MAX]
    return camel or fallback or _FALLBACK_REASON.get(status, "Unknown")


def valid_condition_type(type_: str) -> bool:
    return len(type_) <= _TYPE_MAX and _TYPE.fullmatch(type_) is not None


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_conditions(
    existing: Iterable[dict[str, Any]],
    updates: Iterable[Condition],
    generation: int,
    *,
    now: str | None = None,
    keep_unreported: bool = True,
) -> list[dict[str, Any]]:
    """Existing conditions updated by `updates`; without `keep_unreported` only `updates` remain."""
    previous = {c.get("type"): dict(c) for c in existing if isinstance(c, dict)}
    by_type = dict(previous) if keep_unreported else {}
    stamp = now or now_rfc3339()
    for cond in updates:
        if not valid_condition_type(cond.type):
            log.warning("condition type the CRD rejects, dropped", type=cond.type[:100])
            continue
        status = cond.status if cond.status in _FALLBACK_REASON else "Unknown"
        old = previous.get(cond.type)
        transition = old.get("lastTransitionTime") if old and old.get("status") == status else None
        by_type[cond.type] = {
            "type": cond.type,
            "status": status,
            "reason": valid_reason(cond.reason, status) if cond.reason else "Unknown",
            "message": bounded_message(cond.message),
            "observedGeneration": generation,
            "lastTransitionTime": transition or stamp,
        }
    return sorted(by_type.values(), key=lambda c: str(c.get("type")))


def connection_condition(secret_name: str | None, phase: Phase, problem: str | None = None) -> Condition | None:
    if problem:
        return Condition(CONNECTION_DETAILS_READY, "False", "NameClash", problem)
    if secret_name:
        return Condition(
            CONNECTION_DETAILS_READY,
            "True",
            "Available",
            f"Connection details are available in Secret {secret_name}",
        )
    if phase == Phase.READY:
        return Condition(CONNECTION_DETAILS_READY, "False", "NotReported", "Provider did not report connection details")
    return None


def component_entries(components: Iterable[ComponentStatus], fields: frozenset[str]) -> list[dict[str, Any]]:
    """status.components as the CRD takes it: its declared `fields` only, counts within int32,
    at most MAX_POD_REFS pod names each, in the order reported."""
    entries: list[dict[str, Any]] = []
    for component in components:
        entry = {
            "name": component.name,
            "podRefs": [{"name": pod} for pod in sorted(component.pods)[:MAX_POD_REFS]],
            "ready": min(max(component.ready, 0), _INT32_MAX),
            "total": min(max(component.total, 0), _INT32_MAX),
            "state": bounded_message(component.state),
        }
        entries.append({k: v for k, v in entry.items() if k in fields})
    return entries


def compose_status(
    instance: KubeObject,
    *,
    phase: Phase,
    message: str,
    conditions: Iterable[Condition],
    complete: bool,
    version: str | None = None,
    connection: ConnectionDetails | None = None,
    connection_secret: str | None = None,
    connection_problem: str | None = None,
    status_connection_supported: bool = False,
    components: Iterable[ComponentStatus] = (),
    component_fields: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The full new status. With `complete`, `conditions` is the whole truth of this pass and
    conditions not reported (e.g. of a topology switched away from) are dropped; otherwise (an
    error pass that learned little) earlier conditions are kept and only the reported ones change.
    `components` go to status.components with the `component_fields` the installed CRD declares
    (none declared: not written); a complete pass that reports none removes them."""
    current = copy.deepcopy(instance.get("status") or {})
    generation = int(instance["metadata"].get("generation") or 0)
    updates = list(conditions)
    conn_cond = connection_condition(connection_secret, phase, connection_problem)
    if conn_cond is not None:
        updates.append(conn_cond)
    new = dict(current)
    new["phase"] = phase.value
    new["message"] = bounded_message(message)
    new["conditions"] = merge_conditions(
        current.get("conditions") or [], updates, generation, keep_unreported=not complete
    )
    if version:
        new["version"] = version
    if connection_secret:
        new["connectionSecretRef"] = {"name": connection_secret}
    if status_connection_supported and connection is not None and not connection.is_empty():
        new["connection"] = {
            k: v for k, v in {"host": connection.host, "port": connection.port, "url": connection.uri}.items() if v
        }
    # Without details, what an earlier pass published stays, as the `<instance>-conn` Secret does (the
    # contract never deletes it): a suspended Instance keeps the address it answers on when resumed.
    entries = component_entries(components, component_fields) if component_fields else []
    if entries:
        new["components"] = entries
    elif complete and component_fields:
        new.pop("components", None)
    return new
