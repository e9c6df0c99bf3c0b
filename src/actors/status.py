"""Compose Instance.status from a provider's report, the way the OpenEverest runtime does.

Conditions follow metav1 semantics: `lastTransitionTime` moves only when `status` flips, while
reason, message and observedGeneration are refreshed. The composed status is compared with the
stored one so that a pass that changed nothing writes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from actors.interface import Condition, ConnectionDetails, KubeObject, Phase

CONNECTION_DETAILS_READY = "ConnectionDetailsReady"


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
        old = previous.get(cond.type)
        transition = old.get("lastTransitionTime") if old and old.get("status") == cond.status else None
        by_type[cond.type] = {
            "type": cond.type,
            "status": cond.status,
            "reason": cond.reason or "Unknown",
            "message": cond.message,
            "observedGeneration": generation,
            "lastTransitionTime": transition or stamp,
        }
    return sorted(by_type.values(), key=lambda c: str(c.get("type")))


def connection_condition(secret_name: str | None, phase: Phase) -> Condition | None:
    if secret_name:
        return Condition(
            CONNECTION_DETAILS_READY,
            "True",
            "Available",
            f"Connection details are available in Secret {secret_name}",
        )
    if phase == Phase.READY:
        return Condition(
            CONNECTION_DETAILS_READY, "False", "NotReported", "Provider did not report connection details"
        )
    return None


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
    status_connection_supported: bool = False,
) -> dict[str, Any]:
    """The full new status. With `complete`, `conditions` is the whole truth of this pass and
    conditions not reported (e.g. of a topology switched away from) are dropped; otherwise (an
    error pass that learned little) earlier conditions are kept and only the reported ones change."""
    current = copy.deepcopy(instance.get("status") or {})
    generation = int(instance["metadata"].get("generation") or 0)
    updates = list(conditions)
    conn_cond = connection_condition(connection_secret, phase)
    if conn_cond is not None:
        updates.append(conn_cond)
    new = dict(current)
    new["phase"] = phase.value
    new["message"] = message
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
    elif status_connection_supported:
        new.pop("connection", None)
    return new
