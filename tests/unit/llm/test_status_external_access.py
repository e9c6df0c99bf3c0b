"""Status of the llm topology's external access: LoadBalancer and NodePort endpoints."""

from __future__ import annotations

from actors.interface import Condition, ConnectionDetails, Phase
from provider.topologies.protocol import StatusInputs
from tests.support.kserve_objects import llmisvc
from tests.support.llm_status import IN_CLUSTER, NO_POLL, condition, service, status

# -- external access ------------------------------------------------------------------------------


def test_load_balancer_pending_is_ready_in_cluster_with_condition() -> None:
    report = status(llmisvc(), service(), topology={"externalAccess": "LoadBalancer"})
    assert (report.phase, report.connection, report.requeue_after) == (Phase.READY, IN_CLUSTER, NO_POLL)
    assert condition(report, "ExternalAccessReady") == Condition(
        "ExternalAccessReady",
        "False",
        "LoadBalancerPending",
        "Waiting for the load balancer to assign an address to Service chat-external; "
        "in-cluster: http://chat-kserve-workload-svc.models.svc.cluster.local:8000",
    )


def test_load_balancer_address() -> None:
    report = status(
        llmisvc(),
        service(ingress=[{"hostname": "lb.example"}, {"ip": "203.0.113.9"}]),
        topology={"externalAccess": "LoadBalancer"},
    )
    assert report.connection == ConnectionDetails(
        type="kserve", provider="provider-kserve", host="203.0.113.9", port="8000", uri="http://203.0.113.9:8000"
    )
    assert condition(report, "ExternalAccessReady") == Condition(
        "ExternalAccessReady", "True", "Assigned", "LoadBalancer endpoint http://203.0.113.9:8000"
    )
    assert report.requeue_after is None


def test_load_balancer_hostname_and_ipv6() -> None:
    by_name = status(
        llmisvc(), service(ingress=[{"hostname": "lb.example"}]), topology={"externalAccess": "LoadBalancer"}
    )
    assert by_name.connection is not None and by_name.connection.uri == "http://lb.example:8000"
    v6 = status(llmisvc(), service(ingress=[{"ip": "2001:db8::5"}]), topology={"externalAccess": "LoadBalancer"})
    assert v6.connection is not None
    assert (v6.connection.host, v6.connection.uri) == ("2001:db8::5", "http://[2001:db8::5]:8000")


def test_node_port() -> None:
    report = status(
        llmisvc(),
        service("NodePort", node_port=31234),
        component={"service": {"serviceType": "NodePort"}},
        inputs=StatusInputs(node_addresses=("198.51.100.7", "10.0.0.7")),
    )
    assert report.connection == ConnectionDetails(
        type="kserve", provider="provider-kserve", host="198.51.100.7", port="31234", uri="http://198.51.100.7:31234"
    )


def test_node_port_without_nodes_waits() -> None:
    report = status(llmisvc(), service("NodePort", node_port=31234), topology={"externalAccess": "NodePort"})
    assert report.phase == Phase.READY
    assert report.connection == IN_CLUSTER
    assert condition(report, "ExternalAccessReady").reason == "NodePortPending"


def test_external_access_not_ready_yet() -> None:
    report = status(llmisvc(ready=False), service(), topology={"externalAccess": "LoadBalancer"})
    assert report.phase == Phase.PROVISIONING
    assert "ExternalAccessReady" not in [c.type for c in report.conditions]
