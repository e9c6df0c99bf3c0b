"""Singleton actors that Instance actors message: `ask` (request/reply) or `tell` (fire and forget).

A shared actor owns state that many Instances read (a catalog, the AI Gateway's address). It
processes one message at a time from its mailbox, so its state needs no locks; a handler that
raises answers that one `ask` with the exception and the actor keeps running.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import structlog
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.interface import KubeObject

log = structlog.get_logger("actors.shared")

A = TypeVar("A", bound="SharedActor")


@dataclass
class _Envelope:
    message: Any
    done: anyio.Event | None = None
    result: Any = None
    error: BaseException | None = None


@dataclass
class _Mailbox:
    send: MemoryObjectSendStream[_Envelope]
    receive: MemoryObjectReceiveStream[_Envelope]


def _new_mailbox() -> _Mailbox:
    send, receive = anyio.create_memory_object_stream[_Envelope](math.inf)
    return _Mailbox(send, receive)


class SharedActor(ABC):
    """Subclass and implement `handle`. `started` runs once before the first message."""

    name: str = "shared"

    def __init__(self) -> None:
        self._mailbox = _new_mailbox()

    async def started(self, task_group: TaskGroup) -> None:  # noqa: B027 - optional hook
        """Start background work (watches, file polling) in `task_group`."""

    @abstractmethod
    async def handle(self, message: Any) -> Any: ...

    async def ask(self, message: Any) -> Any:
        envelope = _Envelope(message, done=anyio.Event())
        await self._mailbox.send.send(envelope)
        assert envelope.done is not None
        await envelope.done.wait()
        if envelope.error is not None:
            raise envelope.error
        return envelope.result

    def tell(self, message: Any) -> None:
        self._mailbox.send.send_nowait(_Envelope(message))

    async def run(self) -> None:
        async with self._mailbox.receive:
            async for envelope in self._mailbox.receive:
                try:
                    envelope.result = await self.handle(envelope.message)
                except Exception as exc:  # one bad message must not kill the actor
                    envelope.error = exc
                    if envelope.done is None:
                        log.exception("shared actor message failed", actor=self.name)
                finally:
                    if envelope.done is not None:
                        envelope.done.set()


def _no_instances(predicate: Callable[[KubeObject], bool]) -> int:
    return 0


@dataclass
class SharedActors:
    """The registry of shared actors, by class.

    `wake(predicate)` lets a shared actor wake every Instance actor whose Instance matches (e.g.
    all users of a catalog that just changed); the manager installs it and returns the count.
    """

    _actors: dict[type[SharedActor], SharedActor] = field(default_factory=dict)
    wake: Callable[[Callable[[KubeObject], bool]], int] = _no_instances

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

    async def start(self, task_group: TaskGroup) -> None:
        for actor in self._actors.values():
            await actor.started(task_group)
            task_group.start_soon(actor.run, name=f"shared:{actor.name}")
