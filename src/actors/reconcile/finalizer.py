"""The runtime's finalizer and provider label on an Instance: the only metadata it writes there.

Every write is conditional, so it never overwrites another writer's change, and a conflict is never
taken for success: the caller retries with backoff and reads the newest Instance from its cache.
Adding uses a merge patch with the resourceVersion it read (the list may be absent, and a JSON
patch cannot test for absence); removing uses a JSON patch that tests the finalizer list itself,
so an unrelated write in between (our own status update, an annotation) does not fail it.
"""

from __future__ import annotations

from typing import Any

from actors.client import JSON_PATCH, MERGE_PATCH, ApiError, KubeClient
from actors.client.known_resources import INSTANCES
from actors.contract import FINALIZER, LABEL_PROVIDER
from actors.interface import KubeObject


class Conflict(Exception):
    """The Instance changed under a conditional write; retry with the newer version."""


async def add(client: KubeClient, instance: KubeObject, provider_name: str, *, field_manager: str) -> KubeObject | None:
    """Our finalizer and provider label; the Instance as stored now, None when it is gone (404).
    Changed meanwhile raises Conflict."""
    meta = instance["metadata"]
    finalizers = list(meta.get("finalizers") or [])
    if FINALIZER not in finalizers:
        finalizers.append(FINALIZER)
    patch = {
        "metadata": {
            "resourceVersion": meta["resourceVersion"],
            "finalizers": finalizers,
            "labels": {LABEL_PROVIDER: provider_name},
        }
    }
    return await _send(client, instance, patch, content_type=None, field_manager=field_manager)


async def remove(
    client: KubeClient, instance: KubeObject, *, field_manager: str, drop_label: str | None = None
) -> None:
    """Remove our finalizer (and our provider label when `drop_label` names us). Raises Conflict when
    the finalizer list changed since `instance` was read."""
    meta = instance["metadata"]
    current = list(meta.get("finalizers") or [])
    if FINALIZER not in current:
        return
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "replace", "path": "/metadata/finalizers", "value": [f for f in current if f != FINALIZER]},
    ]
    if drop_label is not None and (meta.get("labels") or {}).get(LABEL_PROVIDER) == drop_label:
        path = "/metadata/labels/" + LABEL_PROVIDER.replace("~", "~0").replace("/", "~1")
        ops += [{"op": "test", "path": path, "value": drop_label}, {"op": "remove", "path": path}]
    await _send(client, instance, ops, content_type=JSON_PATCH, field_manager=field_manager)


async def _send(
    client: KubeClient, instance: KubeObject, body: Any, *, content_type: str | None, field_manager: str
) -> KubeObject | None:
    meta = instance["metadata"]
    try:
        return await client.patch(
            INSTANCES,
            meta["namespace"],
            meta["name"],
            body,
            content_type=content_type or MERGE_PATCH,
            field_manager=field_manager,
        )
    except ApiError as err:
        if err.not_found:
            return None  # gone already: nothing left to hold
        # 409: the resourceVersion moved; 422: a JSON patch `test` failed. Either way, stale.
        if err.conflict or err.invalid:
            raise Conflict(str(err)) from err
        raise
