"""The Helm chart: lint, template with the defaults, and the vendored CRDs (the rendering helpers are
in tests/support/chart.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from plane import shared_dir
from provider.model import rbac
from tests.support.chart import CHART, RELEASE_NAMESPACE, by_kind, container, env, one, parse_run_args, render
from tests.support.helm import helm

pytestmark = pytest.mark.integration


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


def test_crds_vendored_match_shared(chart: Path) -> None:
    vendored = sorted((chart / "crds").glob("*.yaml"))
    assert len(vendored) == 8
    for crd in vendored:
        assert crd.read_bytes() == (shared_dir() / "crds" / "kserve" / crd.name).read_bytes()
