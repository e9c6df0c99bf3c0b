"""definition/ loaded and checked for consistency with itself.

`load_definition` reads `provider.yaml`, `versions.yaml` and every `topologies/*/topology.yaml`,
resolves each `parametersModel: package.module:Class` to its pydantic model, and checks the catalog
(component types, versions, bundles, topology components) before anything is generated from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from provider.rules.cross_field import CrossFieldRules

ModelResolver = Callable[[str], type[BaseModel]]


class DefinitionError(Exception):
    """definition/ is inconsistent (with itself or with the parameter models)."""


# -- loading ------------------------------------------------------------------------------------


def _import_ref(ref: str, key: str, shape: str) -> Any:
    """What `package.module:NAME` names, for the definition key `key` (`shape`: the NAME part in an
    error, e.g. Class)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise DefinitionError(f"{key} {ref!r} must look like 'package.module:{shape}'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DefinitionError(f"{key} {ref!r}: cannot import {module_name}: {exc}") from exc
    return getattr(module, attr, None)


def import_model(ref: str) -> type[BaseModel]:
    """`package.module:Class` -> the pydantic model class."""
    model = _import_ref(ref, "parametersModel", "Class")
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise DefinitionError(f"parametersModel {ref!r} is not a pydantic model")
    return model


def import_rules(ref: str) -> CrossFieldRules:
    """`package.module:NAME` -> a topology's declared rules across fields."""
    rules = _import_ref(ref, "crossFieldRules", "NAME")
    if not isinstance(rules, CrossFieldRules):
        raise DefinitionError(f"crossFieldRules {ref!r} is not a CrossFieldRules")
    return rules


def _load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError as exc:
        raise DefinitionError(f"{path} is missing") from exc
    except yaml.YAMLError as exc:
        raise DefinitionError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise DefinitionError(f"{path} must hold a mapping")
    return data


def as_mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DefinitionError(f"{where} must be a mapping")
    return value


@dataclass(frozen=True)
class Component:
    name: str
    ctype: str
    model: type[BaseModel] | None


@dataclass(frozen=True)
class Topology:
    name: str
    components: dict[str, dict[str, Any]]
    model: type[BaseModel] | None
    ui: dict[str, Any]
    # The rules across fields the provider enforces (config.crossFieldRules; provider.rules.cross_field).
    cross_field_rules: CrossFieldRules = field(default_factory=CrossFieldRules)


@dataclass(frozen=True)
class Definition:
    name: str
    components: dict[str, Component]
    component_types: dict[str, Any]
    versions: list[dict[str, Any]]
    topologies: dict[str, Topology]


def load_definition(definition_dir: Path, resolve: ModelResolver = import_model) -> Definition:
    provider = _load_yaml(definition_dir / "provider.yaml")
    name = provider.get("name")
    if not isinstance(name, str) or not name:
        raise DefinitionError("provider.yaml: name is required")
    components: dict[str, Component] = {}
    for cname, raw in as_mapping(provider.get("components"), "provider.yaml components").items():
        spec = as_mapping(raw, f"provider.yaml components.{cname}")
        ctype = spec.get("type")
        if not isinstance(ctype, str) or not ctype:
            raise DefinitionError(f"provider.yaml components.{cname}.type is required")
        ref = spec.get("parametersModel")
        components[cname] = Component(cname, ctype, resolve(ref) if ref else None)
    if not components:
        raise DefinitionError("provider.yaml declares no components")

    versions_doc = _load_yaml(definition_dir / "versions.yaml")
    component_types = as_mapping(versions_doc.get("componentTypes"), "versions.yaml componentTypes")
    bundles = versions_doc.get("versions") or []
    if not isinstance(bundles, list):
        raise DefinitionError("versions.yaml versions must be a list")

    topologies: dict[str, Topology] = {}
    topo_root = definition_dir / "topologies"
    for path in sorted(topo_root.glob("*/topology.yaml")):
        tname = path.parent.name
        doc = _load_yaml(path)
        config = as_mapping(doc.get("config"), f"topologies/{tname} config")
        ref = config.get("parametersModel")
        tcomponents = {
            cname: as_mapping(value, f"topologies/{tname} config.components.{cname}")
            for cname, value in as_mapping(config.get("components"), f"topologies/{tname} components").items()
        }
        rules_ref = config.get("crossFieldRules")
        rules = import_rules(rules_ref) if rules_ref else CrossFieldRules()
        topologies[tname] = Topology(
            tname,
            tcomponents,
            resolve(ref) if ref else None,
            as_mapping(doc.get("ui"), f"topologies/{tname} ui"),
            rules,
        )
    if not topologies:
        raise DefinitionError(f"no topologies under {topo_root}")

    definition = Definition(name, components, component_types, bundles, topologies)
    _check_catalog(definition)
    return definition


def _check_catalog(d: Definition) -> None:
    for cname, component in d.components.items():
        if component.ctype not in d.component_types:
            raise DefinitionError(
                f"component {cname} has type {component.ctype!r}, not in versions.yaml componentTypes"
            )
    known: dict[str, set[str]] = {}
    for tname, raw in d.component_types.items():
        versions = as_mapping(raw, f"componentTypes.{tname}").get("versions") or []
        if not isinstance(versions, list) or not versions:
            raise DefinitionError(f"componentTypes.{tname} lists no versions")
        names: list[Any] = [v.get("version") for v in versions if isinstance(v, dict)]
        if any(not isinstance(n, str) or not n for n in names) or len(names) != len(versions):
            raise DefinitionError(f"componentTypes.{tname}: every version needs a string `version`")
        if len(set(names)) != len(names):
            raise DefinitionError(f"componentTypes.{tname}: duplicate versions")
        defaults = [v for v in versions if v.get("default") is True]
        if len(defaults) != 1:
            raise DefinitionError(f"componentTypes.{tname}: exactly one version must be default: true")
        known[tname] = set(names)
    bundle_names: list[Any] = [b.get("name") for b in d.versions if isinstance(b, dict)]
    if (
        not bundle_names
        or any(not isinstance(n, str) or not n for n in bundle_names)
        or len(bundle_names) != len(d.versions)
    ):
        raise DefinitionError("versions.yaml: every bundle needs a string `name`")
    if len(set(bundle_names)) != len(bundle_names):
        raise DefinitionError("versions.yaml: duplicate bundle names")
    if sum(1 for b in d.versions if b.get("default") is True) != 1:
        raise DefinitionError("versions.yaml: exactly one bundle must be default: true")
    for bundle in d.versions:
        for cname, version in as_mapping(bundle.get("components"), f"bundle {bundle['name']}").items():
            bundled = d.components.get(cname)
            if bundled is None:
                raise DefinitionError(f"bundle {bundle['name']}: unknown component {cname!r}")
            if version not in known[bundled.ctype]:
                raise DefinitionError(
                    f"bundle {bundle['name']}: {cname} version {version!r} is not a {bundled.ctype} version"
                )
    for topology in d.topologies.values():
        for cname, tc in topology.components.items():
            if cname not in d.components:
                raise DefinitionError(f"topology {topology.name}: unknown component {cname!r}")
            unknown = set(tc) - {"optional"}
            if unknown:
                raise DefinitionError(
                    f"topology {topology.name} component {cname}: only `optional` is stored in the "
                    f"Provider CR, not {sorted(unknown)}"
                )
