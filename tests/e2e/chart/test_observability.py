"""The provider's telemetry in the tools its users run, on a real node: the pod exports its spans to
a real Jaeger through the chart's own `tracing.otlpEndpoint` (and, with `tracing.llm`, points every
llm Instance's vLLM at the same Jaeger), and a real Prometheus scrapes the pod
through the chart's Service with a ServiceAccount token of its own (metrics.protection rbac: the
provider asks the API server with a TokenReview and a SubjectAccessReview), evaluates the chart's
alerts on what it scraped, and answers for the reconcile counter and the example Instances."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from cluster.node import NodeCluster
from cluster.node_config import NODE_IP
from jaeger import Jaeger, attributes
from prometheus import Prometheus, chart_rules
from tests.e2e.support import (
    EXAMPLES_NAMESPACE,
    KSERVE_RESOURCE,
    MEASUREMENTS,
    RELEASE,
    RELEASE_NAMESPACE,
    SERVICE_ACCOUNT,
    examples,
    get_json,
    instances,
    kubectl,
    synced,
    the_leader,
)
from tests.support.built_tools import built
from tests.support.helm import helm_binary
from tests.support.waiting import wait_for_sync


@pytest.fixture(scope="module")
def jaeger(node: NodeCluster) -> Iterator[Jaeger]:
    """Jaeger on the node's bridge address, which the pods reach (as they reach the API server)."""
    with Jaeger(host=NODE_IP).start(built("jaeger", "jaeger")) as running:
        yield running


@pytest.fixture(scope="module")
def release(node: NodeCluster, install: Callable[..., None], jaeger: Jaeger) -> str:
    # test_incluster, before this on the same cluster, left the examples applied: they go first, so
    # that the provider installed with tracing creates every one's objects anew (its applies are
    # among the spans the test looks for).
    kubectl(node, "delete", "instances", "--all", "-n", EXAMPLES_NAMESPACE, "--ignore-not-found", "--wait",
            "--timeout=180s")  # fmt: skip
    install(
        f"tracing.otlpEndpoint={jaeger.otlp_http}",
        f"tracing.llm.otlpEndpoint={jaeger.otlp_grpc}",
        "tracing.llm.all=true",
    )
    node.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": EXAMPLES_NAMESPACE}}))  # fmt: skip
    for path in examples():
        kubectl(node, "apply", "-n", EXAMPLES_NAMESPACE, "-f", str(path))
    wait_for_sync(
        lambda: len(instances(node)) == len(examples()) and all(synced(i) for i in instances(node)),
        what="every example Instance synced",
        timeout=180,  # the chart's pod starting and KServe's admission on a loaded node, as test_incluster
        interval=0.5,
    )
    return RELEASE


def example_keys(node: NodeCluster) -> set[str]:
    return {f"{EXAMPLES_NAMESPACE}/{i['metadata']['name']}" for i in instances(node)}


def test_the_pods_spans_arrive_in_jaeger_through_the_charts_settings(
    node: NodeCluster, release: str, jaeger: Jaeger
) -> None:
    the_leader(node)
    keys = example_keys(node)

    def reconciled_roots() -> dict[str, dict[str, Any]] | None:
        spans = jaeger.traces()  # service.name provider-kserve: the pod's own resource
        children = {s.get("parentSpanId") for s in spans}
        roots = {
            attributes(s)["instance"]: s
            for s in spans
            if s["name"] == "reconcile" and not s.get("parentSpanId") and s["spanId"] in children
        }
        return roots if keys <= set(roots) else None

    roots = wait_for_sync(reconciled_roots, what="a reconcile trace of every example Instance in Jaeger", timeout=120)
    for key in keys:
        assert attributes(roots[key])["reconcile.result"] in ("success", "error"), key
    # The chart told the provider to point every llm Instance's vLLM at the same collector, but
    # where an Instance names a collector of its own (examples/instance-llm.yaml).
    llm = [i for i in instances(node) if i["spec"]["topology"]["type"] == "llm"]
    own = {i["metadata"]["name"]: (i["spec"]["topology"].get("parameters") or {}).get("tracingEndpoint") for i in llm}
    assert llm and None in own.values()
    for name, endpoint in own.items():
        service = get_json(node, KSERVE_RESOURCE["llm"], "-n", EXAMPLES_NAMESPACE, name)
        assert service["spec"]["tracing"] == {"exporterEndpoint": endpoint or jaeger.otlp_grpc}, name
    spans = jaeger.traces()
    writes = [attributes(s) for s in spans if s["name"] == "apply"]
    kinds = {w["k8s.kind"] for w in writes if w.get("http.response.status_code") in (200, 201)}
    assert {"LLMInferenceService", "InferenceService"} <= kinds


def test_prometheus_scrapes_the_pod_through_the_service_with_its_own_token(
    node: NodeCluster, release: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    workdir = tmp_path_factory.mktemp("prometheus")
    # Prometheus' own identity, bound to the ClusterRole the chart README says to bind it to.
    kubectl(node, "create", "namespace", "monitoring")
    kubectl(node, "create", "serviceaccount", "prometheus", "-n", "monitoring")
    kubectl(
        node, "create", "clusterrolebinding", "prometheus-provider-kserve", f"--clusterrole={release}-metrics-reader",
        "--serviceaccount=monitoring:prometheus",
    )  # fmt: skip
    token = workdir / "token"
    token.write_text(kubectl(node, "create", "token", "prometheus", "-n", "monitoring").strip())
    service = yaml.safe_load(kubectl(node, "get", "service", "-n", RELEASE_NAMESPACE, release, "-o", "yaml"))
    port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "metrics")
    programmed = functools.partial(node.service_programmed, RELEASE_NAMESPACE, release)
    wait_for_sync(programmed, what="kube-proxy's rules for the provider's endpoints", timeout=60)
    # The chart's alerts as the Prometheus Operator would load them.
    (workdir / "rules.yaml").write_text(yaml.safe_dump(chart_rules(helm_binary(), release, RELEASE_NAMESPACE)))
    config = {
        "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
        "rule_files": [str(workdir / "rules.yaml")],
        "scrape_configs": [
            {
                "job_name": "provider-kserve",
                "scheme": "https",
                # The provider's own self-signed certificate (metrics.tlsSecretName unset).
                "tls_config": {"insecure_skip_verify": True},
                "authorization": {"credentials_file": str(token)},
                "static_configs": [
                    {
                        "targets": [f"{service['spec']['clusterIP']}:{port}"],
                        # What the chart's PodMonitor labels its series with.
                        "labels": {"namespace": RELEASE_NAMESPACE},
                    }
                ],
            }
        ],
    }
    scrapes_from = datetime.now(UTC)
    with Prometheus(config, workdir).start(built("prometheus", "prometheus")) as prometheus:
        wait_for_sync(
            lambda: prometheus.query('up{job="provider-kserve"} == 1'), what="the provider's target up", timeout=60
        )
        reconciles = prometheus.query('sum by (result) (provider_reconciles_total{job="provider-kserve"})')
        successes = reconciles.get((("result", "success"),), 0.0)
        assert successes >= len(examples()), reconciles

        def phases_of_every_example() -> dict[tuple[tuple[str, str], ...], float] | None:
            by_phase = prometheus.query("sum by (phase) (provider_instances)")
            return by_phase if _total(by_phase) == len(examples()) else None

        by_phase = wait_for_sync(
            phases_of_every_example, what="every example Instance among the Instances by phase", timeout=60
        )
        phases = {dict(labels)["phase"] for labels in by_phase}
        assert phases <= {"Pending", "Provisioning", "Initializing", "Ready", "Updating", "Failed"}, phases
        assert prometheus.query("max(provider_leader)") == {(): 1.0}
        assert _total(prometheus.query("process_resident_memory_bytes")) > 2**20

        # The chart's alerts evaluate cleanly on the real series; the provider is up and leads (an
        # evaluation before the first scrape finds no series: "down" is pending until the next).
        def rules_after_a_scrape() -> dict[str, dict[str, Any]] | None:
            groups = _evaluated(prometheus.api("rules")["groups"])
            rules = {r["name"]: r for g in groups or [] for r in g["rules"]}
            up = (
                rules and rules["ProviderKServeDown"]["state"] == rules["ProviderKServeNoLeader"]["state"] == "inactive"
            )
            return rules if up else None

        rules = wait_for_sync(
            rules_after_a_scrape, what="the chart's rules evaluated, the provider up and leading", timeout=30
        )
        assert {r["health"] for r in rules.values()} == {"ok"}, {n: r.get("lastError") for n, r in rules.items()}
        MEASUREMENTS["prometheus_peak_mib"] = (
            round(prometheus.process.peak_kib() / 1024, 1) if prometheus.process else 0
        )
    # Each scrape was checked by the provider asking the API server (metrics.protection rbac).
    reviews = [
        e
        for e in node.audit_events()
        if (e.get("objectRef") or {}).get("resource") == "tokenreviews"
        and (e.get("user") or {}).get("username") == SERVICE_ACCOUNT
        and datetime.fromisoformat(e["stageTimestamp"].replace("Z", "+00:00")) >= scrapes_from
    ]
    assert reviews, "no TokenReview by the provider while Prometheus scraped"


def _total(vector: dict[Any, float]) -> float:
    return sum(vector.values())


def _evaluated(groups: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    rules = [r for g in groups for r in g["rules"]]
    return groups if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules) else None
