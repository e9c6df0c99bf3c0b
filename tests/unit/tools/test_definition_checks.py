"""definition/ checks: a minimal definition renders, and UI or catalog drift from the models is an error."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from provider.generate import generation as generate
from provider.generate.definition import DefinitionError
from provider.rules.cross_field import CrossFieldRule, CrossFieldRules


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
                "validation": {"required": False},
            },
            "flag": {
                "uiType": "select",
                "path": "spec.components.engine.parameters.flag",
                "fieldParams": {"defaultValue": "false"},
                "validation": {"required": False},
            },
            "size": {
                "uiType": "number",
                "path": "spec.components.engine.parameters.size",
                "validation": {"int": True, "min": 1, "max": 8},
            },
            "version": {
                "uiType": "select",
                "path": "spec.components.engine.version",
                "fieldParams": {
                    "defaultValue": "",
                    "optionsPath": "spec.componentTypes.e.versions",
                    "optionsPathConfig": {"labelPath": "version", "valuePath": "version"},
                },
                "validation": {"required": False},
            },
            "replicas": {
                "uiType": "number",
                "path": "spec.components.engine.replicas",
                "validation": {"int": True},
            },
            "access": {"uiType": "text", "path": "spec.topology.parameters.access"},
            "grp": {
                "uiType": "group",
                "components": {"cpu": {"uiType": "number", "path": "spec.components.engine.resources.limits.cpu"}},
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
    with pytest.raises(DefinitionError, match=message):
        _render(_definition(tmp_path, fields))


class _Named(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_uri: str = Field(alias="modelURI")
    name: str | None = Field(default=None, max_length=10, json_schema_extra={"pattern": "^[a-z]+$"})
    count: int | None = Field(default=None, ge=0, le=4)
    flag: Annotated[
        bool, WithJsonSchema({"anyOf": [{"type": "boolean"}, {"type": "string", "enum": ["true", "false"]}]})
    ] = False


def _select(path: str, **params: Any) -> dict[str, Any]:
    return {"uiType": "select", "path": path, "fieldParams": params}


NAME = "spec.components.engine.parameters.name"
COUNT = "spec.components.engine.parameters.count"
FLAG = "spec.components.engine.parameters.flag"
VERSION = "spec.components.engine.version"
OPTIONS_PATH = {
    "optionsPath": "spec.componentTypes.e.versions",
    "optionsPathConfig": {"labelPath": "v", "valuePath": "v"},
}


@pytest.mark.parametrize(
    ("field", "message"),
    [
        # Without a validation block the form takes any string for a select.
        (_select(FLAG, defaultValue="false", options=[{"label": "On", "value": "true"}]), "needs a validation block"),
        # Without a defaultValue the form preselects (and posts) the first catalog option.
        ({**_select(VERSION, **OPTIONS_PATH), "validation": {"required": False}}, "needs an explicit defaultValue"),
        # Selects post strings; a boolean default cannot even be loaded back into the form.
        ({**_select(FLAG, defaultValue=False), "validation": {"required": False}}, "posts strings"),
        (
            {**_select(FLAG, defaultValue="false", options=[{"label": "Y", "value": "maybe"}]), "validation": {}},
            "'maybe'",
        ),
        ({"uiType": "number", "path": COUNT, "validation": {"min": 0, "max": 4}}, "validation.int: true"),
        ({"uiType": "number", "path": "spec.components.engine.replicas"}, "validation.int: true"),
        ({"uiType": "number", "path": COUNT, "validation": {"int": True, "min": 0}}, "set validation.max"),
        ({"uiType": "number", "path": COUNT, "validation": {"int": True, "max": 4}}, "set validation.min"),
        (
            {
                "uiType": "number",
                "path": COUNT,
                "fieldParams": {"defaultValue": 1.5},
                "validation": {"int": True, "min": 0, "max": 4},
            },
            "not an integer",
        ),
        ({"uiType": "text", "path": NAME, "validation": {"regex": {"pattern": "^[a-z]+$"}}}, "set validation.max"),
        (
            {"uiType": "text", "path": NAME, "validation": {"max": 11, "regex": {"pattern": "^[a-z]+$"}}},
            "validation.max 11",
        ),
        ({"uiType": "text", "path": NAME, "validation": {"max": 10}}, "differs from the model's pattern"),
        (
            {"uiType": "text", "path": NAME, "validation": {"max": 10, "regex": {"pattern": "^[a-z]*$"}}},
            "differs from the model's pattern",
        ),
    ],
)
def test_the_form_rules_are_checked(tmp_path: Path, field: dict[str, Any], message: str) -> None:
    models: dict[str, type[BaseModel]] = {"m:Engine": _Named, "m:Topo": _Topo}
    root = _definition(tmp_path, {"uri": URI_FIELD, "x": field})
    with pytest.raises(DefinitionError, match=message):
        generate.render(root, models.__getitem__)


def test_a_field_keeping_the_form_rules_passes(tmp_path: Path) -> None:
    models: dict[str, type[BaseModel]] = {"m:Engine": _Named, "m:Topo": _Topo}
    fields = {
        "uri": URI_FIELD,
        "name": {"uiType": "text", "path": NAME, "validation": {"max": 10, "regex": {"pattern": "^[a-z]+$"}}},
        "count": {
            "uiType": "number",
            "path": COUNT,
            "fieldParams": {"defaultValue": 2},
            "validation": {"int": True, "min": 0, "max": 4},
        },
        "flag": {**_select(FLAG, defaultValue="false", options=[{"label": "On", "value": "true"}]), "validation": {}},
        "version": {**_select(VERSION, defaultValue="", **OPTIONS_PATH), "validation": {"required": False}},
    }
    generate.render(_definition(tmp_path, fields), models.__getitem__)


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
    with pytest.raises(DefinitionError, match=message):
        _render(_definition(tmp_path, {"uri": URI_FIELD}, versions))


SIZE = "spec.components.engine.parameters.size"
MODE = "spec.components.engine.parameters.mode"
# A rule across fields the provider declares (provider.rules.cross_field): size only in mode b.
SIZE_RULES = CrossFieldRules(in_form=(CrossFieldRule("size only in mode b", form_field=SIZE, reads=(SIZE, MODE)),))


def _with_rules(root: Path) -> Path:
    path = root / "definition" / "topologies" / "t" / "topology.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["crossFieldRules"] = f"{__name__}:SIZE_RULES"
    path.write_text(yaml.safe_dump(doc))
    return root


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([], "has no celExpressions rule reading .*size, .*mode"),
        ([{"celExpr": f"!has({SIZE})", "message": "reads one field only"}], "has no celExpressions rule reading"),
        ([{"celExpr": f'!has({SIZE}) || {MODE} == "b"', "message": "Size only in mode b"}], None),
    ],
)
def test_a_rule_across_fields_the_provider_declares_must_be_in_the_form(
    tmp_path: Path, rules: list[dict[str, str]], message: str | None
) -> None:
    size = {"uiType": "number", "path": SIZE, "validation": {"int": True, "min": 1, "max": 8, "celExpressions": rules}}
    mode = {**_select(MODE, defaultValue="a", options=[{"label": "A", "value": "a"}]), "validation": {}}
    root = _with_rules(_definition(tmp_path, {"uri": URI_FIELD, "size": size, "mode": mode}))
    if message is None:
        _render(root)
    else:
        with pytest.raises(DefinitionError, match=message):
            _render(root)
