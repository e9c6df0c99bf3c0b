"""The kinds the provider owns: which of them the API server serves, and an informer for each.

A kind whose CRD is absent is skipped (the provider decides whether that matters) and looked for
again every `interval` seconds; once served, its label-selected informer feeds the owned index.
Start-up (`run`'s structured start) completes when the first discovery is done and the informer of
every served kind has listed, or fails naming the kind that did not sync.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from actors.cache.informer import ChangeHandler, Informer, WatchSettings, start_informer
from actors.cache.owned_index import OwnedRef
from actors.client import KubeClient, KubeError
from actors.client.resource import KubeObject, Resource

log = structlog.get_logger(__name__)


class OwnedKinds:
    def __init__(
        self,
        client: KubeClient,
        resources: Sequence[Resource],
        *,
        scopes: Sequence[str | None],
        label_selector: str,
        transform: Callable[[Resource, KubeObject], OwnedRef | None],
        on_change: ChangeHandler[OwnedRef],
        interval: float,
        sync_timeout: float,
        settings: WatchSettings,
    ) -> None:
        self.client = client
        self.resources = list(resources)
        self.scopes = list(scopes)
        self.label_selector = label_selector
        self.transform = transform
        self.on_change = on_change
        self.interval = interval
        self.sync_timeout = sync_timeout
        self.settings = settings
        self._available: set[Resource] = set()
        self._watched: set[Resource] = set()
        self._reported_missing: set[Resource] = set()

    def available(self) -> frozenset[Resource]:
        return frozenset(self._available)

    def not_served(self, resource: Resource) -> None:
        """A kind's CRD went away after discovery: derive nothing of it until discovery sees it
        again (its informer keeps retrying on its own)."""
        self._available.discard(resource)
        self._reported_missing.discard(resource)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            await self._discover(tg, wait=True)
            task_status.started()
            while True:
                await anyio.sleep(self.interval)
                if len(self._available) < len(self.resources):
                    # A CRD installed later: its objects, if any, are not ours yet or show up as
                    # its informer lists; nothing waits for it.
                    await self._discover(tg, wait=False)

    async def _discover(self, tg: TaskGroup, *, wait: bool) -> None:
        served: dict[str, set[str]] = {}
        for resource in self.resources:
            if resource in self._available:
                continue
            if resource.api_version not in served:
                try:
                    served[resource.api_version] = await self.client.discover(resource.api_version)
                except KubeError as err:
                    log.warning("discovery failed", group_version=resource.api_version, error=str(err))
                    served[resource.api_version] = set()
            if resource.plural not in served[resource.api_version]:
                if resource not in self._reported_missing:
                    log.info("kind not served, skipping until its CRD appears", resource=str(resource))
                    self._reported_missing.add(resource)
                continue
            self._available.add(resource)
            if resource not in self._watched:
                self._watched.add(resource)
                await self._watch(tg, resource, wait=wait)

    async def _watch(self, tg: TaskGroup, resource: Resource, *, wait: bool) -> None:
        for namespace in self.scopes:
            informer: Informer[OwnedRef | None] = Informer(
                self.client,
                resource,
                namespace=namespace,
                label_selector=self.label_selector,
                transform=lambda obj, r=resource: self.transform(r, obj),  # type: ignore[misc]
                on_change=self.on_change,
                settings=self.settings,
            )
            if wait:
                await start_informer(tg, informer, self.sync_timeout)
            else:
                tg.start_soon(informer.run)
