"""Map the observed LLMInferenceService (and friends) onto the Instance status.

The phase follows provider.topologies.lifecycle (the same rules for both topologies: Suspending,
Suspended, Resuming, Updating, Failed, Ready, Provisioning, in that order); this module maps what
KServe's status says of the spec it last reconciled (contract.md §1.3, kserve-behavior §4.1, going
beyond the Go provider where it misled), and says when KServe has not reconciled the current spec
yet (status.observedGeneration behind metadata.generation, or absent after an edit):

- `llmEngine.replicas` 0 (the LLMInferenceService carries `serving.kserve.io/stop`) → Suspending
  until KServe reports `MainWorkloadReady=False` with reason Stopped, then Suspended; the route,
  quota and external Service it keeps say so in their conditions (own_conditions);
- replicas back above 0 → Resuming until KServe's `Ready=True` for the current spec, then Ready;
- a Ready Instance whose spec changes → Updating from the pass that applies the new generation until
  KServe reports that generation observed and Ready, then Ready; Failed when KServe cannot combine
  the new configuration, and Updating with KServe's words while its Ready stays not True;
- no LLMInferenceService yet → Provisioning `Waiting for LLMInferenceService`;
- KServe has not yet looked at the current spec of an Instance that was not Ready → Provisioning, so
  a Ready from before an edit is not reported for the edited spec;
- a Ready Instance, without a change, whose workload still has ready replicas while KServe's Ready
  is not True (KServe retrying an update of its Deployment that lost a conflict: seen with 0.20) →
  stays Ready, the message giving KServe's words. The first Ready is always KServe's;
- KServe cannot combine the configuration (PresetsCombined or Ready False with ConfigNotFound,
  CombineBaseError or InvalidRenderedConfig: a missing preset or baseRef, a config the API server
  rejects) → Failed, with what to check. Go showed these as Provisioning forever (§10.7);
- KServe `Ready=True` → Ready, with connection details:
  - AI Gateway: the gateway URL once the route is accepted and the Gateway has an address
    (Provisioning until then);
  - LoadBalancer/NodePort: that endpoint once assigned; until then Ready with the in-cluster URL
    and `ExternalAccessReady=False` explaining the wait (the model already serves in-cluster);
  - gateway routing: KServe's `status.url`;
  - otherwise the in-cluster URL of KServe's workload Service on port 8000;
- anything else → Provisioning with KServe's own Ready message.

KServe 0.20 keeps an AI-Gateway-fronted service at `WaitingForGateway`: it waits for a Gateway of
its own to adopt the InferencePool, which never happens when the Envoy AI Gateway routes to the pool
through an AIGatewayRoute. When the workloads are ready, that is the only thing KServe waits for
and the route is accepted, the Instance is Ready and the `AIGatewayRoute` condition says why
KServe's Ready is False.

Every KServe condition is passed through with a `KServe` prefix (`KServeReady`,
`KServeWorkloadsReady`, …) carrying KServe's reason and message; the provider adds its own
conditions for what it decided (provider.topologies.llm.own_conditions; external access and the
gateway route here).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Final

from actors import Condition, ConnectionDetails, KubeObject, Phase, StatusReport
from provider.model import kinds, names
from provider.model.settings import ProviderSettings
from provider.topologies import kserve_conditions
from provider.topologies.kserve_conditions import passthrough_conditions
from provider.topologies.lifecycle import KServeState, lifecycle, suspension
from provider.topologies.llm import connection_details
from provider.topologies.llm.gateway import route_state
from provider.topologies.llm.inputs import COMPONENT, LlmInputs
from provider.topologies.llm.own_conditions import (
    AI_GATEWAY_ROUTE,
    EXTERNAL_ACCESS,
    provider_conditions,
    suspended_conditions,
)
from provider.topologies.protocol import Observed, StatusInputs
from provider.topologies.suspension import llmisvc_stopped, stop_requested
from provider.topologies.urls import url_details

# No status poll: the LLMInferenceService and the other derived objects are watched, so KServe's
# progress arrives as events (the manager's periodic resync is the safety net).

WAITING_LLMISVC: Final = "Waiting for LLMInferenceService"
CREATING: Final = "LLMInferenceService is being created"
WAITING_GATEWAY_ADDRESS: Final = "Waiting for Envoy AI Gateway address"
WAITING_FOR_GATEWAY: Final = "WaitingForGateway"
# KServe reasons that mean the configuration cannot be combined: waiting does not fix them.
CONFIG_FAILURES: Final = frozenset({"ConfigNotFound", "CombineBaseError", "InvalidRenderedConfig"})
# Router sub-conditions and their roll-ups; the rest of the Ready roll-up is about workloads.
_ROUTER_ROLLUPS: Final = frozenset({"Ready", "RouterReady"})
_NOT_IN_READY: Final = frozenset({"GroupReady", "GroupDegraded"})


def _ready_message(llmisvc: KubeObject) -> str:
    ready = kserve_conditions.condition(llmisvc, "Ready") or {}
    return str(ready.get("message") or ready.get("reason") or CREATING)


def config_failure(llmisvc: KubeObject) -> str | None:
    """The Failed message when KServe cannot combine the configuration, else None."""
    for type_ in ("PresetsCombined", "Ready"):
        cond = kserve_conditions.condition(llmisvc, type_)
        if cond is None or cond.get("status") != "False" or cond.get("reason") not in CONFIG_FAILURES:
            continue
        reason, message = str(cond["reason"]), str(cond.get("message") or "")
        detail = f": {message}" if message else ""
        hint = (
            "check llmEngine.parameters.baseRefs and that the provider chart installed KServe's presets "
            "(llmPresets.enabled, cpuProfile.enabled for computeProfile cpu)"
            if reason == "ConfigNotFound"
            else "check llmEngine.parameters.config and the configs in baseRefs"
        )
        return f"KServe cannot combine the LLMInferenceService configuration ({reason}{detail}); {hint}"
    return None


def only_waiting_for_gateway(llmisvc: KubeObject) -> bool:
    """Workloads ready, and every other blocking condition is KServe waiting for a Gateway."""
    if not kserve_conditions.is_true(kserve_conditions.condition(llmisvc, "WorkloadsReady")):
        return False
    blocking = [
        c for c in kserve_conditions.conditions(llmisvc) if c.get("status") != "True" and c["type"] not in _NOT_IN_READY
    ]
    waiting = [c for c in blocking if c.get("reason") == WAITING_FOR_GATEWAY]
    return bool(waiting) and all(c["type"] in _ROUTER_ROLLUPS or c in waiting for c in blocking)


# -- phases -----------------------------------------------------------------------------------


def _report(
    phase: Phase,
    message: str,
    conditions: Iterable[Condition],
    details: ConnectionDetails | None = None,
    requeue: float | None = None,
) -> StatusReport:
    return StatusReport(phase, message, tuple(conditions), details, requeue)


def _gateway_status(
    inputs: LlmInputs, llmisvc: KubeObject, observed: Observed, status_inputs: StatusInputs, conditions: list[Condition]
) -> StatusReport:
    route_name = names.ai_gateway_route_name(inputs.name)
    if kinds.AI_GATEWAY_ROUTE in status_inputs.missing:
        message = (
            "Waiting for the Envoy AI Gateway: the cluster does not serve aigatewayroutes.aigateway.envoyproxy.io "
            "(install the provider chart with aiGateway.enabled)"
        )
        conditions.append(Condition(AI_GATEWAY_ROUTE, "False", "CRDNotInstalled", message))
        return _report(Phase.PROVISIONING, message, conditions)
    accepted, why = route_state(observed.get((kinds.AI_GATEWAY_ROUTE, route_name)))
    ready = kserve_conditions.is_true(kserve_conditions.condition(llmisvc, "Ready"))
    if accepted:
        note = f"Envoy AI Gateway accepted route {route_name}"
        if not ready and only_waiting_for_gateway(llmisvc):
            note += (
                f"; KServe's Ready stays False with {WAITING_FOR_GATEWAY} because it waits for a Gateway of its own "
                f"to adopt InferencePool {names.inference_pool_name(inputs.name)}, which the AI Gateway route "
                "serves instead. The model is serving."
            )
            ready = True
        conditions.append(Condition(AI_GATEWAY_ROUTE, "True", "Accepted", note))
    else:
        conditions.append(Condition(AI_GATEWAY_ROUTE, "False", "NotAccepted", why))
    if not ready:
        return _report(Phase.PROVISIONING, _ready_message(llmisvc), conditions)
    if not accepted:
        return _report(Phase.PROVISIONING, why, conditions)
    base_url = status_inputs.gateway_base_url
    details = connection_details.gateway_details(base_url) if base_url else None
    if details is None:
        return _report(Phase.PROVISIONING, WAITING_GATEWAY_ADDRESS, conditions)
    return _report(Phase.READY, "", conditions, details)


def _external_status(
    inputs: LlmInputs, llmisvc: KubeObject, observed: Observed, status_inputs: StatusInputs, conditions: list[Condition]
) -> StatusReport:
    """LoadBalancer/NodePort: that endpoint once assigned, else in-cluster details plus the wait."""
    kind = inputs.external_service_type
    service_name = names.external_service_name(inputs.name)
    service = observed.get((kinds.SERVICE, service_name))
    if kind == "LoadBalancer":
        details = connection_details.load_balancer_details(service)
        waiting = f"Waiting for the load balancer to assign an address to Service {service_name}"
    else:
        details = connection_details.node_port_details(service, status_inputs.node_addresses)
        waiting = f"Waiting for a node port on Service {service_name} and a node address"
    if details is not None:
        conditions.append(Condition(EXTERNAL_ACCESS, "True", "Assigned", f"{kind} endpoint {details.uri}"))
        return _report(Phase.READY, "", conditions, details)
    in_cluster = connection_details.in_cluster_details(llmisvc, inputs.name, inputs.namespace)
    conditions.append(Condition(EXTERNAL_ACCESS, "False", f"{kind}Pending", f"{waiting}; in-cluster: {in_cluster.uri}"))
    return _report(Phase.READY, "", conditions, in_cluster)


def kserve_state(llmisvc: KubeObject) -> KServeState:
    kind = kinds.LLM_INFERENCE_SERVICE.kind
    return KServeState(
        kind=kind,
        stop_requested=stop_requested(llmisvc),
        stopped=llmisvc_stopped(llmisvc),
        stale=kserve_conditions.stale_generation(llmisvc, kind),
    )


def llm_status(
    inputs: LlmInputs,
    settings: ProviderSettings,
    observed: Observed,
    status_inputs: StatusInputs,
    *,
    previous: str | None = None,
) -> StatusReport:
    """`previous`: the Instance's phase before this pass."""
    own = provider_conditions(inputs, settings, status_inputs)
    if kinds.LLM_INFERENCE_SERVICE in status_inputs.missing:
        message = (
            "KServe is not installed: the cluster does not serve llminferenceservices.serving.kserve.io "
            "(the provider chart ships them in crds/: run `make vendor-kserve-crds` before packaging it, "
            "or install KServe's CRD charts)"
        )
        return _report(Phase.FAILED, message, own)
    llmisvc = observed.get((kinds.LLM_INFERENCE_SERVICE, inputs.name))
    if inputs.suspended:
        own = suspended_conditions(inputs, settings, own)
        kind = kinds.LLM_INFERENCE_SERVICE.kind
        if llmisvc is None:
            return suspension(None, own, kind=kind, component=COMPONENT)
        ready = kserve_conditions.condition(llmisvc, "Ready") or {}
        progress = "" if kserve_conditions.is_true(ready) else _ready_message(llmisvc)
        conditions = [*passthrough_conditions(llmisvc), *own]
        return suspension(kserve_state(llmisvc), conditions, kind=kind, component=COMPONENT, progress=progress)
    if llmisvc is None:
        return _report(Phase.PROVISIONING, WAITING_LLMISVC, own)
    conditions = [*passthrough_conditions(llmisvc), *own]
    was_ready = previous == Phase.READY.value
    report = _observed_status(inputs, llmisvc, observed, status_inputs, conditions, was_ready=was_ready)
    return lifecycle(report, previous, kserve_state(llmisvc))


def serving_while_reconciling(llmisvc: KubeObject) -> str | None:
    """The message for a workload that still serves while KServe's Ready is not True (a rollout, a
    scale-up, KServe retrying a failed update of its Deployment), else None."""
    ready = kserve_conditions.condition(llmisvc, "Ready") or {}
    workloads = (llmisvc.get("status") or {}).get("workloads") or {}
    replicas = (workloads.get("primary") or {}).get("readyReplicas")
    if ready.get("status") == "True" or not isinstance(replicas, int) or replicas < 1:
        return None
    words = str(ready.get("message") or ready.get("reason") or "Ready is not True")
    plural = "replica" if replicas == 1 else "replicas"
    return f"Serving from {replicas} ready {plural} while KServe reconciles the LLMInferenceService ({words})"


def _observed_status(
    inputs: LlmInputs,
    llmisvc: KubeObject,
    observed: Observed,
    status_inputs: StatusInputs,
    conditions: list[Condition],
    *,
    was_ready: bool,
) -> StatusReport:
    """What KServe's status says of the generation it last observed."""
    if (failure := config_failure(llmisvc)) is not None:
        # Still polled: installing the preset or creating the baseRef heals it without an edit.
        return _report(Phase.FAILED, failure, conditions)
    if inputs.uses_ai_gateway:
        return _gateway_status(inputs, llmisvc, observed, status_inputs, conditions)
    if not kserve_conditions.is_true(kserve_conditions.condition(llmisvc, "Ready")):
        # A Ready Instance stays Ready while its workload serves: the first Ready is KServe's.
        if was_ready and (serving := serving_while_reconciling(llmisvc)) is not None:
            report = _serving_status(inputs, llmisvc, observed, status_inputs, conditions)
            return replace(report, message=serving)
        return _report(Phase.PROVISIONING, _ready_message(llmisvc), conditions)
    return _serving_status(inputs, llmisvc, observed, status_inputs, conditions)


def _serving_status(
    inputs: LlmInputs, llmisvc: KubeObject, observed: Observed, status_inputs: StatusInputs, conditions: list[Condition]
) -> StatusReport:
    """Ready, with the connection details of the requested access."""
    if inputs.external_service_type is not None:
        return _external_status(inputs, llmisvc, observed, status_inputs, conditions)
    url = str((llmisvc.get("status") or {}).get("url") or "")
    details = url_details(url) if url else None
    if details is None:
        details = connection_details.in_cluster_details(llmisvc, inputs.name, inputs.namespace)
    return _report(Phase.READY, "", conditions, details)
