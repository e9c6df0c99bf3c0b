"""The interface between the generic runtime and a provider (`actors.contract` is OpenEverest's:
labels, finalizer, ownership).

The runtime owns everything that is the same for every OpenEverest provider: the finalizer, the
state machine, applying and pruning derived objects, writing status and the connection Secret.
A provider only answers questions about one Instance: is it valid (and what did it read), what
objects should exist and what should other controllers let go of, what is its status given what
exists, and what extra cleanup is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol, TypeVar

# Re-exported: the types a provider sees (`X as X`).
from actors.client.resource import KubeObject as KubeObject, ObjectKey as ObjectKey, Resource as Resource

if TYPE_CHECKING:
    from actors.client import KubeClient


class Phase(StrEnum):
    """Instance.status.phase values of the OpenEverest core CRD."""

    PENDING = "Pending"
    PROVISIONING = "Provisioning"
    INITIALIZING = "Initializing"
    READY = "Ready"
    UPDATING = "Updating"
    TERMINATING = "Terminating"
    FAILED = "Failed"
    RESTORING = "Restoring"
    # Scale-to-zero: compute going away, gone (configuration and storage kept), coming back.
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    RESUMING = "Resuming"

    @property
    def settled(self) -> bool:
        """Nothing is on its way: serving, or suspended at the user's request."""
        return self in (Phase.READY, Phase.SUSPENDED)


@dataclass(frozen=True)
class Condition:
    """A metav1.Condition minus the fields the runtime fills (lastTransitionTime, observedGeneration)."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str = ""


@dataclass(frozen=True)
class ConnectionDetails:
    """The seven keys the OpenEverest core reads from the `<instance>-conn` Secret, plus a URL."""

    type: str = ""
    provider: str = ""
    host: str = ""
    port: str = ""
    username: str = ""
    password: str = ""
    uri: str = ""

    def secret_data(self) -> dict[str, str]:
        keys = ("type", "provider", "host", "port", "username", "password", "uri")
        return {k: getattr(self, k) for k in keys if getattr(self, k)}

    def is_empty(self) -> bool:
        return not (self.host or self.uri)


@dataclass(frozen=True)
class ComponentStatus:
    """One entry of Instance.status.components: a component (a key of spec.components), how many
    of its pods run and are ready, a one-word state, and the pods' names."""

    name: str
    ready: int
    total: int
    state: str
    pods: Sequence[str] = ()


@dataclass(frozen=True)
class EventNote:
    """A Normal Event the provider asks for about the Instance (`kubectl describe`): something that
    happened which status alone shows only as a new value. The provider returns it in the one pass
    that sees the news (comparing with the status the Instance has), so that it is recorded once."""

    reason: str
    note: str


@dataclass(frozen=True)
class StatusReport:
    phase: Phase
    message: str = ""
    conditions: Sequence[Condition] = ()
    connection: ConnectionDetails | None = None
    # Poll again after this many seconds (KServe status is not always event-driven for us).
    requeue_after: float | None = None
    # Per component; () leaves status.components as it is (a pass that learned nothing of them).
    components: Sequence[ComponentStatus] = ()
    # The reason of a Warning Event saying `message`, when the message tells of something waiting
    # will not fix (pods that cannot be scheduled, say): recorded when the message is new.
    warning: str = ""
    # Normal Events recorded once this status is written.
    events: Sequence[EventNote] = ()


class ValidationFailed(Exception):
    """Bad user input: becomes phase Failed with this exact message, and is not retried hot."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class WaitFor(Exception):
    """Sync cannot proceed yet (e.g. a dependency not there); requeue after `seconds`, no error."""

    def __init__(self, reason: str, seconds: float = 10.0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.seconds = seconds


@dataclass(frozen=True)
class Release:
    """A merge patch that asks another controller to let go of an object it holds (a finalizer it
    keeps longer than it should), which the runtime cannot delete by itself. The provider says
    which (`Provider.releases`); the runtime sends them, in each pass and on each cleanup retry."""

    resource: Resource
    namespace: str
    name: str
    patch: KubeObject


@dataclass
class ReconcileContext:
    """What a provider sees of one reconcile: the Instance and the means to look around.

    `instance` is the Instance as read from the API server, with the version bundle resolved
    (component versions filled) on a copy, exactly as the Go runtime hands it to Sync/Status.
    """

    instance: KubeObject
    client: KubeClient
    # Which optional resources the API server serves right now (CRD present), by Resource.
    available: frozenset[Resource] = field(default_factory=frozenset)
    # Derived objects as stored after this pass's apply (or as last observed), by (resource, name).
    observed: Mapping[tuple[Resource, str], KubeObject] = field(default_factory=dict)
    # A derived object of this Instance as the runtime's watch last saw it, by resource and name
    # (None when there is none); for desired() decisions that depend on what another controller did.
    live: Callable[[Resource, str], KubeObject | None] = field(default=lambda resource, name: None)
    # The derived objects this pass's apply changed (written, not skipped as unchanged), by
    # (resource, name): for status() to tell a change it just sent from what was there before.
    written: frozenset[tuple[Resource, str]] = frozenset()

    @property
    def key(self) -> ObjectKey:
        meta = self.instance["metadata"]
        return ObjectKey(meta["namespace"], meta["name"])


# What a provider read of an Instance while validating it (its own type: a parsed model, say).
Valid = TypeVar("Valid")


class Provider(Protocol[Valid]):
    """A provider for the runtime. Implemented for KServe in `provider.kserve`."""

    @property
    def name(self) -> str:
        """The provider's name: `spec.providerRef.name` of its Instances, its label value and field manager."""
        ...

    @property
    def annotation_domain(self) -> str:
        """The prefix of the annotations the runtime reads and writes for this provider, e.g.
        `provider-kserve.openeverest.io`: `<domain>/force-ownership` on an Instance (the opt-in to take
        fields another manager holds) and `<domain>/applied-intent` on derived objects."""
        ...

    def owned_resources(self) -> Sequence[Resource]:
        """Every kind the provider may create: watched, inventoried and pruned by the runtime."""
        ...

    def derives(self, instance_name: str, resource: Resource, name: str) -> bool:
        """Whether `name` is a name the provider derives for the Instance `instance_name` (whatever its
        topology). Labels and owner references can be copied by anyone who may write in the
        namespace; the runtime touches only objects under a derived name."""
        ...

    async def validate(self, ctx: ReconcileContext) -> Valid:
        """Raise ValidationFailed with a specific message for bad input; otherwise return what was
        read of the Instance, which desired() and status() of the same pass receive (an Instance is
        parsed and validated once per pass)."""
        ...

    async def desired(self, ctx: ReconcileContext, valid: Valid) -> list[KubeObject]:
        """The objects that should exist for this Instance (without ownership metadata).

        The runtime stamps labels and the controller ownerReference, applies each one with
        server-side apply, and deletes owned objects that are no longer desired.
        """
        ...

    async def status(self, ctx: ReconcileContext, valid: Valid) -> StatusReport:
        """Map the observed derived objects onto the Instance status."""
        ...

    def releases(self, ctx: ReconcileContext) -> Sequence[Release]:
        """What another controller holds of the Instance's objects and should let go, as data: the
        runtime sends each patch after desired() in every pass and before deleting on cleanup (an
        object gone already is skipped). Pure, like desired(): render and tests call it freely."""
        ...

    async def cleanup(self, ctx: ReconcileContext) -> None:
        """Extra cleanup on deletion, before the runtime deletes the owned objects. May raise WaitFor."""
        ...
