"""Provider-wide components that Instances read: each follows one thing outside the Instances (a
mounted catalog file, the shared Gateway, namespace labels) and publishes what it knows as an
immutable snapshot, which a reconcile reads directly, without a round-trip.

When what a component publishes changes, it wakes only the Instances the change concerns through
`wake(predicate)`, which the manager hands it when it starts the component. Components start in
registration order with anyio's structured start: `run` reports `task_status.started()` once its
first snapshot is there (or its bounded wait for one is over), so the first reconciles read it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from anyio.abc import TaskGroup, TaskStatus

from actors.client.resource import KubeObject

A = TypeVar("A", bound="SharedActor")
# Wake the actors of every Instance for which the predicate holds; returns how many.
Wake = Callable[[Callable[[KubeObject], bool]], int]


def wake_nobody(predicate: Callable[[KubeObject], bool]) -> int:
    return 0


class SharedActor(ABC):
    """Subclass and implement `run`: publish the first snapshot, report started, then follow."""

    name: str = "shared"

    @abstractmethod
    async def run(self, wake: Wake, *, task_status: TaskStatus[None]) -> None: ...


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

    async def start(self, task_group: TaskGroup, wake: Wake) -> None:
        """Start every actor, in registration order, each once it reported started."""
        for actor in self._actors.values():
            await task_group.start(actor.run, wake, name=f"shared:{actor.name}")
