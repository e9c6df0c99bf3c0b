"""What an Instance's status says of its components: status.components (the pods KServe runs, and
how many are ready), the message while pods cannot start, the `Autoscaling` condition (how many
replicas KServe's autoscaler wants, and whether it can scale) and the `Scaled` Event, from what the
shared actors hold (provider.shared_actors.workload_pods, workload_scaling).

Pure functions of those facts and the Instance as read, so that a status pass reports a change once:
the Event compares with the status the Instance already has.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from actors import ComponentStatus, Condition, EventNote, KubeObject, Phase, StatusReport
from provider.shared_actors.workload_pods import PULL_REASONS, ComponentPods
from provider.shared_actors.workload_scaling import ScalingFacts

_WITHOUT_PODS = {"Ready": "ScaledToZero", "Suspended": "Suspended", "Suspending": "Suspended"}

# A component's pods that waiting will not start: the Instance's message says so, in a Warning
# Event of this reason once.
PODS_CANNOT_START: Final = "PodsCannotStart"
# Phases on the way to serving, whose message is otherwise KServe's ("Deployment does not have
# minimum availability.").
_ON_THE_WAY = frozenset({Phase.PENDING, Phase.PROVISIONING, Phase.INITIALIZING, Phase.UPDATING, Phase.RESUMING})

# The condition saying whether KServe's autoscalers can scale the Instance's components, and the
# Event when one changed how many replicas it wants.
AUTOSCALING: Final = "Autoscaling"
SCALED: Final = "Scaled"
# Phases between which a change of the wanted count is the autoscaler's news (a suspension or a
# resumption changes it too, and says so itself).
_SERVING = frozenset({Phase.READY, Phase.UPDATING})


def component_state(pods: ComponentPods, phase: Phase) -> str:
    """One word for a component: what keeps a pod from running, else Ready when every pod is,
    Starting while some are not, and without pods ScaledToZero (a Ready Instance), Suspended or
    Pending."""
    if pods.problem:
        return pods.problem
    if pods.total == 0:
        return _WITHOUT_PODS.get(phase.value, "Pending")
    return "Ready" if pods.ready == pods.total else "Starting"


def component_statuses(
    components: Sequence[str], pods: Mapping[str, ComponentPods], phase: Phase
) -> tuple[ComponentStatus, ...]:
    """status.components of an Instance whose topology runs `components`: its pods not terminating
    (total) and how many are ready, as the OpenEverest core counts them (contract.md §6). What an
    autoscaler wants is the Autoscaling condition's."""
    out: list[ComponentStatus] = []
    for name in components:
        found = pods.get(name, ComponentPods())
        out.append(ComponentStatus(name, found.ready, found.total, component_state(found, phase), found.pods))
    return tuple(out)


def held_back(report: StatusReport, components: Sequence[str], pods: Mapping[str, ComponentPods]) -> StatusReport:
    """`report` with the message of the first component whose pods cannot start (the component,
    the state, the scheduler's or the kubelet's words), while the Instance is on its way to serving;
    `report` itself otherwise."""
    if report.phase not in _ON_THE_WAY:
        return report
    for name in components:
        found = pods.get(name)
        if found is not None and found.problem:
            # ErrImagePull and ImagePullBackOff alternate while nothing changes: one word for both.
            state = "ImagePullBackOff" if found.problem in PULL_REASONS else found.problem
            return replace(
                report, message=f"{name}: {state}: {found.detail or found.problem}", warning=PODS_CANNOT_START
            )
    return report


def _wanted_words(name: str, facts: ScalingFacts) -> str:
    """ "predictor: 2 of 1 to 3 replicas wanted" (`_WANTED` reads the count back)."""
    if facts.wanted is None:
        return f"{name}: {facts.minimum} to {facts.maximum} replicas, none wanted yet"
    return f"{name}: {facts.wanted} of {facts.minimum} to {facts.maximum} replicas wanted"


_WANTED = re.compile(r"(?:^|; )([^:;]+): (\d+) of \d+ to \d+ replicas wanted")


def autoscaling_condition(components: Sequence[str], scaling: Mapping[str, ScalingFacts]) -> Condition | None:
    """Whether the components' autoscalers can scale, and how many replicas each wants within its
    range: False with the first one's reason and each one's words when one cannot (no metrics,
    say), True otherwise; None without any autoscaler. The measurements are left out: they change
    every few seconds under load, and status would be written as often."""
    parts, reasons = [], []
    for name in components:
        facts = scaling.get(name)
        if facts is None:
            continue
        words = _wanted_words(name, facts)
        if facts.problem:
            reasons.append(facts.problem.split(":", 1)[0])
            words += f", cannot scale: {facts.problem}"
        parts.append(words)
    if not parts:
        return None
    if reasons:
        return Condition(AUTOSCALING, "False", reasons[0], "; ".join(parts))
    return Condition(AUTOSCALING, "True", "ScalingActive", "; ".join(parts))


def _written_wanted(instance: KubeObject) -> dict[str, int]:
    """The count each component's autoscaler wanted, as the Instance's Autoscaling condition says
    (what the last status pass wrote)."""
    for condition in (instance.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == AUTOSCALING:
            return {name: int(count) for name, count in _WANTED.findall(str(condition.get("message") or ""))}
    return {}


def scaled_events(
    instance: KubeObject, components: Sequence[str], scaling: Mapping[str, ScalingFacts], phase: Phase
) -> tuple[EventNote, ...]:
    """A `Scaled` Event for each component whose autoscaler wants another count of replicas than
    the one the Instance's status says it wanted, while it serves (before this pass and in it). Not
    from the pods there are: one deleted by hand and replaced is no scaling."""
    before = (instance.get("status") or {}).get("phase")  # a str: Phase is a StrEnum
    if phase not in _SERVING or before not in _SERVING:
        return ()
    written = _written_wanted(instance)
    events = []
    for name in components:
        facts = scaling.get(name)
        if facts is None or facts.wanted is None or written.get(name, facts.wanted) == facts.wanted:
            continue
        measured = f", {facts.measured}" if facts.measured else ""
        note = f"{name}: {written[name]} -> {facts.wanted} replicas wanted by KServe's autoscaler{measured}"
        events.append(EventNote(SCALED, note))
    return tuple(events)
