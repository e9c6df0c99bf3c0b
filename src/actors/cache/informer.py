"""List-then-watch informers with a local store.

Follows resourceVersion (bookmarks included), relists on 410 Gone and diffs the new list against
the store so that no deletion or update is lost, and backs off on errors. The store keeps whatever
`transform` returns per object: the full Instance (we read it) or a few fields of a derived object
(we only need to know it exists, who owns it and its resourceVersion).

Whatever the API server accepted must not stop the informer: an object that `transform` or the
change handler cannot cope with is logged (once per version) and skipped, and the others go on.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from actors.client import ApiError, KubeClient, TransportError
from actors.client.resource import object_key
from actors.interface import KubeObject, Resource
from actors.queue.ratelimit import Backoff

log = structlog.get_logger(__name__)

T = TypeVar("T")
# (key "namespace/name", old value or None, new value or None)
ChangeHandler = Callable[[str, T | None, T | None], None]


@dataclass(frozen=True)
class WatchSettings:
    """How an informer lists and watches (the Manager's options build it)."""

    # The server ends each watch request after this many seconds; the informer watches again.
    timeout_seconds: int
    # After a failed list or watch.
    backoff: Backoff
    # Objects per list page, and about how many bytes of JSON a page may hold (fewer objects when
    # they are large).
    page_size: int
    page_bytes: int


class Informer(Generic[T]):
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        transform: Callable[[KubeObject], T],
        on_change: ChangeHandler[T],
        settings: WatchSettings,
        namespace: str | None = None,
        label_selector: str | None = None,
        store: dict[str, T] | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        # The one store of what this informer watches (kube-runtime's reflector store): a reader may
        # hold on to it, as the same dict is updated in place, relists included.
        self.store: dict[str, T] = {} if store is None else store
        self.synced = anyio.Event()
        self.relists = 0
        self._transform = transform
        self._on_change = on_change
        self._rv: str | None = None
        self._settings = settings
        self._log = log.bind(resource=str(resource), namespace=namespace or "*")

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """List, then watch, until cancelled; reports started once the first list is in the store."""
        failures = 0
        started = False
        while True:
            try:
                if self._rv is None:
                    await self._relist()
                if not started:
                    started = True
                    task_status.started()
                await self._watch()
                failures = 0
                continue
            except ApiError as err:
                if err.gone:
                    # Our resourceVersion was compacted away: start over from a fresh list.
                    self._log.info("watch expired, relisting", rv=self._rv)
                    self._rv = None
                    continue
                delay = self._settings.backoff.delay(failures)
                self._log.warning("list/watch failed", error=str(err), retry_in=round(delay, 3))
            except (TransportError, ValueError) as err:
                delay = self._settings.backoff.delay(failures)
                self._log.warning("connection to API server lost", error=repr(err), retry_in=round(delay, 3))
            except Exception as err:
                # A defect, or a response no one foresaw: start over from a fresh list rather than
                # take the process (and every other Instance) down with this informer.
                delay = self._settings.backoff.delay(failures)
                self._log.error(
                    "list/watch failed unexpectedly, relisting", error=repr(err)[:500], retry_in=round(delay, 3)
                )
                self._rv = None
            failures += 1
            await anyio.sleep(delay)

    async def _relist(self) -> None:
        """List afresh, page by page: each page's objects are transformed as it arrives, so no more
        than one page of raw objects is ever held, whatever the namespace holds."""
        fresh: dict[str, T] = {}
        resource_version = ""
        pages = self.client.list_pages(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            page_size=self._settings.page_size,
            page_bytes=self._settings.page_bytes,
        )
        async with aclosing(pages):
            async for page in pages:
                for obj in page.items:
                    read = self._read(obj)
                    if read is not None:
                        fresh[read[0]] = read[1]
                resource_version = page.resource_version
        old_store = self.store.copy()
        self.store.clear()
        self.store.update(fresh)
        self._rv = resource_version
        self.relists += 1
        for key, value in fresh.items():
            previous = old_store.get(key)
            if previous != value:
                self._notify(key, previous, value)
        for key, previous in old_store.items():
            if key not in fresh:
                self._notify(key, previous, None)
        self.synced.set()

    def _read(self, obj: KubeObject) -> tuple[str, T] | None:
        """(key, transformed object), or None for an object that cannot be read (logged)."""
        try:
            return object_key(obj), self._transform(obj)
        except Exception as err:  # any object, however malformed, is skipped, never fatal
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            self._log.warning(
                "cannot read object, skipped",
                object=f"{(meta or {}).get('namespace', '')}/{(meta or {}).get('name', '?')}",
                error=repr(err)[:500],
            )
            return None

    def _notify(self, key: str, old: T | None, new: T | None) -> None:
        try:
            self._on_change(key, old, new)
        except Exception as err:  # one object's handler must not stop the informer
            self._log.warning("change handler failed, skipped", object=key, error=repr(err)[:500])

    async def _watch(self) -> None:
        assert self._rv is not None
        async for event in self.client.watch(
            self.resource,
            self.namespace,
            self._rv,
            label_selector=self.label_selector,
            timeout_seconds=self._settings.timeout_seconds,
        ):
            kind = event.get("type")
            obj = event.get("object") or {}
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if kind == "BOOKMARK":
                if rv:
                    self._rv = rv
                continue
            if rv:
                self._rv = rv
            if kind == "DELETED":
                key = object_key(obj)
                self._notify(key, self.store.pop(key, None), None)
                continue
            read = self._read(obj)
            if read is None:
                continue
            key, value = read
            previous = self.store.get(key)
            self.store[key] = value
            self._notify(key, previous, value)


class StartupFailed(Exception):
    """A component could not start (e.g. a cache that never synced); the message says which."""


async def start_informer(
    task_group: TaskGroup, informer: Informer[Any], timeout: float, *, required: bool = True
) -> bool:
    """Start `informer` in `task_group` and wait up to `timeout` seconds for its first list. True
    once listed; when it is not in time, a `required` cache fails start-up naming its kind, and
    another is left to list when it can (said in the log) and False returned."""
    task_group.start_soon(informer.run, name=f"watch:{informer.resource}")
    with anyio.move_on_after(timeout):
        await informer.synced.wait()
    if informer.synced.is_set():
        return True
    if required:
        raise StartupFailed(
            f"the cache of {informer.resource} did not sync within {timeout:.0f} s "
            "(is the API server reachable, the CRD installed and the kind allowed by RBAC?)"
        )
    log.warning("cache not listed in time, going on without it", resource=str(informer.resource), seconds=timeout)
    return False
