"""Provider-wide components that Instances read: each follows one thing outside the Instances (a
mounted catalog file, the shared Gateway, namespace labels) and publishes what it knows as an
immutable snapshot, which a reconcile reads directly, without a round-trip.

When what a component publishes changes, it wakes only the Instances the change concerns through
`wake(predicate)`, or `wake_key(key)` when it knows the one Instance (no scan of them all), which
the manager hands it (with `watch`, the manager's way to follow a kind, label-selected if asked)
when it starts the component. Components start in registration order with anyio's structured
start: `run` reports `task_status.started()` once its first snapshot is there (or the manager's
bounded wait for one is over), so the first reconciles read it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from anyio.abc import TaskGroup, TaskStatus

from actors.cache.informer import ChangeHandler, Informer, WatchSettings, start_informer
from actors.client import KubeClient
from actors.client.resource import KubeObject, Resource

A = TypeVar("A", bound="SharedActor")
# Wake the actors of every Instance for which the predicate holds; returns how many.
Wake = Callable[[Callable[[KubeObject], bool]], int]
# Wake the actor of the Instance `namespace/name`, if it is one of ours; returns whether it was.
WakeKey = Callable[[str], bool]


def wake_nobody(predicate: Callable[[KubeObject], bool]) -> int:
    return 0


def wake_no_key(key: str) -> bool:
    return False


class Watch(Protocol):
    """Follow a kind with an informer built and started the manager's way, in `task_group`: True
    once its first list is in, False when the manager's bounded wait for it ran out (it goes on
    listing in the background, and `on_change` reports what it finds)."""

    def __call__(
        self,
        task_group: TaskGroup,
        resource: Resource,
        *,
        transform: Callable[[KubeObject], Any],
        on_change: ChangeHandler[Any],
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> Awaitable[bool]: ...


def informer_watch(client: KubeClient, settings: WatchSettings, timeout: float) -> Watch:
    """The `Watch` the manager hands shared actors: informers with its watch settings, and a wait of
    at most `timeout` for the first list that never fails start-up (what a shared actor follows is
    optional: the Gateway's CRD may be absent)."""

    async def watch(
        task_group: TaskGroup,
        resource: Resource,
        *,
        transform: Callable[[KubeObject], Any],
        on_change: ChangeHandler[Any],
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> bool:
        informer: Informer[Any] = Informer(
            client,
            resource,
            namespace=namespace,
            label_selector=label_selector,
            transform=transform,
            on_change=on_change,
            settings=settings,
        )
        return await start_informer(task_group, informer, timeout, required=False)

    return watch


@dataclass(frozen=True)
class SharedContext:
    """What the manager hands a shared actor when it starts it."""

    wake: Wake
    watch: Watch
    wake_key: WakeKey = wake_no_key


class SharedActor(ABC):
    """Subclass and implement `run`: publish the first snapshot, report started, then follow."""

    name: str = "shared"

    @abstractmethod
    async def run(self, ctx: SharedContext, *, task_status: TaskStatus[None]) -> None: ...


@dataclass
class SharedActors:
    """The registry of shared actors, by class."""

    _actors: dict[type[SharedActor], SharedActor] = field(default_factory=dict)

    def register(self, actor: SharedActor) -> None:
        self._actors[type(actor)] = actor

    def get(self, kind: type[A]) -> A:
        actor = self._actors.get(kind)
        if actor is None:
            raise LookupError(f"shared actor {kind.__name__} is not registered")
        assert isinstance(actor, kind)
        return actor

    def find(self, kind: type[A]) -> A | None:
        actor = self._actors.get(kind)
        return actor if isinstance(actor, kind) else None

    async def start(self, task_group: TaskGroup, ctx: SharedContext) -> None:
        """Start every actor, in registration order, each once it reported started."""
        for actor in self._actors.values():
            await task_group.start(actor.run, ctx, name=f"shared:{actor.name}")
