"""The UI sections of definition/ checked against the Instance shape and the parameter schemas.

Every `path` must name a field that exists, a field the model requires must be in the form, and the
form's defaults and bounds must agree with the model's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from provider.tools.definition import Definition, DefinitionError, Topology, as_mapping

# Fields of the core Instance CRD a UI `path` may point at besides the parameters payloads
# (Instance.spec and its ComponentSpec; contract.md sections 1.2 and 6).
INSTANCE_SPEC_FIELDS = frozenset(
    {
        "providerRef",
        "version",
        "topology",
        "parameters",
        "components",
        "backup",
        "deletionPolicy",
        "dataSource",
    }
)
COMPONENT_FIELDS = frozenset(
    {
        "name",
        "type",
        "version",
        "image",
        "storage",
        "resources",
        "replicas",
        "affinity",
        "schedulingPolicy",
        "service",
        "parameters",
    }
)


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow $ref and the non-null branch of `X | None` to the schema that has properties."""
    while True:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            schema = {**defs[ref[len("#/$defs/") :]], **{k: v for k, v in schema.items() if k != "$ref"}}
            continue
        branches = [b for b in schema.get("anyOf") or [] if b != {"type": "null"}]
        if len(branches) == 1 and "properties" not in schema:
            schema = {**branches[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
            continue
        return schema


def _field_schema(schema: Mapping[str, Any], dotted: str) -> tuple[Mapping[str, Any], bool] | None:
    """The schema of `dotted` inside `schema` and whether it is required; None if absent."""
    defs = schema.get("$defs") or {}
    node: Mapping[str, Any] = schema
    required = True
    for part in dotted.split("."):
        node = _resolve(node, defs)
        props = node.get("properties") or {}
        if part not in props:
            return None
        required = required and part in (node.get("required") or [])
        node = props[part]
    return _resolve(node, defs), required


def _ui_fields(components: Mapping[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for fid, raw in components.items():
        field = as_mapping(raw, f"{where}.{fid}")
        if field.get("uiType") == "group":
            yield from _ui_fields(
                as_mapping(field.get("components"), f"{where}.{fid}.components"), f"{where}.{fid}"
            )
        else:
            yield f"{where}.{fid}", field


def _check_order(container: Mapping[str, Any], items_key: str, order_key: str, where: str) -> None:
    order = container.get(order_key)
    if order is None:
        return
    if sorted(order) != sorted(as_mapping(container.get(items_key), where)):
        raise DefinitionError(f"{where}: {order_key} must list exactly the {items_key}")


def _same_default(ui: Any, model: Any) -> bool:
    if isinstance(model, bool) and isinstance(ui, str):
        return ui.lower() == str(model).lower()
    if isinstance(model, str) or isinstance(ui, str):
        return str(ui) == str(model)
    return bool(ui == model)


def check_ui(d: Definition, schemas: Mapping[str, Mapping[str, Any]]) -> None:
    """Check every topology's UI against the Instance shape and the parameter schemas.

    `schemas` maps `component:<name>` and `topology:<name>` to published JSON schemas.
    """
    for topology in d.topologies.values():
        ui = topology.ui
        where = f"topologies/{topology.name} ui"
        sections = as_mapping(ui.get("sections"), f"{where}.sections")
        if not sections:
            raise DefinitionError(f"{where}: no sections")
        _check_order(ui, "sections", "sectionsOrder", where)
        covered: set[str] = set()
        for sid, raw in sections.items():
            section = as_mapping(raw, f"{where}.sections.{sid}")
            if not section.get("label"):
                raise DefinitionError(f"{where}.sections.{sid}: label is required")
            _check_order(section, "components", "componentsOrder", f"{where}.sections.{sid}")
            fields = _ui_fields(as_mapping(section.get("components"), f"{where}.{sid}"), f"{where}.{sid}")
            for fwhere, field in fields:
                path = field.get("path")
                if not isinstance(path, str):
                    raise DefinitionError(f"{fwhere}: path is required")
                covered.add(path)
                _check_field(d, topology, schemas, fwhere, path, field)
        for cname in topology.components:
            _check_required_covered(
                schemas.get(f"component:{cname}"), f"spec.components.{cname}.parameters", covered, where
            )
        _check_required_covered(
            schemas.get(f"topology:{topology.name}"), "spec.topology.parameters", covered, where
        )


def _check_required_covered(
    schema: Mapping[str, Any] | None, prefix: str, covered: set[str], where: str
) -> None:
    if schema is None:
        return
    for prop in schema.get("required") or []:
        if f"{prefix}.{prop}" not in covered:
            raise DefinitionError(f"{where}: {prefix}.{prop} is required by the model but not in the form")


def _check_field(
    d: Definition,
    topology: Topology,
    schemas: Mapping[str, Mapping[str, Any]],
    where: str,
    path: str,
    field: Mapping[str, Any],
) -> None:
    schema, rest = _field_model(topology, schemas, where, path)
    options_path = as_mapping(field.get("fieldParams"), f"{where}.fieldParams").get("optionsPath")
    if isinstance(options_path, str) and options_path.startswith("spec.componentTypes."):
        ctype = options_path.split(".")[2]
        if ctype not in d.component_types:
            raise DefinitionError(f"{where}: optionsPath {options_path!r} names an unknown component type")
    if schema is None:
        return
    found = _field_schema(schema, rest) if rest else None
    if found is None:
        raise DefinitionError(f"{where}: path {path!r} is not a field of the parameters model")
    _check_agrees_with_model(where, path, field, *found)


def _field_model(
    topology: Topology, schemas: Mapping[str, Mapping[str, Any]], where: str, path: str
) -> tuple[Mapping[str, Any] | None, str]:
    """The parameters model a UI field's path points into, and the path inside it (None: a path
    outside any parameters model, e.g. spec.components.<c>.replicas)."""
    parts = path.split(".")
    if parts[0] != "spec" or len(parts) < 2 or parts[1] not in INSTANCE_SPEC_FIELDS:
        raise DefinitionError(f"{where}: path {path!r} is not an Instance spec field")
    if parts[1] == "components":
        if len(parts) < 4 or parts[2] not in topology.components:
            raise DefinitionError(f"{where}: path {path!r} names no component of topology {topology.name}")
        if parts[3] not in COMPONENT_FIELDS:
            raise DefinitionError(f"{where}: path {path!r}: {parts[3]!r} is not a component field")
        if parts[3] != "parameters":
            return None, ""
        schema = schemas.get(f"component:{parts[2]}")
        if schema is None:
            raise DefinitionError(f"{where}: component {parts[2]} has no parametersModel")
        return schema, ".".join(parts[4:])
    if parts[1:3] == ["topology", "parameters"]:
        schema = schemas.get(f"topology:{topology.name}")
        if schema is None:
            raise DefinitionError(f"{where}: topology {topology.name} has no parametersModel")
        return schema, ".".join(parts[3:])
    return None, ""


def _check_agrees_with_model(
    where: str, path: str, field: Mapping[str, Any], prop: Mapping[str, Any], required: bool
) -> None:
    """The form accepts exactly what the model does: required, default, bounds and options."""
    params = as_mapping(field.get("fieldParams"), f"{where}.fieldParams")
    validation = as_mapping(field.get("validation"), f"{where}.validation")
    if required and validation.get("required") is not True:
        raise DefinitionError(f"{where}: {path} is required by the model: set validation.required: true")
    default = prop.get("default")
    if "defaultValue" in params and default is not None and not _same_default(params["defaultValue"], default):
        raise DefinitionError(
            f"{where}: defaultValue {params['defaultValue']!r} differs from the model default {default!r}"
        )
    for ui_key, bound, sign in (("min", "minimum", 1), ("max", "maximum", -1)):
        # The form must not accept what the model rejects: min >= minimum, max <= maximum.
        if ui_key in validation and bound in prop and sign * (validation[ui_key] - prop[bound]) < 0:
            raise DefinitionError(
                f"{where}: validation.{ui_key} {validation[ui_key]} allows values the model rejects "
                f"({bound} {prop[bound]})"
            )
    options = params.get("options")
    enum = prop.get("enum")
    if isinstance(options, list) and isinstance(enum, list):
        for option in options:
            value = option.get("value") if isinstance(option, dict) else None
            if value not in enum:
                raise DefinitionError(f"{where}: option {value!r} is not one of the model's values {enum}")
