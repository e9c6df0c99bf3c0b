"""The phase an Instance shows over its whole life, the same rules for both topologies.

A topology first maps KServe's status onto a report of the spec KServe last reconciled (Ready with
connection details, Provisioning or Failed, with KServe's words; provider.topologies.llm.status,
provider.topologies.predictor.status). The rules here turn it into the Instance's phase, from what
the Instance asks for (suspended or not), the phase it showed before this pass (`previous`) and
what KServe's object says of its own progress (`KServeState`). In order:

1. **Suspending**: the Instance asks to be suspended (replicas 0 on its serving component, see
   provider.topologies.suspension) and KServe does not yet report the object stopped.
   **Suspended**: the stored object carries the stop annotation and KServe reports it stopped (the
   InferenceService's condition `Stopped` is True; the LLMInferenceService's `MainWorkloadReady`
   is False with reason Stopped): KServe deleted the workloads. No connection details are
   reported in either; the runtime keeps the `<instance>-conn` Secret and `status.connection` as
   they were (the OpenEverest runtime never deletes the Secret), which hold the address the model
   answers on again once resumed.
2. Not suspended, after Suspending, Suspended or Resuming, or while KServe still reports the
   object stopped or the stored object still carries the annotation: **Resuming** until KServe
   reports Ready for the current spec, then **Ready**; **Failed** when KServe says the spec
   cannot be served.
3. After Ready or Updating:
   - KServe reports a failure the user must fix (a configuration it cannot combine, a runtime it
     cannot find) → **Failed**;
   - KServe has not reconciled the spec the provider sent yet (`waiting`: the LLMInferenceService's
     status.observedGeneration is behind its generation; the InferenceService was changed by this
     very pass) → **Updating**, saying what it waits for and whether the previous generation still
     serves; the connection details of the serving generation stay;
   - KServe reports Ready: **Ready**, unless the Instance was Updating and KServe says its workload
     is still being replaced (`rolling`) → **Updating** with KServe's words;
   - after Updating, KServe's Ready is not True → **Updating** with KServe's words (a change that
     cannot roll out stays Updating with KServe's reason, never back in Provisioning);
   - after Ready, without a change, KServe's Ready is not True: the topology's report (Ready
     while the workload still serves, with KServe's words; otherwise Provisioning).
4. Otherwise (a new Instance, or one that was Provisioning or Failed): **Provisioning** while KServe
   has not reconciled the current spec (a Failed or Ready of an older spec is not taken for it),
   else the topology's report.

KServe 0.20 does not report every rollout: the LLMInferenceService's Ready stays True while its
Deployment replaces pods (the old ones stay available), and the InferenceService's
status.observedGeneration is its Deployment's, not its own. So Updating ends when KServe has
reconciled the new generation and reports it Ready (for an InferenceService: its predictor
Deployment's rollout complete, PredictorReady with reason NewReplicaSetAvailable, which KServe may
still say of the previous rollout right after the change: nothing in its status tells them apart).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from actors import Condition, Phase, StatusReport

# After a change whose reconcile KServe's status may never mention (an InferenceService's
# maxReplicas changes its HPA only, and KServe writes no status that did not change), look again.
CHANGE_POLL: Final = 5.0
SUSPENSION_PHASES: Final = frozenset({Phase.SUSPENDING.value, Phase.SUSPENDED.value, Phase.RESUMING.value})
SERVING_PHASES: Final = frozenset({Phase.READY.value, Phase.UPDATING.value})


@dataclass(frozen=True)
class KServeState:
    """What KServe's object (as stored after this pass's apply) says of its own progress."""

    kind: str
    # The stored object carries the stop annotation.
    stop_requested: bool = False
    # KServe reports it stopped (its workloads deleted).
    stopped: bool = False
    # Why KServe's status cannot describe the current spec yet (its observedGeneration is behind).
    stale: str | None = None
    # KServe reconciled the spec and reports its workload still being replaced: its words.
    rolling: str | None = None
    # This pass sent KServe a new spec of the object.
    changed: bool = False

    @property
    def waiting(self) -> str | None:
        """Why KServe has yet to act on the spec the provider sent, or None."""
        if self.stale is not None:
            return self.stale
        if self.changed:
            return f"Waiting for KServe to reconcile the changed {self.kind}"
        return None


def suspension(
    state: KServeState | None, conditions: Sequence[Condition], *, kind: str, component: str, progress: str = ""
) -> StatusReport:
    """Rule 1: Suspended once KServe reports the object stopped, else Suspending. `state` is None
    before the object exists; `progress`: KServe's own words on where it stands."""
    if state is None:
        return StatusReport(Phase.SUSPENDING, f"Waiting for the {kind}, created stopped", tuple(conditions))
    if state.stop_requested and state.stopped:
        message = (
            f"{component} replicas is 0, so KServe stopped the {state.kind} and deleted its pods; "
            f"the {state.kind} and the Instance's other objects are kept. Set {component} replicas above 0 "
            "to resume."
        )
        return StatusReport(Phase.SUSPENDED, message, tuple(conditions))
    message = f"Waiting for KServe to stop the {state.kind}"
    if progress:
        message += f" (it says: {progress})"
    return StatusReport(Phase.SUSPENDING, message, tuple(conditions))


def lifecycle(report: StatusReport, previous: str | None, state: KServeState | None) -> StatusReport:
    """Rules 2-4 for an Instance that does not ask to be suspended; `report` is the topology's
    mapping of KServe's status (Ready while serving only after Ready)."""
    if state is None:
        return report
    if previous in SUSPENSION_PHASES or state.stopped or state.stop_requested:
        return _resuming(report, state)
    if previous in SERVING_PHASES:
        return _updating(report, previous, state)
    if state.stale is not None:
        return StatusReport(Phase.PROVISIONING, state.stale, report.conditions)
    if state.changed and report.phase is Phase.FAILED:
        # That failure is about the spec before this change, which may have fixed it.
        message = f"{state.waiting} (it last said: {report.message})"
        return StatusReport(Phase.PROVISIONING, message, report.conditions, requeue_after=CHANGE_POLL)
    return report


def _resuming(report: StatusReport, state: KServeState) -> StatusReport:
    if state.stop_requested:
        words = f"the {state.kind} still carries the stop annotation"
    elif state.stopped:
        words = f"KServe still reports the {state.kind} stopped"
    elif report.phase is Phase.FAILED or (report.phase is Phase.READY and state.waiting is None):
        return report
    else:
        words = state.waiting or report.message or f"waiting for KServe to report the {state.kind} Ready"
    return StatusReport(
        Phase.RESUMING,
        words[:1].upper() + words[1:],
        report.conditions,
        requeue_after=CHANGE_POLL if state.changed else None,
    )


def _updating(report: StatusReport, previous: str | None, state: KServeState) -> StatusReport:
    if report.phase is Phase.FAILED:
        return report
    waiting = state.waiting
    if waiting is not None:
        if report.phase is Phase.READY:
            serving = report.message or "the previous generation serves"
            return replace(
                report,
                phase=Phase.UPDATING,
                message=f"{waiting}; {serving}",
                requeue_after=CHANGE_POLL if state.changed else None,
            )
        message = f"{waiting} (it last said: {report.message})" if report.message else waiting
        return StatusReport(
            Phase.UPDATING, message, report.conditions, requeue_after=CHANGE_POLL if state.changed else None
        )
    if report.phase is Phase.READY and (previous == Phase.READY.value or state.rolling is None):
        return report
    if previous == Phase.UPDATING.value:
        words = state.rolling if report.phase is Phase.READY else report.message
        return replace(report, phase=Phase.UPDATING, message=f"KServe rolls out the {state.kind}: {words}")
    return report
