"""API resources and objects as the runtime addresses them: a leaf module every other one imports.

`Resource` is what kube-rs calls an `ApiResource`: the group/version/kind of an object together with
the plural name and scope its REST path needs. Objects are matched to their Resource by
(group, version, kind), never by kind alone: two groups may serve the same kind (InferencePool).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KubeObject = dict[str, Any]
# (group, version, kind); the core group is "".
GroupVersionKind = tuple[str, str, str]


def gvk_of(obj: KubeObject) -> GroupVersionKind:
    """An object's (group, version, kind), from its apiVersion and kind."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return group, version, str(obj.get("kind", ""))


@dataclass(frozen=True, order=True)
class Resource:
    """One REST resource of the API server (a GVR plus what a client needs to address it)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def gvk(self) -> GroupVersionKind:
        return self.group, self.version, self.kind

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.group or 'core'}/{self.version}"


@dataclass(frozen=True, order=True)
class ObjectKey:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, key: str) -> ObjectKey:
        """The key a store and the actor system name an object by (`namespace/name`), read back."""
        namespace, _, name = key.partition("/")
        return cls(namespace, name)


def object_key(obj: KubeObject) -> str:
    """How stores and the actor system name an object: `namespace/name` (a cluster-scoped one by its
    name alone)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])
