"""Generic actor-style reconcile runtime for OpenEverest providers. Knows nothing of KServe.

The public API: a provider implements `Provider` (see `actors.interface`) and runs under a
`Manager`; everything else in this package is the runtime's own. The names below load lazily, so importing
one module of the runtime (e.g. `actors.resource`) does not import all of it. docs/architecture.md maps each
piece to its kube-runtime and controller-runtime counterpart.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actors.actor import Action, ActorSystem
    from actors.conflicts import ApplyConflict, NameClash
    from actors.endpoints import Endpoints
    from actors.interface import (
        Condition,
        ConnectionDetails,
        KubeObject,
        ObjectKey,
        Phase,
        Provider,
        ReconcileContext,
        Resource,
        StatusReport,
        ValidationFailed,
        WaitFor,
    )
    from actors.kube import ApiError, KubeClient, KubeError, RequestTimeout, TransportError
    from actors.limits import InstanceLimits
    from actors.manager import Manager, ManagerOptions, StartupFailed
    from actors.metrics import RuntimeMetrics
    from actors.shared import SharedActor, SharedActors, Wake

_HOME = {
    "Action": "actors.actor",
    "ActorSystem": "actors.actor",
    "ApiError": "actors.kube",
    "ApplyConflict": "actors.conflicts",
    "Condition": "actors.interface",
    "ConnectionDetails": "actors.interface",
    "Endpoints": "actors.endpoints",
    "InstanceLimits": "actors.limits",
    "KubeClient": "actors.kube",
    "KubeError": "actors.kube",
    "KubeObject": "actors.interface",
    "Manager": "actors.manager",
    "ManagerOptions": "actors.manager",
    "NameClash": "actors.conflicts",
    "ObjectKey": "actors.interface",
    "Phase": "actors.interface",
    "Provider": "actors.interface",
    "ReconcileContext": "actors.interface",
    "RequestTimeout": "actors.kube",
    "Resource": "actors.interface",
    "RuntimeMetrics": "actors.metrics",
    "SharedActor": "actors.shared",
    "SharedActors": "actors.shared",
    "StartupFailed": "actors.manager",
    "StatusReport": "actors.interface",
    "TransportError": "actors.kube",
    "ValidationFailed": "actors.interface",
    "WaitFor": "actors.interface",
    "Wake": "actors.shared",
}
__all__ = [
    "Action",
    "ActorSystem",
    "ApiError",
    "ApplyConflict",
    "Condition",
    "ConnectionDetails",
    "Endpoints",
    "InstanceLimits",
    "KubeClient",
    "KubeError",
    "KubeObject",
    "Manager",
    "ManagerOptions",
    "NameClash",
    "ObjectKey",
    "Phase",
    "Provider",
    "ReconcileContext",
    "RequestTimeout",
    "Resource",
    "RuntimeMetrics",
    "SharedActor",
    "SharedActors",
    "StartupFailed",
    "StatusReport",
    "TransportError",
    "ValidationFailed",
    "WaitFor",
    "Wake",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'actors' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
