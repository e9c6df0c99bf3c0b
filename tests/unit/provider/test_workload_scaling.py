"""KServe's autoscalers on status: what a HorizontalPodAutoscaler wants and why it cannot scale, read
from its labels and status; the Instance woken only when what its status shows changed; the
Autoscaling condition, and a Scaled Event when the count wanted changed while the Instance serves."""

from __future__ import annotations

from typing import Any

from actors import Condition, EventNote, Phase
from provider.component_status import AUTOSCALING, autoscaling_condition, scaled_events
from provider.shared_actors.workload_pods import LABEL_COMPONENT, LABEL_INSTANCE
from provider.shared_actors.workload_scaling import ScalingFacts, WorkloadScaling, scaling_facts

NO_METRICS = (
    "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for "
    "resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested "
    "resource (get pods.metrics.k8s.io)"
)


def hpa(instance: str = "iris", *, desired: int | None = 1, utilization: int | None = None, active: bool = True,
        minimum: int = 1, maximum: int = 3) -> dict[str, Any]:  # fmt: skip
    """An autoscaling/v2 HorizontalPodAutoscaler as KServe makes it for a predictor, with a status
    as kube-controller-manager writes it."""
    status: dict[str, Any] = {"currentReplicas": 1, "conditions": [
        {"type": "AbleToScale", "status": "True", "reason": "SucceededGetScale"},
        {"type": "ScalingActive", "status": "True" if active else "False",
         "reason": "ValidMetricFound" if active else "FailedGetResourceMetric",
         "message": "the HPA was able to successfully calculate a replica count" if active else NO_METRICS},
    ]}  # fmt: skip
    if desired is not None:
        status["desiredReplicas"] = desired
    if utilization is not None:
        status["currentMetrics"] = [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": utilization}}}
        ]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": f"{instance}-predictor",
            "namespace": "models",
            "labels": {LABEL_INSTANCE: instance, LABEL_COMPONENT: "predictor"},
        },
        "spec": {
            "minReplicas": minimum,
            "maxReplicas": maximum,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 55}},
                }
            ],
        },
        "status": status,
    }


def facts(**changes: Any) -> ScalingFacts:
    found = scaling_facts(hpa(**changes))
    assert found is not None
    return found


def test_what_the_autoscaler_wants_measured_and_cannot_do() -> None:
    assert facts(desired=3, utilization=87) == ScalingFacts("models/iris", "predictor", 1, 3, 3, "cpu 87% of 55%")
    without_metrics = facts(active=False)
    assert without_metrics.problem.startswith(
        "FailedGetResourceMetric: the HPA was unable to compute the replica count"
    )
    # A new autoscaler that cannot read its metrics keeps its desired count at 0, and the
    # Deployment where it is: it wants what there is.
    assert facts(desired=0, active=False).wanted == 1
    before_its_first_pass = {**hpa(), "status": {}}
    assert (found := scaling_facts(before_its_first_pass)) is not None and found.wanted is None
    assert scaling_facts({**hpa(), "metadata": {"name": "x", "namespace": "models"}}) is None  # not ours


def test_the_instance_is_woken_when_what_its_status_shows_changes_not_for_each_measurement() -> None:
    woken: list[str] = []
    actor = WorkloadScaling()

    def wake(key: str) -> bool:
        woken.append(key)
        return True

    actor._wake_key = wake
    actor.changed("models/iris-predictor", None, facts(utilization=40))
    actor.changed("models/iris-predictor", facts(utilization=40), facts(utilization=45))  # a measurement only
    actor.changed("models/iris-predictor", facts(utilization=45), facts(desired=2, utilization=90))
    assert woken == ["models/iris", "models/iris"]
    assert actor.components("models", "iris")["predictor"].wanted == 2
    actor.changed("models/iris-predictor", facts(desired=2), None)
    assert actor.components("models", "iris") == {}
    assert woken == ["models/iris"] * 3


def test_the_autoscaling_condition_says_what_each_autoscaler_wants_and_whether_it_can_scale() -> None:
    assert autoscaling_condition(("predictor",), {}) is None
    assert autoscaling_condition(("predictor",), {"predictor": facts(desired=2)}) == Condition(
        AUTOSCALING, "True", "ScalingActive", "predictor: 2 of 1 to 3 replicas wanted"
    )
    cannot = autoscaling_condition(("predictor",), {"predictor": facts(active=False)})
    assert cannot is not None and (cannot.status, cannot.reason) == ("False", "FailedGetResourceMetric")
    assert cannot.message.startswith("predictor: 1 of 1 to 3 replicas wanted, cannot scale: FailedGetResourceMetric: ")
    first = scaling_facts({**hpa(), "status": {}})
    assert first is not None
    assert autoscaling_condition(("predictor",), {"predictor": first}) == Condition(
        AUTOSCALING, "True", "ScalingActive", "predictor: 1 to 3 replicas, none wanted yet"
    )


def served(phase: str, wanted: int | None) -> dict[str, Any]:
    """An Instance whose status says its autoscaler wanted `wanted` (None: no Autoscaling condition)."""
    said = autoscaling_condition(("predictor",), {"predictor": facts(desired=wanted)} if wanted else {})
    conditions = [vars(condition) for condition in [said] if condition is not None]
    return {"metadata": {"name": "iris", "namespace": "models"}, "status": {"phase": phase, "conditions": conditions}}


def test_a_scaled_event_when_the_count_wanted_differs_from_the_one_status_says_while_serving() -> None:
    scaled = {"predictor": facts(desired=3, utilization=87)}
    assert scaled_events(served("Ready", 1), ("predictor",), scaled, Phase.READY) == (
        EventNote("Scaled", "predictor: 1 -> 3 replicas wanted by KServe's autoscaler, cpu 87% of 55%"),
    )
    assert scaled_events(served("Updating", 1), ("predictor",), scaled, Phase.READY) != ()
    # The status says 3 already (the pass after): no second Event.
    assert scaled_events(served("Ready", 3), ("predictor",), scaled, Phase.READY) == ()
    # Suspending or resuming changes the count too, and says so itself; a first count is no change.
    assert scaled_events(served("Ready", 1), ("predictor",), scaled, Phase.SUSPENDING) == ()
    assert scaled_events(served("Resuming", 1), ("predictor",), scaled, Phase.READY) == ()
    assert scaled_events(served("Ready", None), ("predictor",), scaled, Phase.READY) == ()
    assert scaled_events(served("Ready", 1), ("predictor",), {}, Phase.READY) == ()
