"""The chart's alerts and its dashboards' PromQL, checked by the real promtool (built from the
Prometheus module by dev/build-controlplane.sh): every alert fires and resolves on synthetic series
(`promtool test rules`), and every expression of the three Grafana dashboards parses and type-checks
(`promtool check rules` on a rule file holding each as a recording rule). No control plane: seconds."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from actors.observe.metrics import RuntimeMetrics
from tests.support.built_tools import built
from tests.support.chart import CHART, by_kind, one, render

pytestmark = pytest.mark.integration

PROMETHEUS_RULE = "monitoring.coreos.com/v1/PrometheusRule"
ALERT_TESTS = Path(__file__).parent / "prometheus" / "alerts.test.yaml"
DASHBOARDS = sorted((CHART / "files" / "dashboards").glob("*.json"))
# What Grafana puts in for its own variables; a dashboard variable becomes a match-all regex.
GRAFANA_INTERVALS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}


@pytest.fixture(scope="module")
def promtool() -> Path:
    return built("prometheus", "promtool")


def promtool_run(promtool: Path, *args: str | Path) -> None:
    proc = subprocess.run([str(promtool), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"promtool {' '.join(map(str, args))}:\n{proc.stdout}\n{proc.stderr}"


def alert_rules(chart: Path, *sets: str) -> dict[str, Any]:
    spec: dict[str, Any] = one(render(chart, *sets, api_versions=[PROMETHEUS_RULE]), "PrometheusRule")["spec"]
    return spec


def test_every_alert_fires_and_resolves(chart: Path, promtool: Path, tmp_path: Path) -> None:
    rules = alert_rules(chart)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    tests = shutil.copy(ALERT_TESTS, tmp_path / "alerts.test.yaml")
    promtool_run(promtool, "check", "rules", tmp_path / "rules.yaml")
    promtool_run(promtool, "test", "rules", tests)

    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    cases = yaml.safe_load(ALERT_TESTS.read_text())["tests"]
    for alert in alerts:
        evaluations = [t for case in cases for t in case["alert_rule_test"] if t["alertname"] == alert]
        assert any(t["exp_alerts"] for t in evaluations), f"{alert} is never seen firing"
        fired = min(t["eval_time"] for t in evaluations if t["exp_alerts"])
        assert any(not t["exp_alerts"] and t["eval_time"] > fired for t in evaluations), f"{alert} never resolves"
    assert alerts == {
        "ProviderKServeDown",
        "ProviderKServeNoLeader",
        "ProviderKServeReconcileErrors",
        "ProviderKServeInstanceNotReady",
        "ProviderKServeQueueWaitHigh",
        "ProviderKServeMemoryNearLimit",
    }
    runbooks = (CHART / "README.md").read_text()
    assert not [alert for alert in alerts if f"`{alert}`" not in runbooks], "an alert without a runbook line"


def test_rule_thresholds_toggle_and_labels(chart: Path) -> None:
    assert not by_kind(render(chart), "PrometheusRule")  # the API does not serve it
    disabled = render(chart, "metrics.prometheusRule.enabled=false", api_versions=[PROMETHEUS_RULE])
    assert not by_kind(disabled, "PrometheusRule")
    sets = ("metrics.prometheusRule.labels.release=kps", "metrics.prometheusRule.instanceNotReadySeconds=600")
    docs = render(chart, *sets, api_versions=[PROMETHEUS_RULE])
    rule = one(docs, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kps"
    exprs = {r["alert"]: r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert exprs["ProviderKServeInstanceNotReady"].endswith("> 600")
    assert 'namespace="kserve-system"' in exprs["ProviderKServeDown"]


def dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    """Every panel target's expression and every query variable's series selector, Grafana's
    variables put in as Grafana would."""
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((.+),\s*\w+\)", variable["definition"])
            assert match, variable["definition"]
            queries.append(match[1])
    return [re.sub(r"\$\{?(\w+)\}?", lambda m: GRAFANA_INTERVALS.get(m[1], ".*"), q) for q in queries]


def test_every_dashboard_query_is_valid_promql(promtool: Path, tmp_path: Path) -> None:
    assert {p.name for p in DASHBOARDS} == {"provider.json", "vllm.json", "gateway.json"}
    rules = []
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        queries = dashboard_queries(dashboard)
        assert queries, path
        prefix = "dashboard:" + re.sub(r"\W", "_", dashboard["uid"])
        rules += [{"record": f"{prefix}:{n}", "expr": q} for n, q in enumerate(queries)]
    (tmp_path / "dashboards.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    promtool_run(promtool, "check", "rules", tmp_path / "dashboards.yaml")


def test_provider_dashboard_and_alerts_name_only_metrics_the_runtime_exposes(chart: Path) -> None:
    metrics = RuntimeMetrics()
    metrics.reconciles.labels(result="success").inc()
    metrics.observe_request("get", "instances", 200, 0.01)
    metrics.observe_queue_wait(0.1, urgent=True)
    metrics.observe_reconcile(0.1, urgent=False)
    metrics.step_seconds.labels(step="sync").observe(0.1)
    metrics.step_errors.labels(step="sync").inc()
    metrics.gc_pause_seconds.labels(generation="2").observe(0.001)
    metrics.instance_phases.record("ns/name", "Ready")
    exposed = {
        sample.name
        for family in text_string_to_metric_families(generate_latest(metrics.registry).decode())
        for sample in family.samples
    }
    provider = json.loads((CHART / "files" / "dashboards" / "provider.json").read_text())
    alerts = alert_rules(chart)
    texts = [*dashboard_queries(provider), *(r["expr"] for g in alerts["groups"] for r in g["rules"])]
    named = {name for text in texts for name in re.findall(r"\b((?:provider|process)_\w+)", text)}
    assert named and named <= exposed, named - exposed
