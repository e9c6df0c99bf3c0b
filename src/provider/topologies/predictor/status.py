"""Map the observed InferenceService onto the Instance status (phase, message, conditions, details).

Phases:
- no InferenceService yet → Provisioning `Waiting for InferenceService`;
- KServe has not yet looked at the current spec (status.observedGeneration behind, or absent after
  an edit) → Provisioning, so a Ready from before an edit is not reported for the edited spec;
- KServe `Ready=True` → Ready, with connection details from the cluster-internal address;
- KServe cannot serve the spec at all (no ServingRuntime for the format, unknown or disabled
  runtime, model failed to load) → Failed with a message that says what to do. The Go provider
  showed these as Provisioning forever (kserve-behavior §10.7); users need to see them;
- a Ready Instance whose model still serves while KServe's Ready drops because the Deployment
  scales up (the HPA raising replicas to a new minReplicas: with 25 % maxUnavailable rounding down
  to 0, Kubernetes reports MinimumReplicasUnavailable until the new pod is ready, and KServe turns
  Ready False) → stays Ready, the message saying it scales. Only an Instance that was Ready: the
  first Ready is KServe's;
- anything else → Provisioning with KServe's own words: the first component condition that is not
  True (PredictorReady says "Deployment does not have minimum availability." while the pods are
  pending, where Ready only says "Predictor ingress not created"), else Ready's.

KServe reports the runtime problems in `status.modelStatus` (transitionStatus `InvalidSpec` plus
`lastFailureInfo`), not in a condition: the predictor reconciler returns an error before it sets
one. `lastFailureInfo` is kept after recovery, so it only counts while the transition status still
says the spec is invalid or the load is blocked, and `Ready=True` always wins.

Every KServe condition is passed through with a `KServe` prefix (`KServeReady`,
`KServePredictorReady`, …) so `kubectl describe instance` shows KServe's own reasons. Until Ready
the report asks to be polled again: KServe status changes do not always produce an event for us.
"""

from __future__ import annotations

from typing import Any, Final

from actors import Condition, ConnectionDetails, KubeObject, Phase, StatusReport
from provider.topologies.kserve_conditions import passthrough_conditions, through_reconcile

# Shared with the llm topology, so both topologies publish details and KServe conditions alike.
from provider.topologies.urls import url_details

# No status poll: the InferenceService is watched, so KServe's progress arrives as events (the
# manager's periodic resync is the safety net).

WAITING_MESSAGE: Final = "Waiting for InferenceService"
CREATING_MESSAGE: Final = "InferenceService is being created"

# KServe FailureReason values (v1beta1 FailureInfo.reason) that waiting alone does not fix.
NO_SUPPORTING_RUNTIME: Final = "NoSupportingRuntime"
RUNTIME_NOT_RECOGNIZED: Final = "RuntimeNotRecognized"
RUNTIME_DISABLED: Final = "RuntimeDisabled"
INVALID_PREDICTOR_SPEC: Final = "InvalidPredictorSpec"
MODEL_LOAD_FAILED: Final = "ModelLoadFailed"
RUNTIME_CONFIGS_HINT: Final = "install KServe's ClusterServingRuntimes (the kserve-runtime-configs chart)"


def _conditions(isvc: KubeObject) -> list[dict[str, Any]]:
    raw = (isvc.get("status") or {}).get("conditions") or []
    return [c for c in raw if isinstance(c, dict) and isinstance(c.get("type"), str) and c["type"]]


def _condition(isvc: KubeObject, type_: str) -> dict[str, Any] | None:
    return next((c for c in _conditions(isvc) if c["type"] == type_), None)


def connection_details(url: str) -> ConnectionDetails | None:
    """Type `kserve`: host, port (explicit, else 443 for https, else 80) and the URL; IPv6-safe.
    The same rules as the llm topology's URL-derived details."""
    return url_details(url)


def _address(isvc: KubeObject) -> str:
    # The cluster-internal address (`http://<name>-predictor.<ns>.svc.cluster.local`) first: in
    # Standard mode without an ingress, `status.url` names an external domain nobody serves.
    status = isvc.get("status") or {}
    address = status.get("address") or {}
    return str(address.get("url") or status.get("url") or "")


def model_failure(isvc: KubeObject) -> str | None:
    """A Failed message when KServe says the spec cannot be served, else None."""
    status = isvc.get("status") or {}
    model_status = status.get("modelStatus") or {}
    if model_status.get("transitionStatus") not in ("InvalidSpec", "BlockedByFailedLoad"):
        return None
    info = model_status.get("lastFailureInfo") or {}
    reason, detail = info.get("reason"), str(info.get("message") or "")
    model = ((isvc.get("spec") or {}).get("predictor") or {}).get("model") or {}
    fmt = str((model.get("modelFormat") or {}).get("name") or "")
    runtime = str(model.get("runtime") or "")
    kserve = f" (KServe: {detail})" if detail else ""

    if reason == NO_SUPPORTING_RUNTIME and not runtime:
        return (
            f'no ServingRuntime supports model format "{fmt}"{kserve}; {RUNTIME_CONFIGS_HINT}, '
            "or name a ServingRuntime that serves it in predictor.parameters.runtime"
        )
    if reason == NO_SUPPORTING_RUNTIME:
        return (
            f'ServingRuntime "{runtime}" does not support model format "{fmt}"{kserve}; pick a '
            "runtime that lists it, or unset predictor.parameters.runtime to let KServe choose"
        )
    if reason == RUNTIME_NOT_RECOGNIZED:
        return (
            f'no ServingRuntime or ClusterServingRuntime named "{runtime}"{kserve}; create it, '
            f"{RUNTIME_CONFIGS_HINT}, or fix predictor.parameters.runtime"
        )
    if reason == RUNTIME_DISABLED:
        return f'ServingRuntime "{runtime}" is disabled{kserve}; enable it or choose another runtime'
    if reason == INVALID_PREDICTOR_SPEC:
        return f"KServe rejected the predictor{kserve}"
    if reason == MODEL_LOAD_FAILED:
        uri = str(model.get("storageUri") or "")
        exit_code = info.get("exitCode")
        why = kserve or (f" (exit code {exit_code})" if exit_code else "")
        return f'the model from "{uri}" failed to load{why}; check predictor.parameters.storageURI'
    return None


# Where KServe says why the InferenceService is not Ready yet, most telling first: its Ready
# roll-up repeats the ingress condition ("Predictor ingress not created") as long as the predictor
# is not ready, whatever keeps the predictor back.
_PROGRESS_CONDITIONS: Final = ("PredictorReady", "TransformerReady", "ExplainerReady", "IngressReady", "Ready")


def _progress_message(isvc: KubeObject) -> str:
    for type_ in _PROGRESS_CONDITIONS:
        cond = _condition(isvc, type_) or {}
        if cond.get("status") != "True" and (words := cond.get("message") or cond.get("reason")):
            return str(words)
    return CREATING_MESSAGE


def serving_while_scaling(isvc: KubeObject) -> str | None:
    """The Ready message for a model that still serves while the predictor lacks minimum
    availability (a scale-up or rollout in progress), else None."""
    predictor = _condition(isvc, "PredictorReady") or {}
    if predictor.get("status") != "False" or predictor.get("reason") != "MinimumReplicasUnavailable":
        return None
    model_status = (isvc.get("status") or {}).get("modelStatus") or {}
    copies = (model_status.get("copies") or {}).get("totalCopies")
    if (model_status.get("states") or {}).get("activeModelState") != "Loaded" or not isinstance(copies, int):
        return None
    if copies < 1:
        return None
    detail = str(predictor.get("message") or predictor["reason"])
    return (
        f"Serving from {copies} ready cop{'y' if copies == 1 else 'ies'} while KServe scales the predictor ({detail})"
    )


def predictor_status(isvc: KubeObject | None, *, was_ready: bool = False) -> StatusReport:
    """`was_ready`: the Instance's current phase is Ready (a scale-up or an edit does not take it
    back while the previous generation serves)."""
    if isvc is None:
        return StatusReport(Phase.PROVISIONING, WAITING_MESSAGE)
    conditions = passthrough_conditions(isvc)
    report = _observed_status(isvc, conditions, was_ready)
    return through_reconcile(
        isvc, "InferenceService", report, conditions, was_ready=was_ready
    )


def _observed_status(isvc: KubeObject, conditions: list[Condition], was_ready: bool) -> StatusReport:
    ready = _condition(isvc, "Ready")
    if ready is not None and ready.get("status") == "True":
        url = _address(isvc)
        details = connection_details(url) if url else None
        return StatusReport(Phase.READY, "", conditions, details)
    if was_ready and (scaling := serving_while_scaling(isvc)) is not None:
        url = _address(isvc)
        details = connection_details(url) if url else None
        return StatusReport(Phase.READY, scaling, conditions, details)
    failure = model_failure(isvc)
    if failure is not None:
        # Still polled: installing the runtime (or the model appearing) heals it without an edit.
        return StatusReport(Phase.FAILED, failure, conditions)
    return StatusReport(Phase.PROVISIONING, _progress_message(isvc), conditions)
