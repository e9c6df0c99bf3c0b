"""The pods KServe runs for our Instances, counted per component for status.components.

KServe copies the labels the provider puts on the LLMInferenceService (`spec.labels`) and the
InferenceService (`spec.predictor.labels`) onto the pods it creates: `core.openeverest.io/provider`,
`core.openeverest.io/instance` and `core.openeverest.io/component`, the labels OpenEverest's newer
runtime counts component pods by (contract.md §6). One watch, selected by the provider label, so
only our pods are listed and held; each is kept as a small `PodFacts` (name, ready, terminating,
what keeps it from running), never whole. When the counts or the state of an Instance's component
change, that one Instance is woken (`wake_key`), and its next status pass reports them.

What it costs (docs/performance.md has the measurement): one list and one watch for the whole
provider, about 640 B per pod held (1.3 MB for 1000 Instances of 2 pods), and a reconcile of the
Instance only when what its status shows changed (a pod becoming ready, say), not on every pod
event.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import anyio
import structlog
from anyio.abc import TaskStatus

from actors import LABEL_PROVIDER, KubeObject, SharedActor, SharedContext, WakeKey
from provider.model.kinds import PODS
from provider.model.names import PROVIDER_NAME

log = structlog.get_logger(__name__)

LABEL_INSTANCE: Final = "core.openeverest.io/instance"
LABEL_COMPONENT: Final = "core.openeverest.io/component"
SELECTOR: Final = f"{LABEL_PROVIDER}={PROVIDER_NAME},{LABEL_INSTANCE},{LABEL_COMPONENT}"

# Container waiting reasons that mean the pod will not become ready by waiting a little.
STUCK_REASONS: Final = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


@dataclass(frozen=True, slots=True)
class PodFacts:
    instance: str  # namespace/name of the Instance
    component: str
    name: str
    ready: bool
    terminating: bool
    # Why it is not running ("" when nothing is known to be wrong): a stuck container's reason,
    # Unschedulable, or the pod's Failed phase.
    problem: str = ""
    # The same in the words of whoever knows (the scheduler, the kubelet), for the Instance's
    # message: at most DETAIL_LENGTH characters, on one line; worded so that it does not change
    # while nothing changes (a pull's ErrImagePull and ImagePullBackOff alternate; a crash loop's
    # back-off grows).
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ComponentPods:
    """One component's pods: those not terminating, and which are ready."""

    pods: tuple[str, ...] = ()
    ready: int = 0
    problem: str = ""
    detail: str = ""

    @property
    def total(self) -> int:
        return len(self.pods)


DETAIL_LENGTH: Final = 300
PULL_REASONS: Final = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName"})


def one_line(text: object) -> str:
    """`text` on one line, at most DETAIL_LENGTH characters (the words of a kubelet, a scheduler or
    an autoscaler, for status)."""
    words = " ".join(str(text or "").split())
    return words if len(words) <= DETAIL_LENGTH else words[: DETAIL_LENGTH - 1] + "…"


def _container_detail(container: KubeObject, reason: str) -> str:
    name = container.get("name", "?")
    waiting = (container.get("state") or {}).get("waiting") or {}
    if reason in PULL_REASONS:
        return f"container {name}: image {container.get('image', '?')} cannot be pulled"
    if reason == "CrashLoopBackOff":
        last = (container.get("lastState") or {}).get("terminated") or {}
        how = f"exit code {last['exitCode']}" if "exitCode" in last else "no exit code yet"
        return f"container {name} keeps exiting ({how}{', ' + last['reason'] if last.get('reason') else ''})"
    return f"container {name}: {waiting.get('message') or reason}"


def _problem(pod: KubeObject) -> tuple[str, str]:
    """What keeps the pod from running, as (state, the pod's own words); ("", "") for nothing."""
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        reason = str(status.get("reason") or "Failed")
        return reason, one_line(status.get("message") or reason)
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return "Unschedulable", one_line(condition.get("message") or "no node fits the pod")
    for container in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        waiting = str(((container.get("state") or {}).get("waiting") or {}).get("reason") or "")
        if waiting in STUCK_REASONS:
            return waiting, one_line(_container_detail(container, waiting))
    return "", ""


def pod_facts(pod: KubeObject) -> PodFacts | None:
    """What status needs of a pod; None for one without our labels."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    instance, component = labels.get(LABEL_INSTANCE), labels.get(LABEL_COMPONENT)
    if not instance or not component or not meta.get("namespace"):
        return None
    status = pod.get("status") or {}
    ready = status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    problem, detail = _problem(pod)
    return PodFacts(
        instance=f"{meta['namespace']}/{instance}",
        component=str(component),
        name=str(meta.get("name", "")),
        ready=ready,
        terminating=bool(meta.get("deletionTimestamp")) or status.get("phase") == "Succeeded",
        problem=problem,
        detail=detail,
    )


def summarize(pods: Iterable[PodFacts]) -> dict[str, ComponentPods]:
    """Per component: the pods not terminating, how many are ready, the problem of the first pod
    (by name) that has one."""
    names: dict[str, list[str]] = {}
    ready: dict[str, int] = {}
    problems: dict[str, PodFacts] = {}
    for pod in sorted(pods, key=lambda p: p.name):
        if pod.terminating:
            continue
        names.setdefault(pod.component, []).append(pod.name)
        ready[pod.component] = ready.get(pod.component, 0) + int(pod.ready)
        if pod.problem and pod.component not in problems:
            problems[pod.component] = pod
    summary = {}
    for component, pods_ in names.items():
        held = problems.get(component)
        problem, detail = (held.problem, held.detail) if held else ("", "")
        summary[component] = ComponentPods(tuple(pods_), ready.get(component, 0), problem, detail)
    return summary


class WorkloadPods(SharedActor):
    name = "workload-pods"

    def __init__(self) -> None:
        # Instance key → pod key → facts.
        self._pods: dict[str, dict[str, PodFacts]] = {}
        self._summaries: dict[str, dict[str, ComponentPods]] = {}
        self._wake_key: WakeKey = lambda key: False
        self.synced = anyio.Event()

    def components(self, namespace: str, name: str) -> Mapping[str, ComponentPods]:
        """The Instance's components that have pods now (none: an empty mapping)."""
        return self._summaries.get(f"{namespace}/{name}", {})

    async def run(self, ctx: SharedContext, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self._wake_key = ctx.wake_key
        async with anyio.create_task_group() as tg:
            if await ctx.watch(tg, PODS, transform=pod_facts, on_change=self.pod_changed, label_selector=SELECTOR):
                self.synced.set()
            task_status.started()

    def pod_changed(self, key: str, old: PodFacts | None, new: PodFacts | None) -> None:
        for instance in {facts.instance for facts in (old, new) if facts is not None}:
            pods = self._pods.setdefault(instance, {})
            if new is not None and new.instance == instance:
                pods[key] = new
            else:
                pods.pop(key, None)
            summary = summarize(pods.values())
            if not pods:
                self._pods.pop(instance, None)
            if summary == self._summaries.get(instance, {}):
                continue
            if summary:
                self._summaries[instance] = summary
            else:
                self._summaries.pop(instance, None)
            self._wake_key(instance)
