"""The OpenEverest contract as the runtime keeps it: the labels and controller ownerReference every
derived object carries, the finalizer, and which provider an Instance names.

Everything here derives only from the Instance (namespace, name, uid) and the provider name, so a
retry after a lost response, or a restarted provider, computes exactly the same metadata and finds
its own objects again.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from actors.client.resource import KubeObject

INSTANCE_GROUP = "core.openeverest.io"
INSTANCE_API_VERSION = f"{INSTANCE_GROUP}/v1alpha1"
INSTANCE_KIND = "Instance"
FINALIZER = "everest.percona.com/provider-finalizer"

# Label keys of the OpenEverest contract (ObjectMeta in the Go provider-runtime).
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "everest"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_PROVIDER = "core.openeverest.io/provider"


def ownership_labels(instance: KubeObject, provider_name: str) -> dict[str, str]:
    return {
        LABEL_MANAGED_BY: MANAGED_BY_VALUE,
        LABEL_INSTANCE: instance["metadata"]["name"],
        LABEL_PROVIDER: provider_name,
    }


def inventory_selector(instance: KubeObject, provider_name: str) -> str:
    """The label selector that finds an Instance's derived objects."""
    labels = ownership_labels(instance, provider_name)
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def controller_reference(instance: KubeObject) -> dict[str, object]:
    meta = instance["metadata"]
    return {
        "apiVersion": INSTANCE_API_VERSION,
        "kind": INSTANCE_KIND,
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_owned_by(obj: KubeObject, instance: KubeObject) -> bool:
    """True only for objects whose *controller* ownerReference is this very Instance (by uid)."""
    uid = instance["metadata"].get("uid")
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == INSTANCE_KIND and uid and ref.get("uid") == uid:
            return True
    return False


def stamp(obj: KubeObject, instance: KubeObject, provider_name: str) -> KubeObject:
    """A copy of `obj` in the Instance namespace with our labels and controller ownerReference."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["namespace"] = instance["metadata"]["namespace"]
    meta["labels"] = {**(meta.get("labels") or {}), **ownership_labels(instance, provider_name)}
    meta["ownerReferences"] = [controller_reference(instance)]
    return out


def connection_secret_name(instance_name: str) -> str:
    """The `<instance>-conn` Secret the OpenEverest core reads connection details from."""
    return f"{instance_name}-conn"


def holds_finalizer(instance: KubeObject) -> bool:
    return FINALIZER in (instance["metadata"].get("finalizers") or [])


def field_of(obj: Any, key: str) -> Any:
    """obj[key] when obj is a mapping: the validation endpoint and render see documents as written."""
    return obj.get(key) if isinstance(obj, Mapping) else None


def provider_name(instance: KubeObject) -> str:
    """The provider an Instance names (`spec.providerRef.name`), "" when it names none."""
    return str(field_of(field_of(field_of(instance, "spec"), "providerRef"), "name") or "")
