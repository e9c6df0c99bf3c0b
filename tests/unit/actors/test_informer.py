"""The Informer against tests.support.fake_kube's list and watch (in-process): it lists page by
page, then reports every change a watch brings; a watch the server ends is resumed where it was,
a bookmark moves that point on, an expired one (410 Gone) is listed again and the difference
reported, so that nothing changed meanwhile is missed; a lost connection is retried without a
relist; an object that cannot be read is skipped and the others go on; a cache that cannot list
fails start-up saying which."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import cast

import anyio
import pytest

from actors.cache.informer import Informer, StartupFailed, WatchSettings, start_informer
from actors.client import KubeClient, TransportError
from actors.client.known_resources import INSTANCES, SECRETS
from actors.interface import KubeObject
from actors.queue.ratelimit import Backoff
from tests.support.fake_kube import FakeKube, api_error

SETTINGS = WatchSettings(timeout_seconds=300, backoff=Backoff(base=0.001, cap=0.01), page_size=2, page_bytes=1 << 20)
Change = tuple[str, str | None, str | None]


def secret(name: str, value: str = "1", namespace: str = "ns") -> KubeObject:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"v": value}}


def value_of(obj: KubeObject) -> str:
    """What the store keeps: the one field the tests change (a malformed object raises)."""
    return str(obj["data"]["v"])


@dataclass
class Watched:
    kube: FakeKube
    informer: Informer[str]
    store: dict[str, str]  # the store given to the informer, which its owner reads
    changes: list[Change] = field(default_factory=list)

    async def until(self, what: str, done: Callable[[], bool]) -> None:
        """Wait (in-process, a few seconds at most) for `done()`; fail saying what was last seen."""
        with anyio.move_on_after(5):
            while not done():
                await anyio.sleep(0.001)
        assert done(), f"{what}: store {self.informer.store}, changes {self.changes}"


@asynccontextmanager
async def watching() -> AsyncIterator[Watched]:
    """An informer of the Secrets of `ns`, three there, listed; stopped on exit. (A context, not a
    fixture: its task group must be entered and left by the test's own task.)"""
    kube = FakeKube()
    for name in ("a", "b", "c"):
        kube.put(SECRETS, secret(name))
    changes: list[Change] = []
    store: dict[str, str] = {}
    informer = Informer(
        cast(KubeClient, kube),
        SECRETS,
        transform=value_of,
        on_change=lambda key, old, new: changes.append((key, old, new)),
        settings=SETTINGS,
        namespace="ns",
        store=store,
    )
    async with anyio.create_task_group() as tasks:
        await start_informer(tasks, informer, timeout=5)
        yield Watched(kube, informer, store, changes)
        tasks.cancel_scope.cancel()


def requests(kube: FakeKube, verb: str) -> int:
    return sum(1 for call in kube.calls if call.verb == verb)


async def test_lists_page_by_page_then_reports_each_change_of_its_namespace() -> None:
    async with watching() as watched:
        kube = watched.kube
        assert watched.informer.store == {"ns/a": "1", "ns/b": "1", "ns/c": "1"}
        assert requests(kube, "list") == 2, "three objects at two a page"
        assert watched.changes == [("ns/a", None, "1"), ("ns/b", None, "1"), ("ns/c", None, "1")]
        watched.changes.clear()

        kube.put(SECRETS, secret("a", "2"))
        kube.remove(SECRETS, "ns", "b")
        kube.put(SECRETS, secret("x", namespace="elsewhere"))
        kube.put(SECRETS, secret("d"))
        await watched.until("d added", lambda: "ns/d" in watched.informer.store)
        assert watched.changes == [("ns/a", "1", "2"), ("ns/b", "1", None), ("ns/d", None, "1")]
        assert watched.informer.store == {"ns/a": "2", "ns/c": "1", "ns/d": "1"}
        assert watched.informer.relists == 1


async def test_a_watch_the_server_ends_resumes_where_it_was_without_a_relist() -> None:
    async with watching() as watched:
        kube = watched.kube
        kube.changes.end_watches()
        kube.put(SECRETS, secret("a", "2"))  # after the end: only the next watch can report it
        await watched.until("a changed", lambda: watched.informer.store["ns/a"] == "2")
        assert requests(kube, "watch") == 2
        assert watched.informer.relists == 1


async def test_a_bookmark_moves_the_resume_point_past_a_compaction() -> None:
    async with watching() as watched:
        kube = watched.kube
        for name in ("p", "q"):  # another kind's writes: the resourceVersion moves on without a secret
            kube.put(INSTANCES, secret(name))
        handled = kube.changes.handled_events
        kube.changes.bookmark(SECRETS)
        await watched.until("bookmark handled", lambda: kube.changes.handled_events == handled + 1)
        kube.changes.compact()
        kube.changes.end_watches()
        kube.put(SECRETS, secret("d"))
        await watched.until("d added", lambda: "ns/d" in watched.informer.store)
        assert watched.informer.relists == 1, "the bookmarked resourceVersion outlived the compaction"


async def test_an_expired_watch_lists_again_and_reports_what_changed_meanwhile() -> None:
    async with watching() as watched:
        kube = watched.kube
        watched.changes.clear()
        kube.changes.end_watches()
        kube.remove(SECRETS, "ns", "a")
        kube.put(SECRETS, secret("b", "2"))
        kube.put(SECRETS, secret("d"))
        kube.changes.compact()  # the watch would resume from before all three: 410 Gone
        await watched.until("relisted", lambda: watched.informer.relists == 2)
        assert sorted(watched.changes, key=str) == sorted(
            [("ns/a", "1", None), ("ns/b", "1", "2"), ("ns/d", None, "1")], key=str
        )
        assert watched.informer.store == {"ns/b": "2", "ns/c": "1", "ns/d": "1"}
        assert watched.informer.store is watched.store, "a relist refills the store its owner reads"


async def test_a_lost_connection_is_watched_again_without_a_relist() -> None:
    async with watching() as watched:
        kube = watched.kube
        kube.fail("watch", TransportError("connection reset"), times=2)
        kube.changes.end_watches()
        kube.put(SECRETS, secret("d"))
        await watched.until("d added", lambda: "ns/d" in watched.informer.store)
        assert requests(kube, "watch") == 4, "the first, two that failed, the one that reported d"
        assert watched.informer.relists == 1


async def test_an_object_that_cannot_be_read_is_skipped_and_the_others_go_on() -> None:
    async with watching() as watched:
        kube = watched.kube
        kube.put(SECRETS, {"metadata": {"name": "bad", "namespace": "ns"}})
        kube.put(SECRETS, secret("d"))
        await watched.until("d added", lambda: "ns/d" in watched.informer.store)
        assert "ns/bad" not in watched.informer.store


async def test_a_cache_that_cannot_list_fails_start_up_saying_which_or_is_left_to_list_later() -> None:
    kube = FakeKube()
    kube.fail("list", api_error(403, "Forbidden"), times=1_000_000)

    def informer() -> Informer[str]:
        return Informer(
            cast(KubeClient, kube), SECRETS, transform=value_of, on_change=lambda *_: None, settings=SETTINGS
        )

    async with anyio.create_task_group() as tasks:
        with pytest.raises(StartupFailed, match="secrets"):
            await start_informer(tasks, informer(), timeout=0.05)
        assert await start_informer(tasks, informer(), timeout=0.05, required=False) is False
        tasks.cancel_scope.cancel()
