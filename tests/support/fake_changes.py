"""FakeKube's change history: the resourceVersions it hands out, and what its watches report: from
a resourceVersion, the changes after it, then each new one as it is made; bookmarks; the server
ending every watch; the last compaction (FakeKube answers a watch from before it 410 Gone)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from actors.interface import KubeObject, Resource


@dataclass(frozen=True)
class Change:
    """One change as a watch reports it, in the order they were made (`seq`)."""

    seq: int
    revision: int
    resource: Resource
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    object: KubeObject


@dataclass
class ChangeLog:
    revision: int = 0  # the last resourceVersion handed out
    handled_events: int = 0  # watch events the watchers have handled (asked for the next after)
    _changes: list[Change] = field(default_factory=list)
    _seqs: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    compacted: int = 0  # a watch from an older resourceVersion is answered 410 Gone
    _epoch: int = 0  # end_watches() moves it on; a watch of an older epoch returns
    _wake: anyio.Event | None = None  # set (and dropped) at every change

    def next_version(self) -> str:
        self.revision += 1
        return str(self.revision)

    def record(self, resource: Resource, kind: str, obj: KubeObject) -> None:
        self._changes.append(Change(next(self._seqs), self.revision, resource, kind, copy.deepcopy(obj)))
        self._wake_watches()

    def compact(self) -> None:
        """Forget the changes made so far, as etcd's compaction does: a watch from any
        resourceVersion handed out until now gets 410 Gone."""
        self.compacted = self.revision
        self._changes = [change for change in self._changes if change.revision > self.compacted]

    def bookmark(self, resource: Resource) -> None:
        """Send the watches of `resource` a bookmark: the current resourceVersion, no object."""
        marker = {"apiVersion": resource.api_version, "kind": resource.kind}
        self.record(resource, "BOOKMARK", {**marker, "metadata": {"resourceVersion": str(self.revision)}})

    def end_watches(self) -> None:
        """End every open watch, as the server does when its timeout is up."""
        self._epoch += 1
        self._wake_watches()

    async def watch(
        self, resource: Resource, namespace: str | None, since: int, label_selector: str | None, timeout_seconds: int
    ) -> AsyncIterator[dict[str, Any]]:
        """The changes after `since` (not before `compacted`), then each new one as it is made,
        until `timeout_seconds` pass or `end_watches()`."""
        wanted = selector(label_selector)
        epoch, deadline = self._epoch, anyio.current_time() + timeout_seconds
        pending = [change for change in self._changes if change.revision > since and change.type != "BOOKMARK"]
        seen = self._changes[-1].seq if self._changes else 0
        while True:
            for change in pending:
                if reported(change, resource, namespace, wanted):
                    yield {"type": change.type, "object": copy.deepcopy(change.object)}
                    self.handled_events += 1  # the watcher asks for the next: done with this one
            with anyio.move_on_after(deadline - anyio.current_time()) as timer:
                await self._wake_event().wait()
            if timer.cancelled_caught or epoch != self._epoch:
                return  # ended: what changed since is for the next watch (or lost to a compaction)
            pending = [change for change in self._changes if change.seq > seen]
            seen = self._changes[-1].seq if self._changes else seen

    def _wake_watches(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    def _wake_event(self) -> anyio.Event:
        if self._wake is None:
            self._wake = anyio.Event()
        return self._wake


def selector(label_selector: str | None) -> dict[str, str]:
    """`key=value` terms only."""
    return dict(term.split("=", 1) for term in label_selector.split(",")) if label_selector else {}


def labelled(obj: KubeObject, wanted: dict[str, str]) -> bool:
    return wanted.items() <= (obj["metadata"].get("labels") or {}).items()


def reported(change: Change, resource: Resource, namespace: str | None, wanted: dict[str, str]) -> bool:
    """Whether a watch of `resource` in `namespace` whose label selector wants `wanted` reports
    `change`."""
    if change.resource != resource:
        return False
    if change.type == "BOOKMARK":
        return True
    in_namespace = namespace is None or change.object["metadata"].get("namespace") == namespace
    return in_namespace and labelled(change.object, wanted)
