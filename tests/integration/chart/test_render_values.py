"""`render -f values.yaml` derives the settings the chart's Deployment gives the provider container.

For a range of values files (defaults, the AI Gateway with a quota and TLS, release and name
overrides, catalogs, OTEL variables, extraEnv), the chart is rendered with the real `helm template`
(built by dev/build-controlplane.sh) and the container's environment (fieldRefs resolved) is
compared, variable by variable, with `provider.render.chart_values.deployment_env` for the same values;
then `render -f` is compared with `render` run under the environment Helm produced: same objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from provider.cli import main
from provider.model.catalog import parse_lora_catalog, parse_model_catalog
from provider.model.settings import ENV_VARS, ProviderSettings, SettingsError
from provider.render.chart_values import deployment_env, load_values
from tests.support.chart import container
from tests.support.helm import helm

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CATALOG_VARS = ("LORA_ADAPTER_CATALOG", "MODEL_CATALOG")

CASES: dict[str, tuple[str, str, str]] = {
    # name: (release, namespace, values.yaml)
    "defaults": ("provider-kserve", "kserve-system", ""),
    "ai-gateway": (
        "provider-kserve",
        "kserve-system",
        """
aiGateway:
  enabled: true
  scheme: https
  listener: {port: 8443}
  rateLimitRedisURL: redis.redis-system:6379
huggingface: {tokenSecretName: hf-token}
metrics: {podMonitor: {enabled: false, interval: 15s}}
""",
    ),
    "tls": (
        "llm",
        "platform",
        """
aiGateway:
  enabled: true
  listener: {port: 8080}
  tls: {enabled: true, hostname: llm.example.com, selfSigned: true}
nameOverride: kserve
""",
    ),
    "fullname-and-catalogs": (
        "r" * 48,
        "team-a",
        """
fullnameOverride: ""
models:
  - {label: "Ünïcode <model> & co", uri: "hf://o/m", gated: true}
loraAdapters:
  - {label: SQL, name: sql, uri: "hf://o/sql"}
  - {name: chat, uri: "s3://bucket/chat"}
otel:
  OTEL_EXPORTER_OTLP_ENDPOINT: http://collector:4318
  OTEL_TRACES_SAMPLER_ARG: 0.25
extraEnv:
  - {name: HF_TOKEN_SECRET_NAME, value: from-extra-env}
  - {name: FOO, value: bar}
""",
    ),
    "fullname-override": ("whatever", "ns", "fullnameOverride: pk\nloraAdapters: null\nmodels: []\n"),
    # null deletes a chart default; through toString Go prints <nil>, which the provider refuses.
    "nulls": (
        "pk",
        "ns",
        """
metrics: {podMonitor: {enabled: null, interval: null}}
aiGateway: {enabled: null, scheme: null, listener: {port: null}, rateLimitRedisURL: null}
huggingface: {tokenSecretName: null}
otel: {OTEL_SERVICE_NAME: null}
extraEnv: [{name: EMPTY, value: null}]
""",
    ),
}


def helm_env(chart: Path, release: str, namespace: str, values: Path) -> dict[str, str]:
    """The provider container's environment as `helm template` renders it (fieldRefs resolved)."""
    out = helm("template", release, str(chart), "--namespace", namespace, "-f", str(values)).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    env: dict[str, str] = {}
    for entry in container(docs)["env"]:  # the last definition of a variable wins, as in the pod
        if "valueFrom" in entry:
            assert entry["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}, entry
            env[entry["name"]] = namespace
        else:
            # `value:` left empty by a null is YAML null, which Kubernetes takes as "".
            env[entry["name"]] = "" if entry.get("value") is None else str(entry["value"])
    return env


def comparable(env: dict[str, str]) -> dict[str, Any]:
    """Catalog JSON compared as data (Go escapes <, > and & where Python need not)."""
    return {k: json.loads(v) if k in CATALOG_VARS else v for k, v in env.items()}


def settings_or_error(env: dict[str, str]) -> ProviderSettings | str:
    try:
        return ProviderSettings.from_env(env)
    except SettingsError as exc:
        return str(exc)


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_mapping_equals_helm_template(chart: Path, tmp_path: Path, case: str) -> None:
    release, namespace, text = CASES[case]
    values = tmp_path / "values.yaml"
    values.write_text(text, encoding="utf-8")
    from_helm = helm_env(chart, release, namespace, values)
    ours = deployment_env(load_values(chart, [values]), release=release, namespace=namespace)
    assert comparable(ours) == comparable(from_helm)
    # And so the settings (or the startup error) and catalogs the provider derives from them.
    assert settings_or_error(ours) == settings_or_error(from_helm)
    for var, parse in (("LORA_ADAPTER_CATALOG", parse_lora_catalog), ("MODEL_CATALOG", parse_model_catalog)):
        assert parse(ours[var]) == parse(from_helm[var])


GATEWAY_INSTANCE = """
apiVersion: core.openeverest.io/v1alpha1
kind: Instance
metadata: {name: chat, namespace: models}
spec:
  providerRef: {name: provider-kserve}
  version: "0.20"
  topology: {type: llm, parameters: {externalAccess: EnvoyAIGateway, tokenLimitPerHour: 500}}
  components:
    llmEngine:
      type: vllm
      parameters:
        modelURI: hf://Qwen/Qwen2.5-0.5B-Instruct
        modelName: qwen
        loraDeployment: enabled
        loraSlot1: qwen2.5-0.5b-sft
"""


def test_render_with_values_equals_render_in_the_helm_environment(
    chart: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(CASES["ai-gateway"][2], encoding="utf-8")
    instances = [tmp_path / "gateway.yaml", *sorted((ROOT / "examples").glob("instance-*.yaml"))]
    instances[0].write_text(GATEWAY_INSTANCE, encoding="utf-8")
    args = [str(p) for p in instances]
    for var in (*ENV_VARS.values(), *CATALOG_VARS):
        monkeypatch.delenv(var, raising=False)

    assert main(["render", "--chart", str(chart), "-f", str(values), *args]) == 0
    with_values = capsys.readouterr().out

    for var, value in helm_env(chart, "provider-kserve", "kserve-system", values).items():
        monkeypatch.setenv(var, value)
    assert main(["render", *args]) == 0
    in_helm_env = capsys.readouterr().out

    assert with_values == in_helm_env
    kinds = {d["kind"] for d in yaml.safe_load_all(with_values)}
    assert {"AIGatewayRoute", "BackendTrafficPolicy", "ServiceAccount"} <= kinds
    assert "PodMonitor" not in kinds  # metrics.podMonitor.enabled: false
