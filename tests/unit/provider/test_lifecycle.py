"""The lifecycle rules (provider.topologies.lifecycle) on their own: every phase an Instance can show
from KServe's report, the phase it showed before and what KServe's object says of its progress."""

from __future__ import annotations

from typing import Any

import pytest

from actors.interface import Condition, ConnectionDetails, Phase, StatusReport
from provider.topologies.lifecycle import CHANGE_POLL, KServeState, lifecycle, suspension

KIND = "LLMInferenceService"
DETAILS = ConnectionDetails(type="kserve", host="chat.models", port="8000", uri="http://chat.models:8000")
CONDITIONS = (Condition("KServeReady", "True", "Ready"),)
PENDING = "Deployment does not have minimum availability."
STALE = f"Waiting for KServe to reconcile the {KIND} (generation 2, observed 1)"
ROLLING = "the predictor Deployment still replaces its pods (MinimumReplicasAvailable)"

READY = StatusReport(Phase.READY, "", CONDITIONS, DETAILS)
PROVISIONING = StatusReport(Phase.PROVISIONING, PENDING, CONDITIONS)
FAILED = StatusReport(Phase.FAILED, "KServe cannot combine the configuration", CONDITIONS)


def state(**fields: Any) -> KServeState:
    return KServeState(kind=KIND, **fields)


# -- rule 1: suspension -----------------------------------------------------------------------------


def test_suspending_until_kserve_reports_the_stopped_object() -> None:
    report = suspension(state(stop_requested=True), CONDITIONS, kind=KIND, component="llmEngine")
    assert (report.phase, report.message) == (Phase.SUSPENDING, f"Waiting for KServe to stop the {KIND}")
    assert report.connection is None and report.conditions == CONDITIONS
    with_words = suspension(state(stop_requested=True), (), kind=KIND, component="llmEngine", progress=PENDING)
    assert with_words.message.endswith(f"(it says: {PENDING})")


def test_suspended_once_the_annotated_object_is_reported_stopped() -> None:
    report = suspension(state(stop_requested=True, stopped=True), CONDITIONS, kind=KIND, component="llmEngine")
    assert report.phase is Phase.SUSPENDED
    assert report.message.startswith(f"llmEngine replicas is 0, so KServe stopped the {KIND}")
    assert report.message.endswith("Set llmEngine replicas above 0 to resume.")
    assert report.connection is None and report.requeue_after is None


def test_a_stop_kserve_reports_without_the_annotation_is_not_this_suspension() -> None:
    """KServe still shows the previous suspension while the new annotation is not stored yet."""
    assert suspension(state(stopped=True), (), kind=KIND, component="llmEngine").phase is Phase.SUSPENDING


def test_an_object_not_created_yet_is_suspending() -> None:
    assert suspension(None, (), kind=KIND, component="predictor").phase is Phase.SUSPENDING


# -- rule 2: resuming -------------------------------------------------------------------------------


@pytest.mark.parametrize("previous", ["Suspending", "Suspended", "Resuming"])
def test_resuming_until_kserve_is_ready_again(previous: str) -> None:
    assert lifecycle(READY, previous, state()) == READY
    report = lifecycle(PROVISIONING, previous, state())
    assert (report.phase, report.message) == (Phase.RESUMING, PENDING)
    assert lifecycle(FAILED, previous, state()) == FAILED


@pytest.mark.parametrize("previous", [None, "Ready", "Suspended"])
def test_resuming_while_kserve_still_reports_the_object_stopped(previous: str | None) -> None:
    """Whatever the Instance showed: KServe's stop from before outlives the annotation for a moment."""
    report = lifecycle(READY, previous, state(stopped=True))
    assert (report.phase, report.message) == (Phase.RESUMING, f"KServe still reports the {KIND} stopped")
    annotated = lifecycle(READY, previous, state(stop_requested=True))
    assert annotated.message == f"The {KIND} still carries the stop annotation"


def test_resuming_right_after_the_change_looks_again() -> None:
    report = lifecycle(READY, "Suspended", state(changed=True))
    assert (report.phase, report.requeue_after) == (Phase.RESUMING, CHANGE_POLL)
    assert report.message == f"Waiting for KServe to reconcile the changed {KIND}"


# -- rule 3: updating -------------------------------------------------------------------------------


@pytest.mark.parametrize("previous", ["Ready", "Updating"])
def test_a_change_kserve_has_not_reconciled_is_updating_while_the_previous_generation_serves(previous: str) -> None:
    report = lifecycle(READY, previous, state(stale=STALE))
    assert (report.phase, report.message) == (Phase.UPDATING, f"{STALE}; the previous generation serves")
    assert report.connection == DETAILS and report.requeue_after is None
    serving = StatusReport(Phase.READY, "Serving from 1 ready replica while KServe reconciles", (), DETAILS)
    assert lifecycle(serving, previous, state(stale=STALE)).message == f"{STALE}; {serving.message}"


def test_a_change_this_pass_sent_is_updating_and_looked_at_again() -> None:
    report = lifecycle(READY, "Ready", state(changed=True))
    assert (report.phase, report.requeue_after) == (Phase.UPDATING, CHANGE_POLL)
    assert report.message == f"Waiting for KServe to reconcile the changed {KIND}; the previous generation serves"


def test_a_change_over_a_model_that_no_longer_served_is_updating_with_kserves_last_words() -> None:
    report = lifecycle(PROVISIONING, "Ready", state(stale=STALE))
    assert (report.phase, report.message) == (Phase.UPDATING, f"{STALE} (it last said: {PENDING})")
    assert report.connection is None


def test_updating_while_kserve_rolls_out_then_ready() -> None:
    rolling = lifecycle(READY, "Updating", state(rolling=ROLLING))
    assert (rolling.phase, rolling.message) == (Phase.UPDATING, f"KServe rolls out the {KIND}: {ROLLING}")
    assert rolling.connection == DETAILS
    assert lifecycle(READY, "Updating", state()) == READY


def test_a_change_that_does_not_roll_out_stays_updating_with_kserves_reason() -> None:
    report = lifecycle(PROVISIONING, "Updating", state())
    assert (report.phase, report.message) == (Phase.UPDATING, f"KServe rolls out the {KIND}: {PENDING}")


@pytest.mark.parametrize("previous", ["Ready", "Updating"])
def test_a_change_that_cannot_be_served_is_failed(previous: str) -> None:
    assert lifecycle(FAILED, previous, state()) == FAILED
    assert lifecycle(FAILED, previous, state(stale=STALE)) == FAILED


def test_a_ready_instance_without_a_change_keeps_the_topologys_word() -> None:
    """A rollout KServe reports without a change of ours (a scale by the HPA) does not make Updating,
    and a Ready Instance losing its pods is what the topology says (never Updating)."""
    assert lifecycle(READY, "Ready", state(rolling=ROLLING)) == READY
    assert lifecycle(PROVISIONING, "Ready", state()) == PROVISIONING


# -- rule 4: everything else ------------------------------------------------------------------------


@pytest.mark.parametrize("previous", [None, "Pending", "Provisioning", "Failed"])
def test_before_the_first_ready_an_older_spec_is_not_taken_for_the_current_one(previous: str | None) -> None:
    for report in (READY, PROVISIONING, FAILED):
        result = lifecycle(report, previous, state(stale=STALE))
        assert (result.phase, result.message) == (Phase.PROVISIONING, STALE)
    assert lifecycle(READY, previous, state()) == READY
    assert lifecycle(PROVISIONING, previous, state(changed=True)) == PROVISIONING


def test_a_failure_from_before_a_change_waits_for_kserve() -> None:
    report = lifecycle(FAILED, "Failed", state(changed=True))
    assert report.phase is Phase.PROVISIONING and report.requeue_after == CHANGE_POLL
    assert report.message == (
        f"Waiting for KServe to reconcile the changed {KIND} (it last said: KServe cannot combine the configuration)"
    )
    assert lifecycle(FAILED, "Failed", state()) == FAILED


def test_no_object_yet_is_the_topologys_report() -> None:
    waiting = StatusReport(Phase.PROVISIONING, f"Waiting for {KIND}")
    assert lifecycle(waiting, "Suspended", None) == waiting
