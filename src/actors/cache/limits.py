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
from actors.interface import KubeObject

DEFAULT_MAX_SPEC_BYTES: Final = 64 * 1024
DEFAULT_MAX_SPEC_DEPTH: Final = 32


def spec_bytes(obj: KubeObject) -> int:
    """Size of `spec` as compact JSON, the way the limit is stated."""
    return len(json_codec.dumps(obj.get("spec")))


@dataclass(frozen=True)
class InstanceLimits:
    """Per-Instance bounds (chart: `limits.instanceSpecBytes`, `limits.instanceSpecDepth`)."""

    max_spec_bytes: int = DEFAULT_MAX_SPEC_BYTES
    max_spec_depth: int = DEFAULT_MAX_SPEC_DEPTH

    def size_problem(self, size: int) -> str | None:
        if size <= self.max_spec_bytes:
            return None
        return (
            f"spec is {size} bytes as JSON, over this provider's limit of {self.max_spec_bytes} bytes "
            "per Instance; move large content (configs, adapter lists) out of the Instance"
        )

    def problem(self, obj: KubeObject) -> str | None:
        """The first bound `obj` breaks (size, then depth), or None."""
        return self.size_problem(spec_bytes(obj)) or depth_problem(obj.get("spec"), "spec", self.max_spec_depth)


def stub(obj: KubeObject) -> KubeObject:
    """What is kept of an Instance over the size bound: enough to add and remove the finalizer and
    to write status (the status subresource ignores spec), without its spec's bulk."""
    spec: Any = obj.get("spec")
    provider_ref = spec.get("providerRef") if isinstance(spec, dict) else None
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": meta,
        "spec": {"providerRef": provider_ref} if isinstance(provider_ref, dict) else {},
        "status": obj.get("status") or {},
    }
