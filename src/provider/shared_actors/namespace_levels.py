"""The Pod Security level of each namespace, followed with one watch for the whole provider.

Validation reads it for every Instance with pod settings of its own (provider.rules.pod_security), so it
is kept in memory (a name → level map, from the `pod-security.kubernetes.io/enforce` label) and read
without a round-trip. When a namespace's level changes, the Instances in it are woken and
revalidated, so tightening a namespace's policy reaches Instances already there.
"""

from __future__ import annotations

import anyio
import structlog
from anyio.abc import TaskStatus

from actors import KubeClient, KubeObject, SharedActor, SharedContext, Wake, wake_nobody
from provider.model.kinds import NAMESPACES
from provider.rules.pod_security import ENFORCE_LABEL, LEVELS, Level

log = structlog.get_logger(__name__)


def _level_label(obj: KubeObject) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(ENFORCE_LABEL, ""))


class NamespaceLevels(SharedActor):
    name = "namespace-levels"

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._labels: dict[str, str] = {}
        self._wake: Wake = wake_nobody
        self.synced = anyio.Event()

    def level(self, namespace: str) -> Level | None:
        """The namespace's enforced level, or None when it has no (valid) label."""
        value = self._labels.get(namespace, "")
        return value if value in LEVELS else None

    async def run(self, ctx: SharedContext, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self._wake = ctx.wake
        async with anyio.create_task_group() as tg:
            # Validate the first Instances against the real levels, not the default. The manager's
            # wait is bounded, so a slow API server delays start-up rather than blocking it.
            if await ctx.watch(tg, NAMESPACES, transform=_level_label, on_change=self._namespace_changed):
                self.synced.set()
            task_status.started()

    def _namespace_changed(self, key: str, old: str | None, new: str | None) -> None:
        if new:
            self._labels[key] = new
        else:
            self._labels.pop(key, None)
        if old is not None and new is not None and old != new:
            woken = self._wake(lambda obj: (obj.get("metadata") or {}).get("namespace") == key)
            log.info("namespace pod security level changed", namespace=key, level=new or "(none)", instances=woken)
