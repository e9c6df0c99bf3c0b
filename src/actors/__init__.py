"""Generic actor-style reconcile runtime for OpenEverest providers. Knows nothing of KServe.

The public API: a provider implements `Provider` (see `actors.interface`) and runs under a
`Manager`; what a provider may use besides is listed here, and nothing else of the runtime is
imported from outside it (`make lint` checks that with import-linter). The names load lazily, so
importing one module of the runtime (e.g. `actors.client.resource`) does not import all of it.
docs/architecture.md maps each package to its kube-runtime and controller-runtime counterpart.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names of _MODULES, for type checkers (`X as X`: re-exported)
    from actors.client import (
        ApiError as ApiError,
        KubeClient as KubeClient,
        TransportError as TransportError,
    )
    from actors.client.known_resources import (
        CRDS as CRDS,
        INSTANCES as INSTANCES,
        PROVIDERS as PROVIDERS,
        SECRETS as SECRETS,
    )
    from actors.contract import (
        LABEL_PROVIDER as LABEL_PROVIDER,
        inventory_selector as inventory_selector,
        is_owned_by as is_owned_by,
        ownership_labels as ownership_labels,
        stamp as stamp,
    )
    from actors.interface import (
        ComponentStatus as ComponentStatus,
        Condition as Condition,
        ConnectionDetails as ConnectionDetails,
        EventNote as EventNote,
        KubeObject as KubeObject,
        ObjectKey as ObjectKey,
        Phase as Phase,
        Provider as Provider,
        ReconcileContext as ReconcileContext,
        Release as Release,
        Resource as Resource,
        StatusReport as StatusReport,
        ValidationFailed as ValidationFailed,
        WaitFor as WaitFor,
    )
    from actors.manager.command import (
        add_connection_arguments as add_connection_arguments,
        add_manager_arguments as add_manager_arguments,
        manager_main as manager_main,
        run_manager as run_manager,
    )
    from actors.manager.manager import Manager as Manager
    from actors.manager.options import ManagerOptions as ManagerOptions
    from actors.manager.shared import (
        SharedActor as SharedActor,
        SharedActors as SharedActors,
        SharedContext as SharedContext,
        Wake as Wake,
        WakeKey as WakeKey,
        wake_nobody as wake_nobody,
    )
    from actors.reconcile.versions import (
        effective_bundle as effective_bundle,
        resolve_versions as resolve_versions,
        version_problem as version_problem,
    )
    from actors.serve.endpoints import Endpoints as Endpoints
    from actors.status.compose import valid_reason as valid_reason

# Where each public name lives, by module.
_MODULES: dict[str, tuple[str, ...]] = {
    # The contract between the runtime and a provider.
    "actors.interface": (
        "ComponentStatus",
        "Condition",
        "ConnectionDetails",
        "EventNote",
        "KubeObject",
        "ObjectKey",
        "Phase",
        "Provider",
        "ReconcileContext",
        "Release",
        "Resource",
        "StatusReport",
        "ValidationFailed",
        "WaitFor",
    ),
    # OpenEverest's ownership metadata, for tools that find or preview derived objects.
    "actors.contract": ("LABEL_PROVIDER", "inventory_selector", "is_owned_by", "ownership_labels", "stamp"),
    # The API client and what it raises.
    "actors.client": ("ApiError", "KubeClient", "TransportError"),
    "actors.client.known_resources": ("CRDS", "INSTANCES", "PROVIDERS", "SECRETS"),
    # Running a provider: its command line and process, or the Manager itself.
    "actors.manager.command": ("add_connection_arguments", "add_manager_arguments", "manager_main", "run_manager"),
    "actors.manager.manager": ("Manager",),
    "actors.manager.options": ("ManagerOptions",),
    "actors.manager.shared": ("SharedActor", "SharedActors", "SharedContext", "Wake", "WakeKey", "wake_nobody"),
    "actors.serve.endpoints": ("Endpoints",),
    # Version bundles and status reasons, as the runtime decides them (render previews the same).
    "actors.reconcile.versions": ("effective_bundle", "resolve_versions", "version_problem"),
    "actors.status.compose": ("valid_reason",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'actors' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
