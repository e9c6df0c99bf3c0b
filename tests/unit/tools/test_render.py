"""`provider-kserve render`: the example Instances against reviewed golden files, settings from Helm
values files and flags, what it says on stderr, and the CLI edges.

The goldens in tests/golden/<example>.yaml are what the controller would apply for
examples/<example>.yaml with the chart settings in `CHART_ENV` (an HF token Secret `hf-token`,
PodMonitors on) and every optional CRD installed. After an intended change, regenerate them with

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/tools/test_render.py

and review the diff like code.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from provider.cli import main
from provider.model.settings import ENV_VARS
from tests.support.instances import llm_instance

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "golden"
CATALOG = EXAMPLES / "lora-catalog.json"
CHART_VALUES = ROOT / "charts" / "provider-kserve" / "values.yaml"
CHART_ENV = {"HF_TOKEN_SECRET_NAME": "hf-token", "ENABLE_POD_MONITOR": "true", "POD_MONITOR_INTERVAL": "30s"}
PODMONITOR_NOTE = (
    "render: PodMonitor models/{name}-metrics needs CRD podmonitors.monitoring.coreos.com; "
    "the controller skips it while that CRD is not installed"
)


@pytest.fixture(autouse=True)
def chart_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*ENV_VARS.values(), "LORA_ADAPTER_CATALOG", "MODEL_CATALOG"):
        monkeypatch.delenv(var, raising=False)
    for var, value in CHART_ENV.items():
        monkeypatch.setenv(var, value)


def render(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["render", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("example", "name"),
    [("instance-llm", "llama-3-1-8b"), ("instance-llm-cpu", "smollm2-cpu"), ("instance-llm-lora", "qwen-lora")],
)
def test_example_matches_golden(example: str, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = render(capsys, str(EXAMPLES / f"{example}.yaml"), "--lora-catalog", str(CATALOG))
    assert code == 0
    assert PODMONITOR_NOTE.format(name=name) in err.splitlines()
    golden = GOLDEN / f"{example}.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8")


def test_goldens_are_stamped_with_ownership_and_resolved_versions() -> None:
    for golden in GOLDEN.glob("instance-llm*.yaml"):
        for obj in yaml.safe_load_all(golden.read_text(encoding="utf-8")):
            meta = obj["metadata"]
            assert meta["namespace"] == "models"
            assert meta["labels"]["core.openeverest.io/provider"] == "provider-kserve"
            assert meta["ownerReferences"][0]["uid"] == "00000000-0000-0000-0000-000000000000"
            if obj["kind"] == "LLMInferenceService":
                # The controller hands the translation the Instance with its bundle resolved.
                assert meta["annotations"]["core.openeverest.io/component-version"] == "0.25.1"


def instance_yaml(name: str = "chat", *, namespace: str | None = None, **spec_extra: Any) -> str:
    """An llm Instance as a user writes it (no uid), `spec_extra` set on its spec."""
    doc = llm_instance(name, namespace, uid=None, engine={"modelURI": "hf://o/m"})
    doc["spec"].update(spec_extra)
    return yaml.safe_dump(doc)


def gateway_instance_yaml() -> str:
    """An AI Gateway Instance with a quota and two explicit LoRA adapters."""
    doc = yaml.safe_load(instance_yaml(namespace="models"))
    doc["spec"]["topology"]["parameters"] = {"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 100}
    doc["spec"]["components"]["llmEngine"]["parameters"].update(
        modelName="base", lora={"adapters": [{"name": "sql", "uri": "hf://o/sql"}, {"name": "chat", "uri": "hf://o/c"}]}
    )
    return yaml.safe_dump(doc)


def write(tmp_path: Path, text: str, name: str = "instance.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def kinds(out: str) -> list[str]:
    return [doc["kind"] for doc in yaml.safe_load_all(out)]


def by_kind(out: str) -> dict[str, Any]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(out)}


# -- what is rendered, and what stderr says about it -------------------------------------------------


def test_everything_is_rendered_and_each_optional_object_names_its_crd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = render(capsys, write(tmp_path, instance_yaml(namespace="ns")))
    assert code == 0
    assert kinds(out) == ["ServiceAccount", "LLMInferenceService", "PodMonitor"]
    assert (
        "render: PodMonitor ns/chat-metrics needs CRD podmonitors.monitoring.coreos.com; the controller skips it "
        "while that CRD is not installed"
    ) in err.splitlines()


def test_required_only_skips_optional_objects_and_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = render(capsys, write(tmp_path, instance_yaml(namespace="ns")), "--required-only")
    assert (code, kinds(out)) == (0, ["ServiceAccount", "LLMInferenceService"])
    assert (
        "render: skipped PodMonitor ns/chat-metrics: it needs CRD podmonitors.monitoring.coreos.com (--required-only)"
    ) in err.splitlines()


def test_defaulted_namespace_and_placeholder_uid_are_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with_uid = yaml.safe_load(instance_yaml("three", namespace="ns"))
    with_uid["metadata"]["uid"] = "abc-123"
    text = instance_yaml("one") + "---\n" + instance_yaml("two") + "---\n" + yaml.safe_dump(with_uid)
    code, out, err = render(capsys, write(tmp_path, text))
    assert code == 0
    lines = err.splitlines()
    assert lines[:2] == [
        'render: no metadata.namespace in Instances "one", "two": rendered into namespace "default", where '
        "kubectl apply without -n would create it",
        'render: ownerReferences carry the placeholder uid 00000000-0000-0000-0000-000000000000 for Instances "one", '
        '"two" (no metadata.uid; the API server assigns the real one)',
    ]
    assert sum("placeholder uid" in line for line in lines) == 1
    objects = list(yaml.safe_load_all(out))
    assert {o["metadata"]["namespace"] for o in objects if o["metadata"]["name"].startswith("one")} == {"default"}
    three = next(o for o in objects if o["metadata"]["name"] == "three")
    assert three["metadata"]["ownerReferences"][0]["uid"] == "abc-123"


def test_nothing_said_about_what_the_documents_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(instance_yaml(namespace="ns"))
    doc["metadata"]["uid"] = "abc-123"
    code, _, err = render(capsys, write(tmp_path, yaml.safe_dump(doc)), "--required-only")
    assert code == 0
    assert "namespace" not in err and "uid" not in err


def test_a_suspended_instance_shows_the_stop_annotation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(instance_yaml(namespace="ns"))
    doc["spec"]["components"]["llmEngine"]["replicas"] = 0
    code, out, err = render(capsys, write(tmp_path, yaml.safe_dump(doc)), "--required-only")
    assert code == 0
    llmisvc = by_kind(out)["LLMInferenceService"]
    assert llmisvc["metadata"]["annotations"]["serving.kserve.io/stop"] == "true"
    assert "replicas" not in llmisvc["spec"]
    assert (
        'render: Instance "chat" is suspended (replicas 0): LLMInferenceService chat carries serving.kserve.io/stop, '
        "and the controller leaves its replica count as the object stands"
    ) in err.splitlines()


def test_several_documents_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write(tmp_path, instance_yaml("one") + "---\n" + instance_yaml("two"), "a.yaml")
    second = write(tmp_path, instance_yaml("three"), "b.yaml")
    code, out, _ = render(capsys, first, second, "--required-only")
    assert code == 0
    names = [doc["metadata"]["name"] for doc in yaml.safe_load_all(out)]
    assert names == ["one-model-puller", "one", "two-model-puller", "two", "three-model-puller", "three"]


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = render(capsys, write(tmp_path, instance_yaml()), "-o", "json")
    assert code == 0
    listing = json.loads(out)
    assert (listing["kind"], [item["kind"] for item in listing["items"]]) == (
        "List",
        ["ServiceAccount", "LLMInferenceService", "PodMonitor"],
    )


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(instance_yaml()))
    code, out, _ = render(capsys, "-")
    assert (code, kinds(out)) == (0, ["ServiceAccount", "LLMInferenceService", "PodMonitor"])


# -- errors ------------------------------------------------------------------------------------------


def test_invalid_instances_exit_1_each_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = instance_yaml(topology={"type": "llm", "parameters": {"enablePrefill": "maybe"}})
    path = write(tmp_path, bad + "---\n" + instance_yaml("fine") + "---\n" + instance_yaml("old", version="0.1"))
    code, out, err = render(capsys, path)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f'{path}: Instance "chat": topology.parameters.enablePrefill: invalid boolean value "maybe"',
        f'{path}: Instance "old": version "0.1" is not defined by provider "provider-kserve"',
    ]


def test_an_unquoted_version_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, instance_yaml().replace("spec:\n", "spec:\n  version: 0.20\n"))
    code, _, err = render(capsys, path)
    assert code == 1
    assert err == (
        f'{path}: Instance "chat": spec.version must be a string, not 0.2: quote it in YAML, where an unquoted '
        "version such as 1.10 is the number 1.1\n"
    )


def test_not_an_instance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, _, err = render(capsys, path)
    assert (code, err) == (1, f"{path}: document 1 is a ConfigMap, not an Instance\n")


def test_unreadable_catalog_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = write(tmp_path, "{not json", "catalog.json")
    code, _, err = render(capsys, write(tmp_path, instance_yaml()), "--lora-catalog", catalog)
    assert code == 2
    assert err.startswith("render: LoRA catalog is not valid JSON")


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = render(capsys, str(tmp_path / "absent.yaml"))
    assert code == 2
    assert err.startswith("render: [Errno 2] No such file or directory")


def test_bad_settings_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENABLE_POD_MONITOR", "perhaps")
    code, _, err = render(capsys, write(tmp_path, instance_yaml()))
    assert (code, err) == (2, 'render: ENABLE_POD_MONITOR: invalid boolean value "perhaps" (use true or false)\n')


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("- a\n- list\n", "Helm values must be a mapping, not list"),
        ("a: [unclosed\n", "not YAML"),
        ("metrics: {podMonitor: {interval: often}}\n", "POD_MONITOR_INTERVAL: String should match pattern"),
    ],
)
def test_bad_values_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], values: str, message: str) -> None:
    code, out, err = render(capsys, "-f", write(tmp_path, values, "values.yaml"), write(tmp_path, instance_yaml()))
    assert (code, out) == (2, "")
    assert message in err


def test_catalog_from_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORA_ADAPTER_CATALOG", CATALOG.read_text(encoding="utf-8"))
    code, out, _ = render(capsys, str(EXAMPLES / "instance-llm-lora.yaml"))
    assert code == 0
    assert out == (GOLDEN / "instance-llm-lora.yaml").read_text(encoding="utf-8")


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`render … | head`: no BrokenPipeError traceback, the status of a process killed by SIGPIPE."""
    many = "---\n".join(instance_yaml(f"i{n}") for n in range(300))
    script = "import sys; from provider.cli import main; sys.exit(main())"
    with (tmp_path / "stderr").open("w+b") as stderr:  # a file: a full stderr pipe could block the child
        proc = subprocess.Popen(
            [sys.executable, "-c", script, "render", write(tmp_path, many)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={k: v for k, v in os.environ.items() if k not in CHART_ENV},
        )
        assert proc.stdout is not None
        assert proc.stdout.read(100)
        proc.stdout.close()
        assert proc.wait(timeout=120) == 141
        stderr.seek(0)
        err = stderr.read().decode()
    assert "render: PodMonitor default/i299-metrics needs CRD" in err  # it got that far
    assert "Traceback" not in err and "BrokenPipeError" not in err


# -- settings from Helm values and flags -----------------------------------------------------------


def test_help_lists_every_setting_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["render", "--help"])
    text = capsys.readouterr().out
    for var in (*ENV_VARS.values(),):
        assert "--" + var.lower().replace("_", "-") in text
        assert f"${var}" in text
    for option in ("-f VALUES, --values VALUES", "--lora-catalog", "--model-catalog", "--release", "-o {yaml,json}"):
        assert option in text


def test_the_chart_values_render_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    examples = sorted(str(p) for p in EXAMPLES.glob("*.yaml"))
    code, out, err = render(capsys, "-f", str(CHART_VALUES), *examples)
    assert code == 0, err
    names = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out)}
    # The chart's LoRA catalog resolves the lora example's slots; no HF token, so no model-puller.
    assert ("LLMInferenceService", "qwen-lora") in names
    assert not [kind for kind, _ in names if kind == "ServiceAccount"]


def test_the_chart_values_with_the_ai_gateway(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gateway_values = write(
        tmp_path, "aiGateway:\n  enabled: true\n  rateLimitRedisURL: redis.redis:6379\n", "gateway.yaml"
    )
    examples = sorted(str(p) for p in EXAMPLES.glob("*.yaml"))
    code, _, err = render(capsys, "-f", str(CHART_VALUES), "-f", gateway_values, *examples)
    assert code == 0, err

    code, out, err = render(capsys, "-f", gateway_values, write(tmp_path, gateway_instance_yaml()))
    assert code == 0, err
    objects = by_kind(out)
    assert objects["AIGatewayRoute"]["spec"]["parentRefs"][0] == {
        "name": "provider-kserve-ai-gateway",
        "namespace": "kserve-system",
        "kind": "Gateway",
        "group": "gateway.networking.k8s.io",
    }
    rules = objects["BackendTrafficPolicy"]["spec"]["rateLimit"]["global"]["rules"]
    assert [r["clientSelectors"][0]["headers"][1]["value"] for r in rules] == ["base", "sql", "chat"]
    for kind, crd in (
        ("AIGatewayRoute", "aigatewayroutes.aigateway.envoyproxy.io"),
        ("BackendTrafficPolicy", "backendtrafficpolicies.gateway.envoyproxy.io"),
    ):
        assert f"needs CRD {crd}" in next(line for line in err.splitlines() if f"{kind} models/" in line)


def test_release_and_flags_override_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = write(
        tmp_path,
        "aiGateway: {enabled: true, rateLimitRedisURL: r:6379}\nhuggingface: {tokenSecretName: from-values}\n",
        "values.yaml",
    )
    instance = write(tmp_path, gateway_instance_yaml())
    code, out, err = render(capsys, "-f", values, "--release", "llm", "--release-namespace", "platform", instance)
    assert code == 0, err
    assert by_kind(out)["AIGatewayRoute"]["spec"]["parentRefs"][0]["name"] == "llm-provider-kserve-ai-gateway"
    assert by_kind(out)["AIGatewayRoute"]["spec"]["parentRefs"][0]["namespace"] == "platform"

    code, out, err = render(
        capsys,
        "-f", values,
        "--ai-gateway-name", "shared", "--ai-gateway-namespace", "gw",
        "--ai-gateway-rate-limit-redis-url", "",
        instance,
    )  # fmt: skip
    assert code == 0, err
    assert by_kind(out)["AIGatewayRoute"]["spec"]["parentRefs"][0]["name"] == "shared"
    assert "BackendTrafficPolicy" not in by_kind(out)  # the flag emptied the Redis URL: no quota


def test_values_files_merge_like_helm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Later files win key by key; null deletes a key, so the chart's value is gone too."""
    first = write(tmp_path, "huggingface: {tokenSecretName: first}\nmetrics: {podMonitor: {interval: 10s}}\n", "1.yaml")
    second = write(tmp_path, "huggingface: {tokenSecretName: second}\nloraAdapters: null\n", "2.yaml")
    lora = write(tmp_path, (EXAMPLES / "instance-llm-lora.yaml").read_text(encoding="utf-8"), "lora.yaml")
    code, out, err = render(capsys, "-f", first, "-f", second, write(tmp_path, instance_yaml(namespace="ns")))
    assert code == 0, err
    objects = by_kind(out)
    assert objects["ServiceAccount"]["secrets"] == [{"name": "second"}]
    assert objects["PodMonitor"]["spec"]["podMetricsEndpoints"][0]["interval"] == "10s"
    code, _, err = render(capsys, "-f", first, "-f", second, lora)
    assert code == 1
    assert "references unknown adapter" in err


def test_without_values_the_environment_counts_not_the_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = render(capsys, write(tmp_path, instance_yaml(namespace="ns")))
    assert code == 0
    assert by_kind(out)["ServiceAccount"]["secrets"] == [{"name": "hf-token"}]  # from CHART_ENV
    code, out, _ = render(capsys, "-f", str(CHART_VALUES), write(tmp_path, instance_yaml(namespace="ns")))
    assert code == 0
    assert "ServiceAccount" not in by_kind(out)  # the chart's default: no token Secret
