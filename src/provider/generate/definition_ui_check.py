"""The UI sections of definition/ checked against the Instance shape, the parameter schemas and
the rules of OpenEverest's form.

Every `path` must name a field that exists, a field the model requires must be in the form, and the
form's defaults, bounds, patterns and options must agree with the model's. OpenEverest's UI builds
its form (a zod schema) from these fields, and some of its rules surprise (_check_form_rules
says which): a select without a `validation` block accepts any string, a select whose options come
from `optionsPath` without an explicit `defaultValue` preselects the first option (and posts it),
and a number without `int: true` accepts 2.5. So here every select must have a validation block,
every optionsPath select a defaultValue, every integer field `int: true`, every bound of the model
a bound in the form, every pattern of the model the same `regex`, and defaults must be of the type
the form posts (strings for selects, numbers for numbers).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from provider.generate.definition import Definition, DefinitionError, Topology, as_mapping

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
# Component fields (outside any parameters model) that are integers in the Instance CRD.
INTEGER_COMPONENT_FIELDS = frozenset({"replicas"})
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
            yield from _ui_fields(as_mapping(field.get("components"), f"{where}.{fid}.components"), f"{where}.{fid}")
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
        by_path: dict[str, Mapping[str, Any]] = {}
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
                by_path[path] = field
                _check_field(d, topology, schemas, fwhere, path, field)
        _check_cross_field_rules(topology, by_path, where)
        for cname in topology.components:
            _check_required_covered(
                schemas.get(f"component:{cname}"), f"spec.components.{cname}.parameters", covered, where
            )
        _check_required_covered(schemas.get(f"topology:{topology.name}"), "spec.topology.parameters", covered, where)


def _check_cross_field_rules(topology: Topology, by_path: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """Every rule across fields the provider declares for the topology has a CEL rule on its form
    field that reads every field the rule reads: else the form posts what the provider refuses."""
    for rule in topology.cross_field_rules.in_form:
        field = by_path.get(rule.form_field)
        if field is None:
            raise DefinitionError(
                f"{where}: the provider's rule {rule.name!r} belongs on {rule.form_field}, not in the form"
            )
        expressions = [str(e.get("celExpr", "")) for e in (field.get("validation") or {}).get("celExpressions") or []]
        if not any(all(path in expression for path in rule.reads) for expression in expressions):
            raise DefinitionError(
                f"{where}: {rule.form_field} has no celExpressions rule reading {', '.join(rule.reads)}; the "
                f"provider refuses after the POST what the form lets through ({rule.name})"
            )


def _check_required_covered(schema: Mapping[str, Any] | None, prefix: str, covered: set[str], where: str) -> None:
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
    prop: Mapping[str, Any] | None = None
    if schema is not None:
        found = _field_schema(schema, rest) if rest else None
        if found is None:
            raise DefinitionError(f"{where}: path {path!r} is not a field of the parameters model")
        _check_agrees_with_model(where, path, field, *found)
        prop = found[0]
    parts = path.split(".")
    integer = (prop is not None and prop.get("type") == "integer") or (
        prop is None and len(parts) == 4 and parts[1] == "components" and parts[3] in INTEGER_COMPONENT_FIELDS
    )
    _check_form_rules(where, field, prop, integer=integer)


def _check_form_rules(where: str, field: Mapping[str, Any], prop: Mapping[str, Any] | None, *, integer: bool) -> None:
    """What OpenEverest's form does with the field must be what the model accepts."""
    ui_type = field.get("uiType")
    params = as_mapping(field.get("fieldParams"), f"{where}.fieldParams")
    validation = as_mapping(field.get("validation"), f"{where}.validation")
    default = params.get("defaultValue")
    if ui_type == "select":
        if "validation" not in field:
            raise DefinitionError(
                f"{where}: a select needs a validation block (e.g. required: false): without one the form "
                "accepts any string, not only its options"
            )
        if "optionsPath" in params and "defaultValue" not in params:
            raise DefinitionError(
                f'{where}: a select with optionsPath needs an explicit defaultValue ("" for none): without one '
                "the form preselects the first option and posts it"
            )
        values = [o.get("value") if isinstance(o, dict) else o for o in params.get("options") or []]
        if (default is not None and not isinstance(default, str)) or any(not isinstance(v, str) for v in values):
            raise DefinitionError(
                f"{where}: a select posts strings: its defaultValue and option values must be strings"
            )
    if ui_type == "number":
        if default is not None and (isinstance(default, bool) or not isinstance(default, int | float)):
            raise DefinitionError(f"{where}: a number field's defaultValue must be a number")
        if integer and validation.get("int") is not True:
            raise DefinitionError(
                f"{where}: an integer field needs validation.int: true (the form takes 2.5 otherwise)"
            )
        if integer and default is not None and default != int(default):
            raise DefinitionError(f"{where}: defaultValue {default} of an integer field is not an integer")
    if prop is None:
        return
    bounds: tuple[tuple[str, str], ...] = ()
    if ui_type == "number":
        bounds = (("min", "minimum"), ("max", "maximum"))
    elif ui_type == "text":
        bounds = (("max", "maxLength"),)
    for ui_key, bound in bounds:
        if bound in prop and ui_key not in validation:
            raise DefinitionError(
                f"{where}: the model has {bound} {prop[bound]}: set validation.{ui_key} "
                "(the form accepts any value otherwise)"
            )
        if ui_type == "text" and ui_key in validation and validation[ui_key] > prop[bound]:
            raise DefinitionError(
                f"{where}: validation.{ui_key} {validation[ui_key]} allows values the model rejects "
                f"({bound} {prop[bound]})"
            )
    pattern = prop.get("pattern")
    regex = as_mapping(validation.get("regex"), f"{where}.validation.regex").get("pattern")
    if ui_type == "text" and regex != pattern:
        raise DefinitionError(
            f"{where}: validation.regex.pattern {regex!r} differs from the model's pattern {pattern!r}"
        )


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
    enum = _string_values(prop)
    if isinstance(options, list) and enum is not None:
        for option in options:
            value = option.get("value") if isinstance(option, dict) else None
            if value not in enum:
                raise DefinitionError(f"{where}: option {value!r} is not one of the model's values {enum}")


def _string_values(prop: Mapping[str, Any]) -> list[Any] | None:
    """The values the model takes as strings: its enum, or the enums of its string branches (a
    flag takes a boolean or one of its words); None when any string goes."""
    if isinstance(prop.get("enum"), list):
        return list(prop["enum"])
    branches = [b for b in prop.get("anyOf") or [] if isinstance(b, dict) and b.get("type") == "string"]
    if branches and all(isinstance(b.get("enum"), list) for b in branches):
        return [value for b in branches for value in b["enum"]]
    return None
