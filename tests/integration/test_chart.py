"""The Helm chart: lint, template with the defaults and with every toggle flipped, and its RBAC
on the real control plane.

Helm is built from its Go module at the version pinned in dev/build-controlplane.sh and cached
(`HELM` overrides the binary). The chart is rendered from a scratch copy into which the KServe CRDs
and presets are vendored (hack/vendor-kserve.sh, from shared/crds/kserve) and in which the four
chart dependencies are stubbed: their real tarballs need a registry, and Helm refuses to render a
chart whose declared dependencies are missing even when they are disabled. Each stub renders one
ConfigMap holding the values it received, so the toggles and value plumbing are still checked.

`service_account_kubeconfig` is the helper for running the provider under the chart's
ServiceAccount: it applies the rendered ServiceAccount and RBAC to the control plane and returns a
kubeconfig holding a token of that ServiceAccount (TokenRequest).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from actors.interface import KubeObject, Resource
from actors.kube import ApiError, KubeClient
from controlplane import (
    CRD,
    ControlPlane,
    create_or_replace,
    service_account_token,
    shared_dir,
)
from provider import rbac
from tests.support.helm import helm

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "provider-kserve"
BUILD_SCRIPT = ROOT / "dev" / "build-controlplane.sh"
RELEASE_NAMESPACE = "kserve-system"

SERVICE_ACCOUNT = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CLUSTER_ROLE = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDING = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)
ROLE = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDING = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
SSAR = Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False)
RBAC_RESOURCES = {
    "ServiceAccount": SERVICE_ACCOUNT,
    "ClusterRole": CLUSTER_ROLE,
    "ClusterRoleBinding": CLUSTER_ROLE_BINDING,
    "Role": ROLE,
    "RoleBinding": ROLE_BINDING,
}


# -- helm ----------------------------------------------------------------------------------------


STUB_TEMPLATE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: stub-{{ .Chart.Name | lower }}
  namespace: {{ .Release.Namespace }}
data:
  values: {{ toJson .Values | quote }}
"""


def prepare_chart(dest: Path) -> Path:
    """A copy of the chart with the KServe files vendored and the dependencies stubbed."""
    chart = dest / "provider-kserve"
    shutil.copytree(CHART, chart, ignore=shutil.ignore_patterns("charts", "Chart.lock", "serving.kserve.io_*.yaml"))
    kserve_src = shared_dir() / "crds" / "kserve"
    subprocess.run(
        ["bash", str(chart / "hack" / "vendor-kserve.sh"), str(chart)],
        check=True,
        capture_output=True,
        env={**os.environ, "KSERVE_SRC": str(kserve_src)},
    )
    for dep in yaml.safe_load((chart / "Chart.yaml").read_text())["dependencies"]:
        stub = chart / "charts" / dep["name"]
        (stub / "templates").mkdir(parents=True)
        (stub / "Chart.yaml").write_text(
            yaml.safe_dump({"apiVersion": "v2", "name": dep["name"], "version": dep["version"]})
        )
        (stub / "templates" / "values.yaml").write_text(STUB_TEMPLATE)
    return chart


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_chart(tmp_path_factory.mktemp("chart"))


def render(
    chart: Path,
    *sets: str,
    release: str = "provider-kserve",
    namespace: str = RELEASE_NAMESPACE,
    api_versions: Sequence[str] = (),
    stubs: bool = False,
) -> list[KubeObject]:
    """The rendered documents; the dependency stubs' ConfigMaps only with `stubs`."""
    args = ["template", release, str(chart), "--namespace", namespace]
    for value in sets:
        args += ["--set", value]
    for api in api_versions:
        args += ["--api-versions", api]
    proc = helm(*args, check=False)
    if proc.returncode != 0:
        raise RenderError(proc.stderr)
    docs = [doc for doc in yaml.safe_load_all(proc.stdout) if doc]
    return [d for d in docs if stubs or not d["metadata"]["name"].startswith("stub-")]


class RenderError(Exception):
    pass


def by_kind(docs: Sequence[KubeObject], kind: str) -> list[KubeObject]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: Sequence[KubeObject], kind: str, name: str | None = None) -> KubeObject:
    found = [d for d in by_kind(docs, kind) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def container(docs: Sequence[KubeObject]) -> dict[str, Any]:
    deployment = one(docs, "Deployment")
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(main, dict)
    return main


def parse_run_args(args: list[str]) -> Any:
    """The Deployment's args as `provider-kserve run` parses them (unknown flags fail)."""
    import argparse

    from provider.commands import run

    parser = argparse.ArgumentParser()
    run.register(parser.add_subparsers())
    return parser.parse_args(["run", *args])


def env(docs: Sequence[KubeObject]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(docs)["env"]}


# -- lint ----------------------------------------------------------------------------------------


def test_helm_lint(chart: Path) -> None:
    helm("lint", "--strict", str(chart))
    helm(
        "lint",
        "--strict",
        str(chart),
        "--set",
        "aiGateway.enabled=true,metrics.grafanaDashboards.enabled=true",
    )


def test_lint_fresh_checkout(tmp_path: Path) -> None:
    """A checkout without vendored files or dependencies lints: Helm only warns about the missing
    dependencies."""
    fresh = tmp_path / "provider-kserve"
    vendored = ("charts", "Chart.lock", "serving.kserve.io_*.yaml", "llmisvcconfigs.yaml")
    shutil.copytree(CHART, fresh, ignore=shutil.ignore_patterns(*vendored))
    result = helm("lint", str(fresh))
    assert "missing these dependencies" in result.stdout


# -- template: defaults ---------------------------------------------------------------------------


def test_template_defaults(chart: Path) -> None:
    docs = render(chart)
    kinds = sorted({d["kind"] for d in docs})
    assert kinds == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "LLMInferenceServiceConfig",
        "NetworkPolicy",
        "Provider",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    # Namespaced objects all land in the release namespace.
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding", "Provider"):
            assert doc["metadata"]["namespace"] == RELEASE_NAMESPACE, doc["metadata"]["name"]

    deployment = one(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "provider-kserve"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    main = container(docs)
    # `make image` tags the image with the project version, the chart's appVersion.
    assert main["image"] == f"provider-kserve:{yaml.safe_load((CHART / 'Chart.yaml').read_text())['appVersion']}"
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    assert main["securityContext"]["allowPrivilegeEscalation"] is False
    assert main["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert {p["name"]: p["containerPort"] for p in main["ports"]} == {
        "metrics": 8080,
        "health": 8081,
        "http": 8082,
    }
    assert main["resources"]["requests"] and main["resources"]["limits"]
    parsed = parse_run_args(main["args"])
    assert (parsed.metrics_port, parsed.health_port, parsed.validation_port) == (8080, 8081, 8082)
    assert parsed.leader_elect is True and parsed.lease_name == "provider-kserve-leader"
    assert {m["mountPath"] for m in main["volumeMounts"]} == {"/tmp"}

    values = yaml.safe_load((CHART / "values.yaml").read_text())
    variables = env(docs)
    assert json.loads(variables["LORA_ADAPTER_CATALOG"]) == values["loraAdapters"]
    assert variables["HF_TOKEN_SECRET_NAME"] == ""
    assert variables["AI_GATEWAY_ENABLED"] == "false"
    assert variables["ENABLE_POD_MONITOR"] == "true"
    assert variables["POD_MONITOR_INTERVAL"] == "30s"
    assert variables["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert not [name for name in variables if name.startswith("OTEL_")]

    service = one(docs, "Service")
    assert {p["name"]: (p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {
        "http": (8082, "http"),
        "metrics": (8080, "metrics"),
    }

    # RBAC is exactly the generated rules.
    assert one(docs, "ClusterRole", "provider-kserve")["rules"] == rbac.policy_rules("cluster")
    assert one(docs, "Role")["rules"] == rbac.policy_rules("namespace")
    binding = one(docs, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "provider-kserve", "namespace": RELEASE_NAMESPACE}
    ]

    # The Provider CR: generated spec + catalogs + release.
    provider = one(docs, "Provider")
    generated = yaml.safe_load((CHART / "generated" / "provider-spec.yaml").read_text())
    assert provider["metadata"]["name"] == generated["name"] == "provider-kserve"
    spec = provider["spec"]
    assert spec["release"] == {"version": "0.1.0"}
    catalog = spec["uiSchema"]["llm"].pop("modelCatalog")
    lora = spec["uiSchema"]["llm"].pop("loraCatalog")
    spec.pop("release")
    assert spec == generated["spec"]
    assert len(catalog) == len(values["models"])
    assert {
        "label": "Llama 3.1 8B Instruct (gated)",
        "uri": "hf://meta-llama/Llama-3.1-8B-Instruct",
    } in catalog
    assert {"label": "OPT 125M", "uri": "hf://facebook/opt-125m"} in catalog
    assert lora == values["loraAdapters"]

    # KServe's ten presets plus the CPU profile, in the release namespace.
    configs = {d["metadata"]["name"]: d for d in by_kind(docs, "LLMInferenceServiceConfig")}
    assert len(configs) == 11
    assert "kserve-config-llm-template" in configs and "kserve-config-llm-scheduler" in configs
    cpu = configs["kserve-config-llm-cpu"]["spec"]["template"]["containers"][0]
    assert cpu["name"] == "main"
    assert cpu["image"] == "vllm/vllm-openai-cpu:v0.25.1"
    assert cpu["args"] == ["--gpu-memory-utilization=0.3", "--enforce-eager", "--max-model-len=2048"]
    # KServe's own Go templates inside the presets are left for the controller.
    route = configs["kserve-config-llm-router-route"]
    assert "{{ .GlobalConfig.IngressGatewayNamespace }}" in json.dumps(route)


def test_local_cluster_installs_the_charts_cpu_preset(chart: Path) -> None:
    """The KServe stack of the tests and the demo (dev/kservestack) builds `kserve-config-llm-cpu`
    from the chart's values: it must be what the chart renders."""
    from kservestack.manifests import CPU_PRESET_NAME, cpu_preset

    rendered = one(render(chart, namespace="kserve"), "LLMInferenceServiceConfig", CPU_PRESET_NAME)
    ours = cpu_preset("kserve")
    assert (ours["apiVersion"], ours["metadata"]["namespace"]) == (rendered["apiVersion"], "kserve")
    assert ours["spec"] == rendered["spec"]


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
    (vllm,) = by_kind(docs, "ConfigMap")
    assert vllm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert vllm["metadata"]["namespace"] == RELEASE_NAMESPACE
    (content,) = vllm["data"].values()
    assert json.loads(content)["panels"]
    docs = render(
        chart,
        "metrics.grafanaDashboards.enabled=true",
        "metrics.grafanaDashboards.namespace=monitoring",
        "aiGateway.enabled=true",
    )
    maps = by_kind(docs, "ConfigMap")
    assert len(maps) == 2 and {m["metadata"]["namespace"] for m in maps} == {"monitoring"}
    for cm in maps:
        for text in cm["data"].values():
            assert json.loads(text)["title"]


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


# -- the real control plane -------------------------------------------------------------------------


def rendered_rbac(chart: Path, namespace: str, release: str) -> list[KubeObject]:
    """The ServiceAccount, ClusterRole/Binding and Role/Binding the chart renders for `release`."""
    return [d for d in render(chart, release=release, namespace=namespace) if d["kind"] in RBAC_RESOURCES]


async def apply_rbac(kube: KubeClient, objects: Sequence[KubeObject]) -> str:
    """Create or replace the rendered RBAC objects; return the ServiceAccount name."""
    for obj in objects:
        await create_or_replace(kube, RBAC_RESOURCES[obj["kind"]], obj)
    (sa,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    name: str = sa["metadata"]["name"]
    return name


async def service_account_kubeconfig(
    controlplane: ControlPlane,
    kube: KubeClient,
    namespace: str,
    directory: Path,
    *,
    chart: Path | None = None,
    release: str | None = None,
) -> Path:
    """Apply the chart's ServiceAccount and RBAC (release namespace `namespace`) and return a
    kubeconfig that authenticates as that ServiceAccount, to run the provider exactly as deployed."""
    if chart is None:
        chart = prepare_chart(directory / f"chart-{uuid.uuid4().hex[:6]}")
    release = release or f"pk-{namespace}"
    sa = await apply_rbac(kube, rendered_rbac(chart, namespace, release))
    token = await service_account_token(kube, namespace, sa)
    return controlplane.write_kubeconfig(directory / f"{release}.kubeconfig", token, user=sa)


async def allowed(client: KubeClient, attributes: dict[str, str]) -> bool:
    review = await client.create(
        SSAR,
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"resourceAttributes": attributes},
        },
    )
    return bool(review["status"].get("allowed"))


async def test_rbac_on_the_control_plane(
    controlplane: ControlPlane, kube: KubeClient, namespace: str, chart: Path, tmp_path: Path
) -> None:
    release = f"pk-{namespace}"
    objects = rendered_rbac(chart, namespace, release)
    kubeconfig = await service_account_kubeconfig(controlplane, kube, namespace, tmp_path, chart=chart, release=release)
    try:
        async with await KubeClient.connect(str(kubeconfig)) as client:
            denied = [
                str(c) for c in rbac.access_checks(namespace) if not await allowed(client, c.resource_attributes())
            ]
            assert denied == [], f"the chart's RBAC does not grant: {denied}"
            # Secrets are watched (label-selected) so a deleted `-conn` Secret is restored; they are
            # never updated, and never deleted in bulk (docs/security.md).
            must_not = [
                {"group": "", "resource": "secrets", "verb": "update"},
                {"group": "", "resource": "secrets", "verb": "deletecollection"},
                {"group": "", "resource": "secrets", "verb": "*"},
                {"group": "", "resource": "configmaps", "verb": "get"},
                {"group": "", "resource": "pods", "verb": "list"},
                {"group": "", "resource": "events", "verb": "create"},
                {"group": "", "resource": "namespaces", "verb": "delete"},
                {"group": "core.openeverest.io", "resource": "instances", "verb": "create"},
                {"group": "core.openeverest.io", "resource": "instances", "verb": "delete"},
                {"group": "core.openeverest.io", "resource": "instances", "verb": "update"},
                {"group": "serving.kserve.io", "resource": "inferenceservices", "verb": "update"},
                {"group": "core.openeverest.io", "resource": "providers", "verb": "update"},
                {"group": "serving.kserve.io", "resource": "llminferenceservices", "verb": "*"},
                {"group": "serving.kserve.io", "resource": "servingruntimes", "verb": "create"},
                {"group": "coordination.k8s.io", "resource": "leases", "verb": "get", "namespace": "default"},
                {
                    "group": "coordination.k8s.io",
                    "resource": "leases",
                    "verb": "delete",
                    "namespace": namespace,
                },
                {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "verb": "escalate"},
                {"group": "*", "resource": "*", "verb": "*"},
            ]
            granted = [a for a in must_not if await allowed(client, a)]
            assert granted == [], f"the chart's RBAC grants more than the provider needs: {granted}"
            # And a real call: listing Instances works, listing ConfigMaps is forbidden.
            instances = Resource("core.openeverest.io", "v1alpha1", "instances", "Instance")
            await client.list(instances)
            with pytest.raises(ApiError) as forbidden:
                await client.list(Resource("", "v1", "configmaps", "ConfigMap"))
            assert forbidden.value.status == 403
    finally:
        for obj in objects:
            if not RBAC_RESOURCES[obj["kind"]].namespaced:
                await kube.delete(RBAC_RESOURCES[obj["kind"]], None, obj["metadata"]["name"])


def _served(crds: Sequence[KubeObject]) -> dict[tuple[str, str], Resource]:
    served: dict[tuple[str, str], Resource] = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served"):
                served[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = Resource(
                    spec["group"],
                    version["name"],
                    spec["names"]["plural"],
                    spec["names"]["kind"],
                    spec["scope"] == "Namespaced",
                )
    return served


BUILTIN = {
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("v1", "Service"): Resource("", "v1", "services", "Service"),
    ("v1", "ConfigMap"): Resource("", "v1", "configmaps", "ConfigMap"),
    ("v1", "Secret"): Resource("", "v1", "secrets", "Secret"),
    ("networking.k8s.io/v1", "NetworkPolicy"): Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    ("apps/v1", "Deployment"): Resource("apps", "v1", "deployments", "Deployment"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): CLUSTER_ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
}


def _lost(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Paths of `sent` that the API server dropped or changed (its schema defaults may add fields)."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        return [p for key, value in sent.items() for p in _lost(value, stored.get(key, _MISSING), f"{path}.{key}")]
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        return [p for i, (a, b) in enumerate(zip(sent, stored, strict=True)) for p in _lost(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [path]


_MISSING = object()


async def test_rendered_objects_are_accepted_unchanged(kube: KubeClient, namespace: str, chart: Path) -> None:
    """Every object the chart renders (all toggles on) passes the real API server's validation in a
    server-side dry run (strict field validation), and nothing is pruned from the Provider CR or the
    KServe presets."""
    crds = (await kube.list(CRD))["items"]
    served = {**_served(crds), **BUILTIN}
    docs = render(
        chart,
        "aiGateway.enabled=true",
        "aiGateway.tls.enabled=true",
        "aiGateway.tls.hostname=llm.example.com",
        "aiGateway.tls.selfSigned=true",
        "metrics.grafanaDashboards.enabled=true",
        release=f"pk-{namespace}",
        namespace=namespace,
        api_versions=["monitoring.coreos.com/v1/PodMonitor"],
    )
    unserved = []
    for doc in docs:
        res = served.get((doc["apiVersion"], doc["kind"]))
        if res is None:
            unserved.append(doc["kind"])
            continue
        stored = await kube.request(
            "POST",
            res.path(doc["metadata"].get("namespace") if res.namespaced else None),
            query={"dryRun": "All", "fieldValidation": "Strict"},
            body=doc,
            resource=str(res),
        )
        if doc["kind"] in ("Provider", "LLMInferenceServiceConfig"):
            lost = _lost(doc["spec"], stored["spec"])
            assert lost == [], f"{doc['kind']} {doc['metadata']['name']}: pruned or changed {lost}"
    # Envoy Gateway's EnvoyProxy CRD is not among the shared CRDs.
    assert sorted(set(unserved)) == ["EnvoyProxy"]


def test_crds_vendored_match_shared(chart: Path) -> None:
    vendored = sorted((chart / "crds").glob("*.yaml"))
    assert len(vendored) == 8
    for crd in vendored:
        assert crd.read_bytes() == (shared_dir() / "crds" / "kserve" / crd.name).read_bytes()
