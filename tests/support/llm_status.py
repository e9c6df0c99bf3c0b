"""The llm topology's status in-process, for its unit tests: a status report from observed objects, and
the objects it reads beside KServe's (tests.support.kserve_objects)."""

from __future__ import annotations

from typing import Any

from actors.interface import Condition, ConnectionDetails, KubeObject, StatusReport
from provider.model import kinds
from provider.model.settings import ProviderSettings
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.protocol import StatusInputs
from tests.support.instances import as_model, llm_instance
from tests.support.llm_topology import CATALOG, GATEWAY_SETTINGS, settings

# Status follows the watched objects' events: no report asks for a poll (issue 18).
NO_POLL = None

IN_CLUSTER = ConnectionDetails(
    type="kserve",
    provider="provider-kserve",
    host="chat-kserve-workload-svc.models.svc.cluster.local",
    port="8000",
    uri="http://chat-kserve-workload-svc.models.svc.cluster.local:8000",
)
GATEWAY = settings(**GATEWAY_SETTINGS)
AI = {"externalAccess": "EnvoyAIGateway"}
BASE_URL = StatusInputs(gateway_base_url="http://203.0.113.50")


def status(
    *objects: KubeObject,
    engine: dict[str, Any] | None = None,
    settings_: ProviderSettings | None = None,
    inputs: StatusInputs | None = None,
    phase: str | None = None,
    **kwargs: Any,
) -> StatusReport:
    """The report for an Instance (built from `engine` and `kwargs`) whose phase before this pass
    was `phase`, given the observed `objects`."""
    by_kind = {r.kind: r for r in kinds.OWNED}  # the fixtures carry a kind, not always an apiVersion
    observed = {(by_kind[obj["kind"]], obj["metadata"]["name"]): obj for obj in objects}
    handler = LlmTopology(settings_ or settings())
    body = llm_instance(engine=engine, **kwargs)
    if phase is not None:
        body["status"] = {"phase": phase}
    parsed = as_model(body)
    return handler.status(parsed, handler.validate(parsed, CATALOG), observed, inputs or StatusInputs())


def condition(report: StatusReport, type_: str) -> Condition:
    return next(c for c in report.conditions if c.type == type_)


def service(
    type_: str = "LoadBalancer", *, ingress: list[dict[str, Any]] | None = None, node_port: int = 0
) -> KubeObject:
    port: dict[str, Any] = {"name": "http", "port": 8000}
    if node_port:
        port["nodePort"] = node_port
    return {
        "kind": "Service",
        "metadata": {"name": "chat-external"},
        "spec": {"type": type_, "ports": [port]},
        "status": {"loadBalancer": {"ingress": ingress or []}},
    }


def route(*conditions: dict[str, Any], generation: int = 1) -> KubeObject:
    return {
        "kind": "AIGatewayRoute",
        "metadata": {"name": "chat-ai-gateway", "generation": generation},
        "status": {"conditions": list(conditions)},
    }
