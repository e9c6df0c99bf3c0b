"""Bounds on what one Instance may cost the provider, checked before anything else reads it.

Whoever may create an Instance must not be able to make the provider slow or large for everyone
else: the API server accepts a spec of up to ~1.5 MB nested thousands of levels deep, while a
real Instance is a few kilobytes. An Instance over the bounds is kept in memory only as a stub
(metadata and status, see `stub`), and gets phase Failed with a message that says which bound it
broke; nothing is derived from it until it is fixed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from actors.client import json_codec
from actors.client.decode import depth_problem
from actors.contract import LABEL_PROVIDER
from actors.interface import KubeObject

DEFAULT_MAX_SPEC_BYTES: Final = 64 * 1024
DEFAULT_MAX_SPEC_DEPTH: Final = 32
# The whole Instance (metadata, spec and status; managedFields aside): its labels and annotations
# can be as large as the API server stores (1.5 MB), and they are kept in memory too.
DEFAULT_MAX_OBJECT_BYTES: Final = 256 * 1024


def spec_bytes(obj: KubeObject) -> int:
    """Size of `spec` as compact JSON, the way the limit is stated."""
    return len(json_codec.dumps(obj.get("spec")))


@dataclass(frozen=True)
class InstanceLimits:
    """Per-Instance bounds (chart: `limits.instanceSpecBytes`, `limits.instanceSpecDepth`)."""

    max_spec_bytes: int = DEFAULT_MAX_SPEC_BYTES
    max_spec_depth: int = DEFAULT_MAX_SPEC_DEPTH
    max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES

    def size_problem(self, size: int) -> str | None:
        if size <= self.max_spec_bytes:
            return None
        return (
            f"spec is {size} bytes as JSON, over this provider's limit of {self.max_spec_bytes} bytes "
            "per Instance; move large content (configs, adapter lists) out of the Instance"
        )

    def object_size_problem(self, size: int) -> str | None:
        if size <= self.max_object_bytes:
            return None
        return (
            f"the Instance is {size} bytes as JSON (metadata, spec and status), over this provider's limit of "
            f"{self.max_object_bytes} bytes; remove large labels or annotations"
        )

    def problem(self, obj: KubeObject) -> str | None:
        """The first bound `obj` breaks (size, then depth), or None."""
        return self.size_problem(spec_bytes(obj)) or depth_problem(obj.get("spec"), "spec", self.max_spec_depth)


# Metadata a stub leaves out: never read, or as large as the user cares to make it.
_NOT_KEPT: Final = frozenset({"managedFields", "annotations", "labels"})


def stub(obj: KubeObject) -> KubeObject:
    """What is kept of an Instance over a size bound: enough to add and remove the finalizer and
    to write status (the status subresource ignores spec), without the bulk of its spec, labels
    and annotations (but the provider label, which the finalizer's removal reads)."""
    spec: Any = obj.get("spec")
    provider_ref = spec.get("providerRef") if isinstance(spec, dict) else None
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _NOT_KEPT}
    labels: Any = (obj.get("metadata") or {}).get("labels")
    if isinstance(labels, dict) and LABEL_PROVIDER in labels:
        meta["labels"] = {LABEL_PROVIDER: labels[LABEL_PROVIDER]}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": meta,
        "spec": {"providerRef": provider_ref} if isinstance(provider_ref, dict) else {},
        "status": obj.get("status") or {},
    }
