"""The Helm chart templated with every toggle flipped: dependencies, AI Gateway, TLS, PodMonitors,
dashboards, presets and values plumbing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from plane import shared_dir
from tests.support.chart import (
    CHART,
    RELEASE_NAMESPACE,
    RenderError,
    by_kind,
    container,
    env,
    one,
    parse_run_args,
    render,
)
from tests.support.helm import helm

pytestmark = pytest.mark.integration


# -- template: toggles ------------------------------------------------------------------------------


def _bool_paths(values: Any, prefix: str = "") -> Iterator[tuple[str, bool]]:
    if isinstance(values, dict):
        for key, value in values.items():
            yield from _bool_paths(value, f"{prefix}{key}.")
    elif isinstance(values, bool):
        yield prefix.rstrip("."), values


# Values that some toggles need to render at all.
TOGGLE_COMPANIONS = {
    "aiGateway.tls.enabled": ["aiGateway.enabled=true", "aiGateway.tls.hostname=llm.example.com"],
    "aiGateway.tls.selfSigned": ["aiGateway.enabled=true"],
    "serviceAccount.create": ["serviceAccount.name=existing"],
}
# A flipped toggle that must refuse to render, with the reason.
TOGGLE_ERRORS = {"aiGateway.tls.enabled": "aiGateway.tls needs an issuer"}


def test_every_toggle_flipped(chart: Path) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    toggles = list(_bool_paths(values))
    assert len(toggles) >= 15, toggles
    for path, default in toggles:
        sets = [f"{path}={str(not default).lower()}", *TOGGLE_COMPANIONS.get(path, [])]
        if path in TOGGLE_ERRORS:
            with pytest.raises(RenderError, match=TOGGLE_ERRORS[path]):
                render(chart, *sets)
            sets.append("aiGateway.tls.selfSigned=true")
        docs = render(chart, *sets, api_versions=["monitoring.coreos.com/v1/PodMonitor"])
        assert by_kind(docs, "Deployment"), path


@pytest.mark.parametrize(
    ("alias", "toggle", "value_path"),
    [
        ("kserveResources", "kserveResources.enabled", ["kserve", "controller", "deploymentMode"]),
        ("kserveLlmisvcResources", "kserveLlmisvcResources.enabled", ["kserve", "createSharedResources"]),
        ("kserveRuntimeConfigs", "kserveRuntimeConfigs.enabled", ["kserve", "llmisvcConfigs", "enabled"]),
        ("certManager", "certManager.enabled", ["crds", "enabled"]),
    ],
)
def test_dependency_toggles(chart: Path, alias: str, toggle: str, value_path: list[str]) -> None:
    # On by default, as upstream's provider chart; Helm names an aliased subchart by its alias.
    docs = render(chart, stubs=True)
    stub = one(docs, "ConfigMap", f"stub-{alias.lower()}")
    name = stub["metadata"]["name"]
    assert not [d for d in render(chart, f"{toggle}=false", stubs=True) if d["metadata"]["name"] == name]
    received = json.loads(stub["data"]["values"])
    for key in value_path:
        received = received[key]
    expected = {
        "kserveResources.enabled": "Standard",
        "kserveLlmisvcResources.enabled": False,
        "kserveRuntimeConfigs.enabled": False,
        "certManager.enabled": True,
    }[toggle]
    assert received == expected


def test_real_dependencies_on_by_default(tmp_path: Path) -> None:
    """With the real subcharts (`make chart-deps`: vendored from the KServe and cert-manager Go
    modules), the defaults render the KServe controllers, their serving runtimes and cert-manager;
    values-external-kserve.yaml leaves only the provider's own objects."""
    real = tmp_path / "provider-kserve"
    shutil.copytree(CHART, real, ignore=shutil.ignore_patterns("charts", "Chart.lock"))
    subprocess.run(["bash", str(real / "hack" / "vendor-chart-deps.sh"), str(real)], check=True, capture_output=True)
    subprocess.run(
        ["bash", str(real / "hack" / "vendor-kserve.sh"), str(real)],
        check=True,
        capture_output=True,
        env={**os.environ, "KSERVE_SRC": str(shared_dir() / "crds" / "kserve")},
    )
    docs = render(real)
    deployments = {d["metadata"]["name"] for d in by_kind(docs, "Deployment")}
    assert {"kserve-controller-manager", "llmisvc-controller-manager", "provider-kserve"} <= deployments
    assert {"cert-manager", "cert-manager-cainjector", "cert-manager-webhook"} <= deployments
    assert by_kind(docs, "ClusterServingRuntime")
    # Aliased subcharts name objects after the alias unless overridden ("certManager" is no name).
    rbac_kinds = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    invalid = [
        (d["kind"], d["metadata"]["name"])
        for d in docs
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", d["metadata"]["name"].replace(":", "-"))
        or (":" in d["metadata"]["name"] and d["kind"] not in rbac_kinds)
    ]
    assert not invalid
    external = helm("template", "provider-kserve", str(real), "-n", RELEASE_NAMESPACE, "--skip-crds",
                    "-f", str(real / "values-external-kserve.yaml")).stdout  # fmt: skip
    kinds = {d["kind"] for d in yaml.safe_load_all(external) if d}
    assert {d["metadata"]["name"] for d in yaml.safe_load_all(external) if d and d["kind"] == "Deployment"} == {
        "provider-kserve"
    }
    assert not kinds & {"ClusterServingRuntime", "CustomResourceDefinition", "Certificate", "Issuer"}


def test_ai_gateway(chart: Path) -> None:
    docs = render(chart, "aiGateway.enabled=true")
    gateway = one(docs, "Gateway", "provider-kserve-ai-gateway")
    assert gateway["spec"]["gatewayClassName"] == "provider-kserve-ai-gateway"
    (listener,) = gateway["spec"]["listeners"]
    assert listener == {
        "name": "http",
        "protocol": "HTTP",
        "port": 80,
        "allowedRoutes": {"namespaces": {"from": "All"}},
    }
    one(docs, "GatewayClass", "provider-kserve-ai-gateway")
    assert one(docs, "EnvoyProxy")["spec"]["provider"]["kubernetes"]["envoyService"]["type"] == "LoadBalancer"
    assert not by_kind(docs, "Certificate") and not by_kind(docs, "Issuer")
    variables = env(docs)
    assert variables["AI_GATEWAY_ENABLED"] == "true"
    assert variables["AI_GATEWAY_NAME"] == "provider-kserve-ai-gateway"
    assert variables["AI_GATEWAY_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert (variables["AI_GATEWAY_SCHEME"], variables["AI_GATEWAY_PORT"]) == ("http", "80")


def test_ai_gateway_tls(chart: Path) -> None:
    base = ["aiGateway.enabled=true", "aiGateway.tls.enabled=true"]
    with pytest.raises(RenderError, match=r"aiGateway\.tls\.hostname is required"):
        render(chart, *base)
    docs = render(chart, *base, "aiGateway.tls.hostname=llm.example.com", "aiGateway.tls.selfSigned=true")
    issuer = one(docs, "Issuer")
    assert issuer["spec"] == {"selfSigned": {}}
    certificate = one(docs, "Certificate")
    assert certificate["spec"] == {
        "secretName": "provider-kserve-ai-gateway-tls",
        "dnsNames": ["llm.example.com"],
        "issuerRef": {"name": issuer["metadata"]["name"], "kind": "Issuer", "group": "cert-manager.io"},
    }
    (listener,) = one(docs, "Gateway")["spec"]["listeners"]
    assert (listener["protocol"], listener["port"], listener["hostname"]) == ("HTTPS", 443, "llm.example.com")
    assert listener["tls"]["certificateRefs"] == [{"kind": "Secret", "name": "provider-kserve-ai-gateway-tls"}]
    variables = env(docs)
    assert (variables["AI_GATEWAY_SCHEME"], variables["AI_GATEWAY_PORT"]) == ("https", "443")
    assert variables["AI_GATEWAY_HOSTNAME"] == "llm.example.com"

    docs = render(chart, *base, "aiGateway.tls.hostname=llm.example.com", "aiGateway.tls.issuerRef.name=letsencrypt")
    assert not by_kind(docs, "Issuer")
    assert one(docs, "Certificate")["spec"]["issuerRef"] == {
        "name": "letsencrypt",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }


def test_pod_monitors_need_the_crd(chart: Path) -> None:
    podmonitor = ["monitoring.coreos.com/v1/PodMonitor"]
    assert not by_kind(render(chart, "aiGateway.enabled=true"), "PodMonitor")
    docs = render(chart, api_versions=podmonitor)
    (provider,) = by_kind(docs, "PodMonitor")
    # metrics.protection rbac (the default): HTTPS with the scraper ServiceAccount's token.
    scraper = "provider-kserve-metrics-scraper"
    assert provider["spec"]["podMetricsEndpoints"] == [
        {
            "port": "metrics",
            "path": "/metrics",
            "interval": "30s",
            "scheme": "https",
            "tlsConfig": {"insecureSkipVerify": True},
            "authorization": {"type": "Bearer", "credentials": {"name": scraper, "key": "token"}},
        }
    ]
    assert one(docs, "Secret", scraper)["metadata"]["annotations"] == {"kubernetes.io/service-account.name": scraper}
    binding = one(docs, "ClusterRoleBinding", scraper)
    assert binding["roleRef"]["name"] == "provider-kserve-metrics-reader"
    reader = one(docs, "ClusterRole", "provider-kserve-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    plain = render(chart, "metrics.protection=none", api_versions=podmonitor)
    assert one(plain, "PodMonitor")["spec"]["podMetricsEndpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "30s"}
    ]
    assert not [d for d in plain if d["metadata"]["name"] == scraper]
    docs = render(chart, "aiGateway.enabled=true", "metrics.podMonitor.labels.release=kps", api_versions=podmonitor)
    gateway = one(docs, "PodMonitor", "provider-kserve-ai-gateway-metrics")
    assert gateway["metadata"]["labels"]["release"] == "kps"
    assert gateway["spec"]["namespaceSelector"] == {"any": True}
    assert gateway["spec"]["selector"]["matchLabels"]["gateway.envoyproxy.io/owning-gateway-name"] == (
        "provider-kserve-ai-gateway"
    )
    docs = render(chart, "metrics.podMonitor.enabled=false", "aiGateway.enabled=true", api_versions=podmonitor)
    assert not by_kind(docs, "PodMonitor")
    assert env(docs)["ENABLE_POD_MONITOR"] == "false"


def test_grafana_dashboards(chart: Path) -> None:
    docs = render(chart, "metrics.grafanaDashboards.enabled=true")
    dashboards = {cm["metadata"]["name"]: cm for cm in by_kind(docs, "ConfigMap")}
    assert set(dashboards) == {"provider-kserve-provider-dashboard", "provider-kserve-vllm-dashboard"}
    for cm in dashboards.values():
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["namespace"] == RELEASE_NAMESPACE
        (content,) = cm["data"].values()
        assert json.loads(content)["panels"]
    docs = render(
        chart,
        "metrics.grafanaDashboards.enabled=true",
        "metrics.grafanaDashboards.namespace=monitoring",
        "aiGateway.enabled=true",
    )
    maps = by_kind(docs, "ConfigMap")
    assert len(maps) == 3 and {m["metadata"]["namespace"] for m in maps} == {"monitoring"}
    for cm in maps:
        for text in cm["data"].values():
            assert json.loads(text)["title"]


def test_tracing_values(chart: Path) -> None:
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in env(render(chart))  # no spans unless told where to send them
    docs = render(
        chart,
        "tracing.otlpEndpoint=http://jaeger.observability:4318",
        "tracing.llm.otlpEndpoint=http://jaeger.observability:4317",
        "tracing.llm.all=true",
    )
    variables = env(docs)
    assert variables["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger.observability:4318"
    assert variables["LLM_TRACING_ENDPOINT"] == "http://jaeger.observability:4317"
    assert variables["LLM_TRACING_ALL"] == "true"
    # An explicit OTEL_ variable wins, and the container gets the variable once.
    docs = render(chart, "tracing.otlpEndpoint=http://a:4318", "otel.OTEL_EXPORTER_OTLP_ENDPOINT=http://b:4318")
    names = [e["name"] for e in container(docs)["env"]]
    assert names.count("OTEL_EXPORTER_OTLP_ENDPOINT") == 1
    assert env(docs)["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://b:4318"


def test_presets_toggles(chart: Path) -> None:
    assert not by_kind(render(chart, "llmPresets.enabled=false"), "LLMInferenceServiceConfig")
    names = {
        d["metadata"]["name"] for d in by_kind(render(chart, "cpuProfile.enabled=false"), "LLMInferenceServiceConfig")
    }
    assert len(names) == 10 and "kserve-config-llm-cpu" not in names


def test_presets_need_vendoring(tmp_path: Path) -> None:
    bare = tmp_path / "provider-kserve"
    shutil.copytree(CHART, bare, ignore=shutil.ignore_patterns("charts", "Chart.lock"))
    for vendored in (bare / "files" / "kserve").glob("*.yaml"):
        vendored.unlink()
    for dep in yaml.safe_load((bare / "Chart.yaml").read_text())["dependencies"]:
        stub = bare / "charts" / dep["name"]
        stub.mkdir(parents=True)
        (stub / "Chart.yaml").write_text(
            yaml.safe_dump({"apiVersion": "v2", "name": dep["name"], "version": dep["version"]})
        )
    with pytest.raises(RenderError, match="make vendor-kserve-crds"):
        render(bare)
    assert by_kind(render(bare, "llmPresets.enabled=false"), "Deployment")


def test_values_plumbing(chart: Path) -> None:
    docs = render(
        chart,
        "otel.OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318",
        "huggingface.tokenSecretName=hf-token",
        "leaderElection.enabled=false",
        "watchNamespaces={team-a,team-b}",
        "image.repository=registry.local/provider-kserve",
        "image.digest=sha256:0123",
        "aiGateway.rateLimitRedisURL=redis:6379",
        "serviceAccount.create=false",
        "serviceAccount.name=existing",
    )
    variables = env(docs)
    assert variables["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://collector:4318"
    assert variables["HF_TOKEN_SECRET_NAME"] == "hf-token"
    assert variables["AI_GATEWAY_RATE_LIMIT_REDIS_URL"] == "redis:6379"
    main = container(docs)
    parsed = parse_run_args(main["args"])
    assert parsed.leader_elect is False
    assert parsed.namespaces == ["team-a", "team-b"]
    assert main["image"] == "registry.local/provider-kserve@sha256:0123"
    assert not by_kind(docs, "ServiceAccount")
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "existing"
    assert one(docs, "ClusterRoleBinding")["subjects"][0]["name"] == "existing"
    with pytest.raises(RenderError, match="only OTEL_"):
        render(chart, "otel.FOO=bar")
    no_rbac = render(chart, "rbac.create=false")
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} & {d["kind"] for d in no_rbac}
