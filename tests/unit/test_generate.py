"""definition/ -> generated files: up to date, shaped like the Provider CRD, and checked for drift."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from controlplane import crds_dir
from provider import generate, rbac
from provider.commands import generate as generate_command

ROOT = Path(__file__).resolve().parents[2]


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
    from provider.llm.params import LlmEngineParameters, LlmTopologyParameters
    from provider.predictor.params import PredictorParameters

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
        assert in_crd[rel]["parametersSchema"]["openAPIV3Schema"] == generate.openapi_v3(schema), rel


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
    # Instances are never created or deleted by the provider; events are not used.
    assert not {v for g, r, s, v in granted if r == "instances" and not s} & {"create", "delete"}
    assert not any(r == "events" for g, r, s, v in granted)
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


# -- the OpenAPI conversion -------------------------------------------------------------------------


class _Inner(BaseModel):
    size: int = Field(gt=0, description="inner size")


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(examples=["a", "b"])
    inner: _Inner | None = Field(default=None, description="optional inner")
    items: list[_Inner] = Field(default_factory=list)
    kind: str = Field(default="fixed", json_schema_extra={"const": "fixed"})


def test_openapi_v3_inlines_refs_and_nulls() -> None:
    out = generate.openapi_v3(_Outer.model_json_schema(by_alias=True))
    assert "$defs" not in json.dumps(out) and "$ref" not in json.dumps(out)
    assert "title" not in json.dumps(out)
    inner = out["properties"]["inner"]
    assert inner["nullable"] is True and inner["description"] == "optional inner"
    assert inner["properties"]["size"] == {
        "description": "inner size",
        "exclusiveMinimum": True,
        "minimum": 0,
        "type": "integer",
    }
    assert out["properties"]["items"]["items"]["type"] == "object"
    assert out["properties"]["name"]["example"] == "a"
    assert out["properties"]["kind"]["enum"] == ["fixed"]
    assert out["additionalProperties"] is False


def test_openapi_v3_rejects_unknown_keywords() -> None:
    with pytest.raises(generate.DefinitionError, match="prefixItems"):
        generate.openapi_v3({"type": "array", "prefixItems": [{"type": "string"}]})
    with pytest.raises(generate.DefinitionError, match="recursive"):
        generate.openapi_v3({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"})


# -- definition checks -----------------------------------------------------------------------------


class _Engine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_uri: str = Field(alias="modelURI")
    mode: str = Field(default="a", json_schema_extra={"enum": ["a", "b"]})
    size: int | None = Field(default=None, ge=1, le=8)
    flag: bool = False


class _Topo(BaseModel):
    access: str | None = None


MODELS: dict[str, type[BaseModel]] = {"m:Engine": _Engine, "m:Topo": _Topo}


def _definition(tmp_path: Path, fields: dict[str, Any], versions: dict[str, Any] | None = None) -> Path:
    root = tmp_path / "repo"
    d = root / "definition"
    (d / "topologies" / "t").mkdir(parents=True)
    (d / "provider.yaml").write_text(
        yaml.safe_dump({"name": "p", "components": {"engine": {"type": "e", "parametersModel": "m:Engine"}}})
    )
    (d / "versions.yaml").write_text(
        yaml.safe_dump(
            versions
            or {
                "componentTypes": {"e": {"versions": [{"version": "1.0", "image": "e:1", "default": True}]}},
                "versions": [{"name": "1", "default": True, "components": {"engine": "1.0"}}],
            }
        )
    )
    ui = {"sections": {"s": {"label": "S", "components": fields}}}
    topology = {"config": {"parametersModel": "m:Topo", "components": {"engine": {}}}, "ui": ui}
    (d / "topologies" / "t" / "topology.yaml").write_text(yaml.safe_dump(topology))
    return root


URI_FIELD = {
    "uiType": "text",
    "path": "spec.components.engine.parameters.modelURI",
    "validation": {"required": True},
}


def _render(root: Path) -> dict[str, str]:
    return generate.render(root, MODELS.__getitem__)


def test_render_minimal_definition(tmp_path: Path) -> None:
    root = _definition(
        tmp_path,
        {
            "uri": URI_FIELD,
            "mode": {
                "uiType": "select",
                "path": "spec.components.engine.parameters.mode",
                "fieldParams": {"defaultValue": "a", "options": [{"label": "A", "value": "a"}]},
            },
            "flag": {
                "uiType": "select",
                "path": "spec.components.engine.parameters.flag",
                "fieldParams": {"defaultValue": "false"},
            },
            "replicas": {"uiType": "number", "path": "spec.components.engine.replicas"},
            "access": {"uiType": "text", "path": "spec.topology.parameters.access"},
            "grp": {
                "uiType": "group",
                "components": {
                    "cpu": {"uiType": "number", "path": "spec.components.engine.resources.limits.cpu"}
                },
            },
        },
    )
    out = _render(root)
    assert set(out) == {
        str(generate.PROVIDER_SPEC),
        str(generate.RBAC_RULES),
        "definition/components/engine.parameters.schema.json",
        "definition/topologies/t/parameters.schema.json",
    }
    doc = yaml.safe_load(out[str(generate.PROVIDER_SPEC)])
    assert doc["name"] == "p"
    assert doc["spec"]["topologies"]["t"]["components"] == {"engine": {}}
    assert set(generate.write_files(root, out)) == set(out)
    assert generate.write_files(root, out) == []
    assert generate.stale_files(root, out) == {}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "modelURI is required by the model but not in the form"),
        ({"uri": {**URI_FIELD, "validation": {}}}, "set validation.required: true"),
        (
            {"uri": URI_FIELD, "x": {"uiType": "text", "path": "spec.components.engine.parameters.nope"}},
            "not a field",
        ),
        (
            {"uri": URI_FIELD, "x": {"uiType": "text", "path": "spec.components.other.replicas"}},
            "names no component",
        ),
        (
            {"uri": URI_FIELD, "x": {"uiType": "text", "path": "spec.components.engine.bogus"}},
            "not a component field",
        ),
        ({"uri": URI_FIELD, "x": {"uiType": "text", "path": "metadata.name"}}, "not an Instance spec field"),
        ({"uri": URI_FIELD, "x": {"uiType": "text", "path": "spec.topology.parameters.nope"}}, "not a field"),
        (
            {
                "uri": URI_FIELD,
                "x": {
                    "uiType": "number",
                    "path": "spec.components.engine.parameters.size",
                    "validation": {"min": 0},
                },
            },
            "validation.min 0 allows values the model rejects",
        ),
        (
            {
                "uri": URI_FIELD,
                "x": {
                    "uiType": "number",
                    "path": "spec.components.engine.parameters.size",
                    "validation": {"max": 9},
                },
            },
            "validation.max 9",
        ),
        (
            {
                "uri": URI_FIELD,
                "x": {
                    "uiType": "select",
                    "path": "spec.components.engine.parameters.mode",
                    "fieldParams": {"defaultValue": "b"},
                },
            },
            "differs from the model default",
        ),
        (
            {
                "uri": URI_FIELD,
                "x": {
                    "uiType": "select",
                    "path": "spec.components.engine.parameters.mode",
                    "fieldParams": {"options": [{"label": "C", "value": "c"}]},
                },
            },
            "option 'c' is not one of the model's values",
        ),
        (
            {
                "uri": URI_FIELD,
                "x": {
                    "uiType": "select",
                    "path": "spec.components.engine.version",
                    "fieldParams": {"optionsPath": "spec.componentTypes.nope.versions"},
                },
            },
            "unknown component type",
        ),
    ],
)
def test_ui_drift_is_an_error(tmp_path: Path, fields: dict[str, Any], message: str) -> None:
    with pytest.raises(generate.DefinitionError, match=message):
        _render(_definition(tmp_path, fields))


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        (
            {
                "componentTypes": {
                    "e": {
                        "versions": [
                            {"version": "1.0", "image": "e:1", "default": True},
                            {"version": "1.1", "image": "e:1.1", "default": True},
                        ]
                    }
                },
                "versions": [{"name": "1", "default": True, "components": {"engine": "1.0"}}],
            },
            "exactly one version must be default",
        ),
        (
            {
                "componentTypes": {"e": {"versions": [{"version": "1.0", "image": "e:1", "default": True}]}},
                "versions": [{"name": "1", "components": {"engine": "1.0"}}],
            },
            "exactly one bundle must be default",
        ),
        (
            {
                "componentTypes": {"e": {"versions": [{"version": "1.0", "image": "e:1", "default": True}]}},
                "versions": [{"name": "1", "default": True, "components": {"engine": "2.0"}}],
            },
            "is not a e version",
        ),
        (
            {"componentTypes": {}, "versions": [{"name": "1", "default": True}]},
            "not in versions.yaml componentTypes",
        ),
    ],
)
def test_catalog_errors(tmp_path: Path, versions: dict[str, Any], message: str) -> None:
    with pytest.raises(generate.DefinitionError, match=message):
        _render(_definition(tmp_path, {"uri": URI_FIELD}, versions))


def test_find_root(tmp_path: Path) -> None:
    assert generate.find_root(ROOT / "charts") == ROOT


def _copy_definition(tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(ROOT / "definition", root / "definition")
    return root


# -- a small structural validator (the subset of OpenAPI v3 the Provider CRD uses) -----------------


def structural_errors(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Errors a Kubernetes API server would report or silently prune for `value` under `schema`.

    Unknown fields count as errors: the API server would drop them (pruning), losing data.
    """
    errors: list[str] = []
    if path == ".metadata" or (
        schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema
    ):
        return errors  # ObjectMeta is validated by the API server itself
    expected = schema.get("type")
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    }
    if expected and not checks[expected](value):
        return [f"{path or '.'}: expected {expected}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        for req in schema.get("required") or []:
            if req not in value:
                errors.append(f"{path}.{req}: required")
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            if key in props:
                errors += structural_errors(props[key], sub, f"{path}.{key}")
            elif isinstance(extra, dict):
                errors += structural_errors(extra, sub, f"{path}.{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{path}.{key}: unknown field (would be pruned)")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += structural_errors(schema["items"], item, f"{path}[{i}]")
    return errors


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
