"""definition/ -> generated files: up to date, shaped like the Provider CRD, and checked for drift."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from plane import crds_dir
from provider.commands import generate as generate_command
from provider.generate import generation as generate
from provider.generate.openapi_schema import openapi_v3
from provider.model import rbac
from tests.support.structural_schema import structural_errors

ROOT = Path(__file__).resolve().parents[3]


# -- the committed generated files ---------------------------------------------------------------


def test_generated_files_are_up_to_date() -> None:
    args = argparse.Namespace(check=True, root=ROOT)
    assert generate_command.run(args) == 0, "run `provider-kserve generate` and commit the result"


def test_cli_registers_generate() -> None:
    from provider import cli

    assert "provider.commands.generate" in cli.COMMANDS
    parser = argparse.ArgumentParser()
    generate_command.register(parser.add_subparsers())
    args = parser.parse_args(["generate", "--check", "--root", str(ROOT)])
    assert args.func is generate_command.run
    assert args.func(args) == 0


def test_check_reports_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy_definition(tmp_path)
    assert generate_command.run(argparse.Namespace(check=False, root=root)) == 0
    assert generate_command.run(argparse.Namespace(check=True, root=root)) == 0
    spec = root / generate.PROVIDER_SPEC
    spec.write_text(spec.read_text().replace("0.25.1", "0.25.0"))
    capsys.readouterr()
    assert generate_command.run(argparse.Namespace(check=True, root=root)) == 1
    err = capsys.readouterr().err
    assert f"stale: {generate.PROVIDER_SPEC}" in err
    assert "-        - version: 0.25.0" in err


def _provider_spec() -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / generate.PROVIDER_SPEC).read_text())
    assert isinstance(doc, dict)
    return doc


def test_provider_spec_validates_against_provider_crd() -> None:
    crd = yaml.safe_load((crds_dir() / "openeverest" / "core.openeverest.io_providers.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    doc = _provider_spec()
    provider = {
        "apiVersion": "core.openeverest.io/v1alpha1",
        "kind": "Provider",
        "metadata": {"name": doc["name"]},
        "spec": doc["spec"],
    }
    assert structural_errors(schema, provider) == []


def test_provider_spec_content() -> None:
    doc = _provider_spec()
    assert doc["name"] == "provider-kserve"
    spec = doc["spec"]
    assert spec["components"]["llmEngine"]["type"] == "vllm"
    assert spec["components"]["predictor"]["type"] == "modelServer"
    assert spec["versions"] == [
        {"name": "0.20", "default": True, "components": {"llmEngine": "0.25.1", "predictor": "0.20.0"}}
    ]
    assert set(spec["topologies"]) == {"llm", "predictor"} == set(spec["uiSchema"])
    assert spec["topologies"]["llm"]["components"] == {"llmEngine": {}}
    assert spec["topologies"]["predictor"] == {"components": {"predictor": {}}}
    # Every component type has exactly one default version.
    for ctype in spec["componentTypes"].values():
        assert sum(1 for v in ctype["versions"] if v.get("default")) == 1


def test_published_schemas_are_the_models_schemas() -> None:
    from provider.topologies.llm.params import LlmEngineParameters
    from provider.topologies.llm.topology_params import LlmTopologyParameters
    from provider.topologies.predictor.params import PredictorParameters

    published: dict[str, type[BaseModel]] = {
        "definition/components/llmEngine.parameters.schema.json": LlmEngineParameters,
        "definition/components/predictor.parameters.schema.json": PredictorParameters,
        "definition/topologies/llm/parameters.schema.json": LlmTopologyParameters,
    }
    spec = _provider_spec()["spec"]
    in_crd = {
        "definition/components/llmEngine.parameters.schema.json": spec["components"]["llmEngine"],
        "definition/components/predictor.parameters.schema.json": spec["components"]["predictor"],
        "definition/topologies/llm/parameters.schema.json": spec["topologies"]["llm"],
    }
    for rel, model in published.items():
        schema = json.loads((ROOT / rel).read_text())
        assert schema == model.model_json_schema(by_alias=True), rel
        assert in_crd[rel]["parametersSchema"]["openAPIV3Schema"] == openapi_v3(schema), rel


def test_provider_name_matches_the_runtime() -> None:
    from provider.commands import run

    assert _provider_spec()["name"] == run.PROVIDER_NAME


# -- RBAC ---------------------------------------------------------------------------------------


def test_rbac_rules_file_is_the_rbac_module() -> None:
    doc = yaml.safe_load((ROOT / generate.RBAC_RULES).read_text())
    assert doc["clusterRules"] == rbac.policy_rules("cluster")
    assert doc["namespaceRules"] == rbac.policy_rules("namespace")


def test_rbac_is_least_privilege() -> None:
    for rule in rbac.RULES:
        assert "*" not in rule.verbs and "*" not in rule.resources and rule.api_group != "*", rule
        assert rule.why
        assert len(set(rule.verbs)) == len(rule.verbs)
    granted = {(c.group, c.resource, c.subresource, c.verb) for c in rbac.access_checks("ns")}
    # Secrets: what the connection Secret needs (watched to restore it, applied, deleted), never updated.
    assert {v for g, r, s, v in granted if r == "secrets"} == {"get", "list", "watch", "create", "patch", "delete"}
    # Nothing is ever PUT but the Instance status and the Lease.
    assert {(r, s) for g, r, s, v in granted if v == "update"} == {
        ("instances", "status"),
        ("instances", "finalizers"),
        ("leases", ""),
    }
    # Read-only kinds, each with exactly the verbs its reader uses.
    for resource, verbs in (
        ("providers", {"list", "watch"}),
        ("nodes", {"list"}),
        ("namespaces", {"list", "watch"}),
        ("gateways", {"list", "watch"}),
        ("customresourcedefinitions", {"get"}),
    ):
        assert {v for g, r, s, v in granted if r == resource} == verbs, resource
    # Instances are never created or deleted by the provider; Events are only created and patched
    # (their series), in the events.k8s.io API, never the core one.
    assert not {v for g, r, s, v in granted if r == "instances" and not s} & {"create", "delete"}
    events = {(g, v) for g, r, s, v in granted if r == "events"}
    assert events == {("events.k8s.io", "create"), ("events.k8s.io", "patch")}
    # Leases only in the provider's own namespace.
    leases = [c for c in rbac.access_checks("ns") if c.resource == "leases"]
    assert leases and all(c.namespace == "ns" for c in leases)
    status = next(c for c in rbac.access_checks("ns") if c.subresource == "status")
    assert status.resource_attributes() == {
        "group": "core.openeverest.io",
        "resource": "instances",
        "verb": "update",
        "subresource": "status",
    }


def test_find_root(tmp_path: Path) -> None:
    assert generate.find_root(ROOT / "charts") == ROOT


def _copy_definition(tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(ROOT / "definition", root / "definition")
    return root


# -- the structural validator the Provider spec test relies on --------------------------------------


def test_structural_validator_catches_drift() -> None:
    crd = yaml.safe_load((crds_dir() / "openeverest" / "core.openeverest.io_providers.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    good = {
        "apiVersion": "x",
        "kind": "Provider",
        "metadata": {},
        "spec": copy.deepcopy(_provider_spec()["spec"]),
    }
    bad = copy.deepcopy(good)
    bad["spec"]["topologies"]["llm"]["components"]["llmEngine"]["defaults"] = {"replicas": 1}
    bad["spec"]["versions"][0]["default"] = "yes"
    del bad["spec"]["versions"][0]["name"]
    bad["spec"]["bogus"] = 1
    assert structural_errors(schema, good) == []
    assert sorted(structural_errors(schema, bad)) == [
        ".spec.bogus: unknown field (would be pruned)",
        ".spec.topologies.llm.components.llmEngine.defaults: unknown field (would be pruned)",
        ".spec.versions[0].default: expected boolean, got str",
        ".spec.versions[0].name: required",
    ]
