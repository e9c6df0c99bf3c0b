"""Map the observed InferenceService onto the Instance status (phase, message, conditions, details).

The phase follows provider.topologies.lifecycle (the same rules for both topologies: Suspending,
Suspended, Resuming, Updating, Failed, Ready, Provisioning, in that order); this module maps what
KServe's status says:

- `predictor.replicas` 0 (the InferenceService carries `serving.kserve.io/stop`) → Suspending until
  KServe reports `Stopped=True` (it then deletes the Deployment, Service and HPA and clears the
  rest of its status), then Suspended;
- replicas back above 0 → Resuming until KServe's `Ready=True`, then Ready;
- a Ready Instance whose InferenceService this pass changed → Updating, until KServe reports Ready
  with the predictor Deployment's rollout complete (`PredictorReady` with reason
  NewReplicaSetAvailable; while it replaces pods its reason is the Deployment's
  MinimumReplicasAvailable), then Ready; Failed when KServe says the new spec cannot be served.
  KServe 0.20 copies the predictor Deployment's observedGeneration into the InferenceService's
  status.observedGeneration, so that number says nothing of the InferenceService's own generation
  (a change of maxReplicas alone never moves it): the provider goes by what it applied in this
  pass, and looks again after a few seconds (KServe writes no status for a change its status does
  not show). For the same reason a status KServe writes right after the change, before the
  Deployment controller has started the new rollout, still says the old one completed: Updating
  then ends early (tens of milliseconds in the kwok stack) while the pods turn over, as an
  LLMInferenceService's Ready stays True through its rollout;
- no InferenceService yet → Provisioning `Waiting for InferenceService`;
- KServe `Ready=True` → Ready, with connection details from the cluster-internal address;
- KServe cannot serve the spec at all (no ServingRuntime for the format, unknown or disabled
  runtime, model failed to load) → Failed with a message that says what to do. The Go provider
  showed these as Provisioning forever (kserve-behavior §10.7); users need to see them. Right after
  a change, such a failure is about the spec before it: Provisioning until KServe has looked;
- a Ready Instance, without a change, whose model still serves while KServe's Ready drops because
  the Deployment scales up (the HPA raising replicas: with 25 % maxUnavailable rounding down to 0,
  Kubernetes reports MinimumReplicasUnavailable until the new pod is ready, and KServe turns Ready
  False) → stays Ready, the message saying it scales. Only an Instance that was Ready: the first
  Ready is KServe's;
- anything else → Provisioning with KServe's own words: the first component condition that is not
  True (PredictorReady says "Deployment does not have minimum availability." while the pods are
  pending, where Ready only says "Predictor ingress not created"), else Ready's.

KServe reports the runtime problems in `status.modelStatus` (transitionStatus `InvalidSpec` plus
`lastFailureInfo`), not in a condition: the predictor reconciler returns an error before it sets
one. `lastFailureInfo` is kept after recovery, so it only counts while the transition status still
says the spec is invalid or the load is blocked, and `Ready=True` always wins.

Every KServe condition is passed through with a `KServe` prefix (`KServeReady`,
`KServePredictorReady`, …) so `kubectl describe instance` shows KServe's own reasons.
"""

from __future__ import annotations

from typing import Any, Final

from actors import Condition, ConnectionDetails, KubeObject, Phase, StatusReport
from provider.model.kinds import INFERENCE_SERVICE
from provider.topologies.kserve_conditions import passthrough_conditions
from provider.topologies.lifecycle import KServeState, lifecycle, suspension
from provider.topologies.predictor.validation import COMPONENT
from provider.topologies.suspension import isvc_stopped, stop_requested

# Shared with the llm topology, so both topologies publish details and KServe conditions alike.
from provider.topologies.urls import url_details

# No status poll: the InferenceService is watched, so KServe's progress arrives as events (the
# manager's periodic resync is the safety net); only right after a change the lifecycle looks again
# (provider.topologies.lifecycle.CHANGE_POLL).

WAITING_MESSAGE: Final = "Waiting for InferenceService"
# PredictorReady's reason once the Deployment's newest ReplicaSet has all its pods available.
ROLLED_OUT: Final = "NewReplicaSetAvailable"
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


def rolling(isvc: KubeObject) -> str | None:
    """KServe's words while the predictor Deployment replaces its pods (PredictorReady True with the
    Deployment's Available reason, not NewReplicaSetAvailable), else None."""
    predictor = _condition(isvc, "PredictorReady") or {}
    reason = predictor.get("reason")
    if predictor.get("status") != "True" or not reason or reason == ROLLED_OUT:
        return None
    detail = f"{reason}: {predictor['message']}" if predictor.get("message") else str(reason)
    return f"the predictor Deployment still replaces its pods ({detail})"


def kserve_state(isvc: KubeObject, *, changed: bool) -> KServeState:
    return KServeState(
        kind=INFERENCE_SERVICE.kind,
        stop_requested=stop_requested(isvc),
        stopped=isvc_stopped(isvc),
        rolling=rolling(isvc),
        changed=changed,
    )


def predictor_status(
    isvc: KubeObject | None, *, previous: str | None = None, changed: bool = False, suspended: bool = False
) -> StatusReport:
    """`previous`: the Instance's phase before this pass; `changed`: this pass applied a changed
    InferenceService; `suspended`: the Instance asks to be suspended (replicas 0)."""
    if suspended:
        if isvc is None:
            return suspension(None, (), kind=INFERENCE_SERVICE.kind, component=COMPONENT)
        ready = _condition(isvc, "Ready") or {}
        progress = "" if ready.get("status") == "True" else _progress_message(isvc)
        state = kserve_state(isvc, changed=changed)
        conditions = passthrough_conditions(isvc)
        return suspension(state, conditions, kind=INFERENCE_SERVICE.kind, component=COMPONENT, progress=progress)
    if isvc is None:
        return StatusReport(Phase.PROVISIONING, WAITING_MESSAGE)
    conditions = passthrough_conditions(isvc)
    report = _observed_status(isvc, conditions, was_ready=previous == Phase.READY.value)
    return lifecycle(report, previous, kserve_state(isvc, changed=changed))


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
