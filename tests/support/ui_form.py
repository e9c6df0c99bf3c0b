"""OpenEverest's "create Instance" form, modelled from its UI generator (release-2.0), run on our
Provider: what the form offers, what it lets through, and the body it posts.

What the UI does, and this model with it:

- preprocessing: a select's `optionsPath` is resolved against the Provider resource into options;
  without an explicit `defaultValue` the first option becomes the default;
- default values: `defaultValue`, else "" for selects and texts, nothing for numbers;
- loading an Instance (edit, import): each field reads the value at its path, a `badgeToApi` badge
  stripped and numbers parsed;
- the zod schema: a select WITH a validation block takes only its options ("" too when it shows
  an empty entry and is not required), WITHOUT one any string; a number is coerced, then
  `int`/`min`/`max`; a text takes a string, then `max` (length) and `regex`; `required` refuses an
  empty value; `celExpressions` run over the whole form (numbers are JavaScript doubles there);
- the body: badges appended, empty values ("", None, unset) dropped, the dotted paths nested, with
  `spec.providerRef` and `spec.topology.type`; no `spec.version`, no component `type`.
"""

from __future__ import annotations

import contextlib
import copy
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

UNSET: Any = None


@dataclass(frozen=True)
class Field:
    name: str
    path: str
    ui_type: str
    params: Mapping[str, Any]
    validation: Mapping[str, Any] | None

    @property
    def options(self) -> list[str]:
        return [str(o["value"]) for o in self.params.get("options") or []]

    @property
    def default(self) -> Any:
        if "defaultValue" in self.params:
            return self.params["defaultValue"]
        return "" if self.ui_type in ("select", "text") else UNSET

    @property
    def required(self) -> bool:
        return bool((self.validation or {}).get("required"))


def get(obj: Mapping[str, Any], path: str) -> Any:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return UNSET
        node = node[part]
    return node


def put(obj: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = obj
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def _leaves(components: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, item in components.items():
        if item.get("uiType") == "group":
            yield from _leaves(item["components"])
        else:
            yield name, item


def fields(ui: Mapping[str, Any], provider_spec: Mapping[str, Any]) -> list[Field]:
    """The topology's form fields, `optionsPath` resolved against the Provider spec."""
    out: list[Field] = []
    for section in ui["sections"].values():
        for name, item in _leaves(section["components"]):
            params = dict(item.get("fieldParams") or {})
            if "optionsPath" in params:
                entries = get({"spec": provider_spec}, params["optionsPath"]) or []
                config = params.pop("optionsPathConfig")
                params.pop("optionsPath")
                params["options"] = [
                    {"label": e[config["labelPath"]], "value": e[config["valuePath"]]} for e in entries
                ]
                if "defaultValue" not in params and params["options"]:
                    params["defaultValue"] = params["options"][0]["value"]
            out.append(Field(name, item["path"], item["uiType"], params, item.get("validation")))
    return out


def _number(value: Any, badge: str | None) -> Any:
    if isinstance(value, str):
        text = value.strip().removesuffix(badge or "").strip()
        if not text:
            return UNSET
        return float(text) if re.fullmatch(r"-?\d+(\.\d*)?|-?\.\d+", text) else value
    return value


def load(form: list[Field], instance: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The form's values: the Instance's where it has one (import/edit), the defaults elsewhere."""
    values: dict[str, Any] = {}
    for field in form:
        value = get(instance, field.path) if instance is not None else UNSET
        if value is UNSET:
            values[field.path] = field.default
        elif field.ui_type == "number":
            values[field.path] = _number(value, field.params.get("badge") if field.params.get("badgeToApi") else None)
        else:
            values[field.path] = value
    return values


def _empty(value: Any) -> bool:
    return value is UNSET or value == ""


def _field_problem(field: Field, value: Any) -> str | None:
    rules = field.validation or {}
    if _empty(value):
        return "required" if field.required else None
    if field.ui_type == "select":
        if not isinstance(value, str):
            return f"{value!r} is not a string"
        if field.validation is None:
            return None  # the UI checks only that it is a string
        allowed = field.options + ([""] if field.params.get("displayEmpty") and not field.required else [])
        return None if value in allowed else f"{value!r} is not one of {allowed}"
    if field.ui_type == "number":
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f"{value!r} is not a number"
        if rules.get("int") and number != int(number):
            return f"{value!r} is not an integer"
        if "min" in rules and number < rules["min"]:
            return f"{value!r} is below {rules['min']}"
        if "max" in rules and number > rules["max"]:
            return f"{value!r} is above {rules['max']}"
        return None
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    if "max" in rules and len(value) > rules["max"]:
        return f"longer than {rules['max']}"
    regex = (rules.get("regex") or {}).get("pattern")
    if regex is not None and re.search(regex, value) is None:
        return f"{value!r} does not match {regex}"
    return None


def _cel_data(form: list[Field], values: Mapping[str, Any]) -> dict[str, Any]:
    """The form's values nested as the CEL rules see them: unset fields absent, numbers doubles."""
    data: dict[str, Any] = {}
    for field in form:
        value = values[field.path]
        if _empty(value) and field.ui_type == "number":
            continue
        if field.ui_type == "number":
            value = float(value)
        put(data, field.path, value)
    return data


def problems(form: list[Field], values: Mapping[str, Any]) -> dict[str, str]:
    """What the form refuses, by field name (empty: the form lets the values through)."""
    out: dict[str, str] = {}
    for field in form:
        problem = _field_problem(field, values[field.path])
        if problem is not None:
            out[field.name] = problem
    data = _cel_data(form, values)
    activation = {key: json_to_cel(value) for key, value in data.items()}
    with _recursion_limit_restored():
        env = celpy.Environment()
        for field in form:
            for rule in (field.validation or {}).get("celExpressions") or []:
                try:
                    result = env.program(env.compile(rule["celExpr"])).evaluate(activation)
                    ok = not isinstance(result, CELEvalError) and bool(result)
                except CELEvalError:
                    ok = False  # the UI shows an evaluation error as the field's problem
                if not ok:
                    out.setdefault(field.name, rule["message"])
    return out


@contextlib.contextmanager
def _recursion_limit_restored() -> Iterator[None]:
    """celpy.Environment() raises the process's recursion limit to 2500 for good; every test after
    it then ran with that limit (test_decode's premise, that the standard library's json fails at
    1000 levels, held only when the UI form tests had not run yet)."""
    limit = sys.getrecursionlimit()
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def body(
    form: list[Field], values: Mapping[str, Any], *, topology: str, provider: str, name: str, namespace: str
) -> dict[str, Any]:
    """The Instance the form posts."""
    spec: dict[str, Any] = {"providerRef": {"name": provider}, "topology": {"type": topology}}
    out: dict[str, Any] = {
        "apiVersion": "core.openeverest.io/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    for field in form:
        value = values[field.path]
        if _empty(value):
            continue
        if field.ui_type == "number":
            number = float(value)
            value = int(number) if number == int(number) else number
        if field.params.get("badgeToApi"):
            value = f"{value}{field.params['badge']}"
        put(out, field.path, copy.deepcopy(value))
    return out
