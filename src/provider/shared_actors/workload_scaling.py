"""KServe's autoscalers for our Instances: what each HorizontalPodAutoscaler wants and why.

In Standard mode KServe makes one HorizontalPodAutoscaler per predictor whose replica range is a
range (`minReplicas` < `maxReplicas`), and copies the labels the provider puts on the
InferenceService onto it, as onto the pods (provider.shared_actors.workload_pods). Its status says
how many replicas it wants (`desiredReplicas`: what the Deployment is driven to), what it measured
against which target, and whether it can scale at all (`ScalingActive` False: no metrics, say,
when the cluster has no metrics-server). One watch, selected by the provider label; each is kept
as a small `ScalingFacts`. When what status shows of an Instance's autoscaler changes, that one
Instance is woken, and its next status pass reports it (the `Autoscaling` condition, and a
`Scaled` Event when the count wanted changed: provider.component_status).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from actors import KubeObject, SharedActor, SharedContext, WakeKey
from provider.model.kinds import HORIZONTAL_POD_AUTOSCALERS
from provider.shared_actors.workload_pods import LABEL_COMPONENT, LABEL_INSTANCE, SELECTOR, one_line

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ScalingFacts:
    instance: str  # namespace/name of the Instance
    component: str
    minimum: int
    maximum: int
    # What the autoscaler wants (status.desiredReplicas); None before the autoscaler's first pass.
    # One that cannot read its metrics leaves the desired count as it was, 0 for a new one
    # (kube-controller-manager's setCurrentReplicasAndMetricsInStatus), and keeps the Deployment
    # where it is: then what it wants is the current count (status.currentReplicas).
    wanted: int | None
    # What it measured against its target, in a few words ("cpu 87% of 55%"); "" before it has.
    measured: str = ""
    # Why it cannot scale ("FailedGetResourceMetric: ..." from ScalingActive or AbleToScale
    # False); "" when nothing stops it.
    problem: str = ""


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _measured(spec: KubeObject, status: KubeObject) -> str:
    """ "cpu 87% of 55%" (utilization) or "memory 1.2Gi of 2Gi" (average value), for the first
    resource metric; "" when there is none or it has not been measured."""
    current = next((m.get("resource") for m in status.get("currentMetrics") or [] if m.get("resource")), None)
    target = next((m.get("resource") for m in spec.get("metrics") or [] if m.get("resource")), None)
    if not current or not target:
        return ""
    now, wanted = current.get("current") or {}, target.get("target") or {}
    name = current.get("name") or target.get("name") or "?"
    if "averageUtilization" in now and "averageUtilization" in wanted:
        return f"{name} {now['averageUtilization']}% of {wanted['averageUtilization']}%"
    if "averageValue" in now and "averageValue" in wanted:
        return f"{name} {now['averageValue']} of {wanted['averageValue']}"
    return ""


def _problem(status: KubeObject) -> str:
    for condition in status.get("conditions") or []:
        if condition.get("type") in ("ScalingActive", "AbleToScale") and condition.get("status") == "False":
            return one_line(f"{condition.get('reason') or condition['type']}: {condition.get('message') or ''}")
    return ""


def scaling_facts(hpa: KubeObject) -> ScalingFacts | None:
    """What status needs of an autoscaler; None for one without our labels."""
    meta = hpa.get("metadata") or {}
    labels = meta.get("labels") or {}
    instance, component = labels.get(LABEL_INSTANCE), labels.get(LABEL_COMPONENT)
    if not instance or not component or not meta.get("namespace") or meta.get("deletionTimestamp"):
        return None
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    return ScalingFacts(
        instance=f"{meta['namespace']}/{instance}",
        component=str(component),
        minimum=_count(spec.get("minReplicas")) or 1,
        maximum=_count(spec.get("maxReplicas")) or 0,
        wanted=_count(status.get("desiredReplicas")) or _count(status.get("currentReplicas")) or None,
        measured=_measured(spec, status),
        problem=_problem(status),
    )


class WorkloadScaling(SharedActor):
    name = "workload-scaling"

    def __init__(self) -> None:
        # Instance key → component → facts (one autoscaler per component).
        self._facts: dict[str, dict[str, ScalingFacts]] = {}
        self._wake_key: WakeKey = lambda key: False
        self.synced = anyio.Event()

    def components(self, namespace: str, name: str) -> Mapping[str, ScalingFacts]:
        """The Instance's components that have an autoscaler now (none: an empty mapping)."""
        return self._facts.get(f"{namespace}/{name}", {})

    async def run(self, ctx: SharedContext, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self._wake_key = ctx.wake_key
        async with anyio.create_task_group() as tg:
            watched = await ctx.watch(
                tg, HORIZONTAL_POD_AUTOSCALERS, transform=scaling_facts, on_change=self.changed, label_selector=SELECTOR
            )
            if watched:
                self.synced.set()
            task_status.started()

    def changed(self, key: str, old: ScalingFacts | None, new: ScalingFacts | None) -> None:
        for facts in (old, new):
            if facts is None:
                continue
            components = self._facts.setdefault(facts.instance, {})
            if new is not None and new.instance == facts.instance and new.component == facts.component:
                components[facts.component] = new
            else:
                components.pop(facts.component, None)
            if not components:
                self._facts.pop(facts.instance, None)
        if _shown(old) != _shown(new):
            for instance in {facts.instance for facts in (old, new) if facts is not None}:
                self._wake_key(instance)


def _shown(facts: ScalingFacts | None) -> ScalingFacts | None:
    """What status shows of `facts`: all but the measurement, which changes every few seconds under
    load and is only read for the next `Scaled` Event's words."""
    return replace(facts, measured="") if facts is not None else None
