"""`provider-kserve render`: the example Instances against reviewed golden files, and the CLI edges.

The goldens in tests/golden/<example>.yaml are what the controller would apply for
examples/<example>.yaml with the chart settings in `CHART_ENV` (an HF token Secret `hf-token`,
PodMonitors on) and every optional CRD installed. After an intended change, regenerate them with

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/test_render.py

and review the diff like code.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from provider.cli import main
from provider.settings import ProviderSettings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "golden"
CATALOG = EXAMPLES / "lora-catalog.json"
CHART_ENV = {"HF_TOKEN_SECRET_NAME": "hf-token", "ENABLE_POD_MONITOR": "true", "POD_MONITOR_INTERVAL": "30s"}


@pytest.fixture(autouse=True)
def chart_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*ProviderSettings.ENV.values(), "LORA_ADAPTER_CATALOG"):
        monkeypatch.delenv(var, raising=False)
    for var, value in CHART_ENV.items():
        monkeypatch.setenv(var, value)


def render(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["render", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("example", ["instance-llm", "instance-llm-cpu", "instance-llm-lora"])
def test_example_matches_golden(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = render(
        capsys, str(EXAMPLES / f"{example}.yaml"), "--available-all", "--lora-catalog", str(CATALOG)
    )
    assert (code, err) == (0, "")
    golden = GOLDEN / f"{example}.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8")


def test_goldens_are_stamped_with_ownership() -> None:
    for golden in GOLDEN.glob("instance-llm*.yaml"):
        for obj in yaml.safe_load_all(golden.read_text(encoding="utf-8")):
            meta = obj["metadata"]
            assert meta["namespace"] == "models"
            assert meta["labels"]["core.openeverest.io/provider"] == "provider-kserve"
            assert meta["ownerReferences"][0]["uid"] == "00000000-0000-0000-0000-000000000000"


def instance_yaml(name: str = "chat", **spec_extra: Any) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "core.openeverest.io/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": name},
        "spec": {
            "providerRef": {"name": "provider-kserve"},
            "topology": {"type": "llm"},
            "components": {"llmEngine": {"type": "vllm", "parameters": {"modelURI": "hf://o/m"}}},
            **spec_extra,
        },
    }
    return yaml.safe_dump(doc)


def write(tmp_path: Path, text: str, name: str = "instance.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def kinds(out: str) -> list[str]:
    return [doc["kind"] for doc in yaml.safe_load_all(out)]


def test_optional_kinds_are_skipped_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = render(capsys, write(tmp_path, instance_yaml()))
    assert code == 0
    assert kinds(out) == ["ServiceAccount", "LLMInferenceService"]


def test_uid_and_namespace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load(instance_yaml())
    doc["metadata"]["uid"] = "abc-123"
    _, out, _ = render(capsys, write(tmp_path, yaml.safe_dump(doc)))
    first = next(yaml.safe_load_all(out))
    assert first["metadata"]["namespace"] == "default"
    assert first["metadata"]["ownerReferences"][0]["uid"] == "abc-123"


def test_several_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = instance_yaml("one") + "---\n" + instance_yaml("two")
    code, out, _ = render(capsys, write(tmp_path, text))
    assert code == 0
    names = [doc["metadata"]["name"] for doc in yaml.safe_load_all(out)]
    assert names == ["one-model-puller", "one", "two-model-puller", "two"]


def test_invalid_instance_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, instance_yaml(topology={"type": "llm", "parameters": {"enablePrefill": "maybe"}}))
    code, out, err = render(capsys, path)
    assert (code, out) == (1, "")
    assert err == f'{path}: Instance "chat": topology.parameters.enablePrefill: invalid boolean value "maybe"\n'


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


def test_catalog_from_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORA_ADAPTER_CATALOG", CATALOG.read_text(encoding="utf-8"))
    code, out, err = render(capsys, str(EXAMPLES / "instance-llm-lora.yaml"), "--available-all")
    assert (code, err) == (0, "")
    assert out == (GOLDEN / "instance-llm-lora.yaml").read_text(encoding="utf-8")


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = render(capsys, write(tmp_path, instance_yaml()), "-o", "json")
    assert code == 0
    listing = json.loads(out)
    assert (listing["kind"], [item["kind"] for item in listing["items"]]) == (
        "List",
        ["ServiceAccount", "LLMInferenceService"],
    )


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(instance_yaml()))
    code, out, _ = render(capsys, "-")
    assert (code, kinds(out)) == (0, ["ServiceAccount", "LLMInferenceService"])
