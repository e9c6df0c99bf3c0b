"""`provider-kserve inspect`: one Instance, the objects it should have, the objects it has.

The expected objects come from `KServeProvider.render`, the code path the controller applies and
`provider-kserve render` prints, for the kinds the cluster serves. (The controller renders a copy
with component versions filled from the Provider's version bundle; that changes images, never which
objects exist.) The present ones are what the API server holds under the Instance's ownership
labels, plus any expected name held by someone else. Each object gets a state:

- `ok`: expected, present, carries our labels and the Instance's controller reference;
- `missing`: expected, not there (the next reconcile creates it);
- `foreign`: expected, but the object of that name is not ours (no labels, or another owner): the
  provider's apply will conflict with it rather than take it over;
- `extra`: ours but no longer expected (the next reconcile prunes it);
- `deleting`: being deleted, e.g. held by a finalizer.

With each object go its raw status conditions (KServe's, verbatim) and its managedFields owners:
which field manager wrote which fields, with which operation, which is how an apply conflict is
read. `build_report` and the formatters are pure; `gather` makes the API calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from actors import (
    INSTANCES,
    SECRETS,
    KubeClient,
    KubeObject,
    Resource,
    ValidationFailed,
    inventory_selector,
    is_owned_by,
    ownership_labels,
)
from provider.kserve import KServeProvider
from provider.model.catalog import Catalogs
from provider.model.names import PROVIDER_NAME

# The runtime writes this Secret itself (it is not in render's output).
CONNECTION_SECRET_KIND: Final = "Secret"
# Fields listed per manager in the table before it says "…".
FIELDS_SHOWN: Final = 4


@dataclass(frozen=True)
class Owner:
    """One managedFields entry: who wrote which fields, how."""

    manager: str
    operation: str
    subresource: str = ""
    time: str = ""
    fields: tuple[str, ...] = ()

    def label(self) -> str:
        how = f"{self.operation}/{self.subresource}" if self.subresource else self.operation
        return f"{self.manager} ({how})"


@dataclass(frozen=True)
class ObjectState:
    kind: str
    name: str
    state: str  # ok | missing | foreign | extra | deleting
    api_version: str = ""
    owners: tuple[Owner, ...] = ()
    conditions: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class InstanceReport:
    namespace: str
    name: str
    uid: str
    phase: str
    message: str
    conditions: tuple[Mapping[str, Any], ...]
    owners: tuple[Owner, ...]
    # Why the expected objects could not be computed (the Instance fails validation), if so.
    problem: str | None = None
    objects: tuple[ObjectState, ...] = field(default_factory=tuple)


# -- pure ------------------------------------------------------------------------------------------


def field_paths(fields: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The leaf paths of a managedFields `fieldsV1` tree: `.spec.replicas`, `.metadata.labels.app`,
    `.spec.containers[name="main"].image`."""
    out: list[str] = []
    for key, sub in fields.items():
        if key == ".":
            continue
        kind, _, rest = key.partition(":")
        if kind == "f":
            path = f"{prefix}.{rest}"
        elif kind == "k":
            try:
                keys = json.loads(rest)
                path = prefix + "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
            except (ValueError, AttributeError):
                path = f"{prefix}[{rest}]"
        elif kind == "v":
            path = f"{prefix}[={rest}]"
        elif kind == "i":
            path = f"{prefix}[{rest}]"
        else:
            path = f"{prefix}.{key}"
        children = {k: v for k, v in sub.items() if k != "."} if isinstance(sub, dict) else {}
        out.extend(field_paths(children, path) if children else [path])
    return out


def owners_of(obj: KubeObject) -> tuple[Owner, ...]:
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    return tuple(
        Owner(
            manager=str(e.get("manager", "")),
            operation=str(e.get("operation", "")),
            subresource=str(e.get("subresource", "")),
            time=str(e.get("time", "")),
            fields=tuple(field_paths(e.get("fieldsV1") or {})),
        )
        for e in entries
        if isinstance(e, dict)
    )


def conditions_of(obj: KubeObject) -> tuple[Mapping[str, Any], ...]:
    raw = (obj.get("status") or {}).get("conditions") or []
    return tuple(c for c in raw if isinstance(c, dict))


def is_ours(obj: KubeObject, instance: KubeObject) -> bool:
    """Our ownership labels and the Instance's controller reference: what the runtime inventories."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    wanted = ownership_labels(instance, PROVIDER_NAME)
    return all(labels.get(k) == v for k, v in wanted.items()) and is_owned_by(obj, instance)


def _key(obj: KubeObject) -> tuple[str, str]:
    return str(obj.get("kind", "")), str((obj.get("metadata") or {}).get("name", ""))


def object_state(expected: bool, live: KubeObject | None, instance: KubeObject) -> str:
    if live is None:
        return "missing"
    if (live.get("metadata") or {}).get("deletionTimestamp"):
        return "deleting"
    if not is_ours(live, instance):
        return "foreign"
    return "ok" if expected else "extra"


def build_report(
    instance: KubeObject,
    expected: Sequence[KubeObject],
    present: Iterable[KubeObject],
    problem: str | None = None,
) -> InstanceReport:
    """Expected objects first (in render's order, which is apply order), then present extras."""
    live = {_key(obj): obj for obj in present}
    objects: list[ObjectState] = []
    for obj in expected:
        key = _key(obj)
        found = live.pop(key, None)
        objects.append(_state(key, str(obj.get("apiVersion", "")), object_state(True, found, instance), found))
    for key, obj in sorted(live.items()):
        objects.append(_state(key, str(obj.get("apiVersion", "")), object_state(False, obj, instance), obj))
    meta = instance.get("metadata") or {}
    status = instance.get("status") or {}
    return InstanceReport(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        phase=str(status.get("phase", "")),
        message=str(status.get("message", "")),
        conditions=conditions_of(instance),
        owners=owners_of(instance),
        problem=problem,
        objects=tuple(objects),
    )


def _state(key: tuple[str, str], api_version: str, state: str, live: KubeObject | None) -> ObjectState:
    kind, name = key
    if live is None:
        return ObjectState(kind, name, state, api_version)
    return ObjectState(kind, name, state, api_version, owners_of(live), conditions_of(live))


def condition_summary(conditions: Iterable[Mapping[str, Any]]) -> str:
    """`Ready=True WorkloadsReady=False(MinimumReplicasUnavailable)`."""
    parts = []
    for cond in conditions:
        reason = f"({cond['reason']})" if cond.get("reason") and cond.get("status") != "True" else ""
        parts.append(f"{cond.get('type', '?')}={cond.get('status', '?')}{reason}")
    return " ".join(parts) or "-"


def owner_summary(owners: Iterable[Owner], *, fields: bool = True) -> str:
    """Each manager with its operation and, with `fields`, the fields of anyone but us: those are
    the ones an apply of ours conflicts on."""
    parts = []
    for owner in owners:
        text = owner.label()
        if fields and owner.manager != PROVIDER_NAME and owner.fields:
            shown = ", ".join(owner.fields[:FIELDS_SHOWN])
            more = f", … {len(owner.fields) - FIELDS_SHOWN} more" if len(owner.fields) > FIELDS_SHOWN else ""
            text += f": {shown}{more}"
        parts.append(text)
    return "; ".join(parts) or "-"


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]]).rstrip() for row in rows]


def format_table(report: InstanceReport) -> str:
    lines = [
        f"Instance {report.namespace}/{report.name}  uid {report.uid or '-'}",
        f"  phase:    {report.phase or '-'}" + (f"  {report.message}" if report.message else ""),
        f"  managers: {owner_summary(report.owners, fields=False)}",
    ]
    if report.conditions:
        lines.append("  conditions:")
        condition_rows = [
            (
                f"    {c.get('type', '?')}",
                str(c.get("status", "?")),
                str(c.get("reason", "")),
                str(c.get("message", "")),
            )
            for c in report.conditions
        ]
        lines += _columns(condition_rows)
    if report.problem is not None:
        lines.append(f"  expected objects unknown: {report.problem}")
    lines.append("")
    header = ("KIND", "NAME", "STATE", "MANAGERS", "CONDITIONS")
    rows = [header] + [
        (o.kind, o.name, o.state, owner_summary(o.owners), condition_summary(o.conditions)) for o in report.objects
    ]
    lines += _columns(rows) if report.objects else ["no derived objects expected or present"]
    return "\n".join(lines) + "\n"


def _owner_document(owner: Owner) -> dict[str, Any]:
    doc: dict[str, Any] = {"manager": owner.manager, "operation": owner.operation}
    if owner.subresource:
        doc["subresource"] = owner.subresource
    if owner.time:
        doc["time"] = owner.time
    doc["fields"] = list(owner.fields)
    return doc


def report_document(report: InstanceReport) -> dict[str, Any]:
    """The report as plain data, for `-o yaml`."""
    return {
        "instance": {
            "namespace": report.namespace,
            "name": report.name,
            "uid": report.uid,
            "phase": report.phase,
            "message": report.message,
            "conditions": [dict(c) for c in report.conditions],
            "managedFields": [_owner_document(o) for o in report.owners],
            **({"validation": report.problem} if report.problem is not None else {}),
        },
        "objects": [
            {
                "kind": o.kind,
                "apiVersion": o.api_version,
                "name": o.name,
                "state": o.state,
                "conditions": [dict(c) for c in o.conditions],
                "managedFields": [_owner_document(w) for w in o.owners],
            }
            for o in report.objects
        ],
    }


# -- thin: the calls ---------------------------------------------------------------------------------


async def served_kinds(client: KubeClient, kinds: Iterable[Resource]) -> frozenset[Resource]:
    """The kinds whose group/version the API server serves (CRD installed), as the runtime's
    discovery sees them."""
    by_group_version: dict[str, set[str]] = {}
    served: set[Resource] = set()
    for res in kinds:
        if res.api_version not in by_group_version:
            by_group_version[res.api_version] = await client.discover(res.api_version)
        if res.plural in by_group_version[res.api_version]:
            served.add(res)
    return frozenset(served)


async def gather(
    client: KubeClient, provider: KServeProvider, namespace: str, name: str, catalogs: Catalogs
) -> InstanceReport | None:
    """The report for Instance namespace/name, or None when there is no such Instance."""
    instance = await client.get(INSTANCES, namespace, name)
    if instance is None:
        return None
    available = await served_kinds(client, provider.owned_resources())
    problem: str | None = None
    try:
        expected = provider.render(instance, catalogs=catalogs, available=available)
    except ValidationFailed as failed:
        expected, problem = [], failed.message
    by_kind = {r.kind: r for r in available}
    selector = inventory_selector(instance, PROVIDER_NAME)
    present: list[KubeObject] = []
    for res in sorted(available):
        items, _ = await client.list_all(res, namespace, label_selector=selector)
        present += [{**item, "kind": res.kind, "apiVersion": res.api_version} for item in items]
    # An expected name that our labels do not find may still be taken by someone else's object.
    found = {_key(obj) for obj in present}
    for obj in expected:
        kind = by_kind.get(str(obj.get("kind")))
        if kind is not None and _key(obj) not in found:
            live = await client.get(kind, namespace, _key(obj)[1])
            if live is not None:
                present.append({**live, "kind": kind.kind, "apiVersion": kind.api_version})
    secret_name = ((instance.get("status") or {}).get("connectionSecretRef") or {}).get("name")
    if secret_name:
        secret = await client.get(SECRETS, namespace, secret_name)
        if secret is not None:
            # Only its metadata: the data is the connection password.
            present.append({"apiVersion": "v1", "kind": CONNECTION_SECRET_KIND, "metadata": secret["metadata"]})
        expected = [
            *expected,
            {"apiVersion": "v1", "kind": CONNECTION_SECRET_KIND, "metadata": {"name": secret_name}},
        ]
    return build_report(instance, expected, present, problem)
