"""provider.render.chart_values: Helm's value merging and the chart's Deployment environment, in-process.
(tests/integration/chart/test_render_values.py proves the mapping equal to `helm template`.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from provider.model.settings import ProviderSettings
from provider.render.chart_values import ValuesError, deployment_env, fullname, load_values, merge_values

CHART = Path(__file__).resolve().parents[3] / "charts" / "provider-kserve"


def test_merge_values_like_helm() -> None:
    base = {"a": {"b": 1, "c": 2}, "list": [1, 2], "gone": {"x": 1}, "scalar": 1}
    override = {"a": {"c": 3, "d": 4, "e": None}, "list": [3], "gone": None, "scalar": {"now": "a map"}}
    # Over the chart's defaults a null deletes what they define, and stays null where they do not.
    assert merge_values(base, override) == {
        "a": {"b": 1, "c": 3, "d": 4, "e": None},
        "list": [3],
        "scalar": {"now": "a map"},
    }
    # Between values files a null is a value like any other (it deletes once merged over the chart).
    assert merge_values({"gone": {"x": 1}}, {"gone": None}, defaults=False) == {"gone": None}


def test_load_values_merges_files_in_order(tmp_path: Path) -> None:
    (tmp_path / "1.yaml").write_text("huggingface: {tokenSecretName: one}\n")
    (tmp_path / "2.yaml").write_text("huggingface: {tokenSecretName: two}\n")
    (tmp_path / "empty.yaml").write_text("")
    values = load_values(CHART, [tmp_path / "1.yaml", tmp_path / "empty.yaml", tmp_path / "2.yaml"])
    assert values["huggingface"] == {"tokenSecretName": "two"}
    assert values["aiGateway"]["listener"]["port"] == 80  # the chart's default is kept
    with pytest.raises(ValuesError, match="must be a mapping"):
        (tmp_path / "list.yaml").write_text("[1]\n")
        load_values(CHART, [tmp_path / "list.yaml"])


@pytest.mark.parametrize(
    ("values", "release", "expected"),
    [
        ({}, "provider-kserve", "provider-kserve"),
        ({}, "my-provider-kserve-prod", "my-provider-kserve-prod"),
        ({}, "llm", "llm-provider-kserve"),
        ({"nameOverride": "kserve"}, "llm", "llm-kserve"),
        ({"fullnameOverride": "fixed"}, "llm", "fixed"),
        ({"fullnameOverride": "x" * 62 + "-y"}, "llm", "x" * 62),
        ({}, "r" * 48, "r" * 48 + "-provider-kserv"),  # cut at 63 characters
    ],
)
def test_fullname_follows_the_chart_helper(values: dict[str, str], release: str, expected: str) -> None:
    assert fullname(values, release) == expected


def test_chart_defaults() -> None:
    values = load_values(CHART, [])
    env = deployment_env(values, release="provider-kserve", namespace="kserve-system")
    assert env == {
        "POD_NAMESPACE": "kserve-system",
        "HF_TOKEN_SECRET_NAME": "",
        "LORA_ADAPTER_CATALOG": json.dumps(values["loraAdapters"], sort_keys=True, separators=(",", ":")),
        "MODEL_CATALOG": json.dumps(values["models"], sort_keys=True, separators=(",", ":")),
        "ENABLE_POD_MONITOR": "true",
        "POD_MONITOR_INTERVAL": "30s",
        "LLM_TRACING_ENDPOINT": "",
        "LLM_TRACING_ALL": "false",
        "AI_GATEWAY_ENABLED": "false",
        "AI_GATEWAY_NAME": "provider-kserve-ai-gateway",
        "AI_GATEWAY_NAMESPACE": "kserve-system",
        "AI_GATEWAY_SCHEME": "http",
        "AI_GATEWAY_PORT": "80",
        "AI_GATEWAY_HOSTNAME": "",
        "AI_GATEWAY_RATE_LIMIT_REDIS_URL": "",
        "POD_SECURITY_DEFAULT_LEVEL": "restricted",
        "POD_SECURITY_ALLOW_SERVICE_ACCOUNT": "false",
        "POD_SECURITY_ALLOW_SECRET_REFERENCES": "false",
    }
    settings = ProviderSettings.from_env(env)
    assert (settings.enable_pod_monitor, settings.ai_gateway_enabled, settings.ai_gateway_port) == (True, False, 80)


def test_tls_sets_scheme_port_and_hostname() -> None:
    overrides = yaml.safe_load(
        "aiGateway: {enabled: true, scheme: http, listener: {port: 8080}, tls: {enabled: true, hostname: llm.example}}"
    )
    env = deployment_env(merge_values(load_values(CHART, []), overrides), release="r", namespace="ns")
    assert (env["AI_GATEWAY_SCHEME"], env["AI_GATEWAY_PORT"], env["AI_GATEWAY_HOSTNAME"]) == (
        "https",
        "443",
        "llm.example",
    )
    without_tls = {"aiGateway": {"tls": {"hostname": "ignored"}, "listener": {"port": 8080}}}
    plain = deployment_env(merge_values(load_values(CHART, []), without_tls), release="r", namespace="ns")
    assert (plain["AI_GATEWAY_SCHEME"], plain["AI_GATEWAY_PORT"], plain["AI_GATEWAY_HOSTNAME"]) == ("http", "8080", "")


def test_otel_and_extra_env_come_last_and_win() -> None:
    values = merge_values(
        load_values(CHART, []),
        {
            "otel": {"OTEL_TRACES_SAMPLER_ARG": 0.1, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
            "extraEnv": [
                {"name": "HF_TOKEN_SECRET_NAME", "value": "from-extra-env"},
                {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            ],
        },
    )
    env = deployment_env(values, release="r", namespace="ns")
    assert env["HF_TOKEN_SECRET_NAME"] == "from-extra-env"
    assert env["OTEL_TRACES_SAMPLER_ARG"] == "0.1"
    assert "FROM_SECRET" not in env
