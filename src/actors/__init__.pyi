# The runtime's public API, listed once: type checkers read it here, and actors/__init__.py loads
# each name from its module on first use (lazy_loader.attach_stub parses this file).
# `X as X`: re-exported. By module: the API client and what it raises (client); OpenEverest's
# ownership metadata, for tools that find or preview derived objects (contract); the contract
# between the runtime and a provider (interface); running a provider, by its command line or the
# Manager itself, and the actors it shares (manager); version bundles and status reasons as the
# runtime decides them, which render previews (reconcile, status); its probes and metrics (serve).

from .client import ApiError as ApiError, KubeClient as KubeClient, TransportError as TransportError
from .client.known_resources import CRDS as CRDS, INSTANCES as INSTANCES, PROVIDERS as PROVIDERS, SECRETS as SECRETS
from .contract import (
    LABEL_PROVIDER as LABEL_PROVIDER,
    inventory_selector as inventory_selector,
    is_owned_by as is_owned_by,
    ownership_labels as ownership_labels,
    stamp as stamp,
)
from .interface import (
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
from .manager.command import (
    add_connection_arguments as add_connection_arguments,
    add_manager_arguments as add_manager_arguments,
    manager_main as manager_main,
    run_manager as run_manager,
)
from .manager.manager import Manager as Manager
from .manager.options import ManagerOptions as ManagerOptions
from .manager.shared import (
    SharedActor as SharedActor,
    SharedActors as SharedActors,
    SharedContext as SharedContext,
    Wake as Wake,
    WakeKey as WakeKey,
    wake_nobody as wake_nobody,
)
from .reconcile.versions import (
    effective_bundle as effective_bundle,
    resolve_versions as resolve_versions,
    version_problem as version_problem,
)
from .serve.endpoints import Endpoints as Endpoints
from .status.compose import valid_reason as valid_reason

__all__: list[str]
