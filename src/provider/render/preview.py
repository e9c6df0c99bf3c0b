"""What `provider-kserve render` shows for a set of Instance documents, as data.

Each Instance goes the controller's way: the version-bundle check and resolution of the runtime
(actors.reconcile.versions, with the bundles of definition/versions.yaml standing in for the Provider
resource), then `KServeProvider.render` (validation and translation), then the ownership stamp
(actors.contract.stamp) with the document's uid or a placeholder. Everything the Instance asks for
is rendered, optional kinds included; what a real install would do differently is said in notes:
per optional object, the CRD without which the controller skips it; per suspended Instance, that
the controller keeps the replica count its KServe object stands with; and, once each, a defaulted
namespace or a placeholder uid.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from actors import KubeObject, Resource, ValidationFailed, effective_bundle, resolve_versions, stamp, version_problem
from provider.kserve import KServeProvider
from provider.model.catalog import Catalogs
from provider.model.kinds import OPTIONAL
from provider.model.names import PROVIDER_NAME
from provider.topologies.suspension import STOP_ANNOTATION, stop_requested

PLACEHOLDER_UID: Final = "00000000-0000-0000-0000-000000000000"
DEFAULT_NAMESPACE: Final = "default"
OPTIONAL_BY_KIND: Final[Mapping[str, Resource]] = {r.kind: r for r in OPTIONAL}


@dataclass(frozen=True)
class Document:
    source: str  # where it came from, for messages: a path, or "-" for stdin
    index: int  # 1-based position among the source's documents
    body: Any


@dataclass
class Preview:
    objects: list[KubeObject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def offline_providers(root: Path) -> dict[str, KubeObject]:
    """The Provider resource as far as version bundles go, from definition/versions.yaml under
    `root` (the chart publishes the same bundles; `generate --check` keeps them equal)."""
    data = yaml.safe_load((root / "definition" / "versions.yaml").read_text(encoding="utf-8")) or {}
    return {PROVIDER_NAME: {"spec": {"versions": data.get("versions") or []}}}


def _crd(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}"


def _instance_name(doc: Document) -> str:
    meta = doc.body.get("metadata") if isinstance(doc.body, dict) else None
    return str((meta or {}).get("name") or f"document {doc.index}")


def _owner(body: KubeObject) -> KubeObject:
    """The Instance as `stamp` needs it: namespace and uid filled like the API server would."""
    owner = copy.deepcopy(body)
    if owner.get("metadata") is None:
        owner["metadata"] = {}
    meta = owner["metadata"]
    if isinstance(meta, dict):  # anything else fails validation, with its own message
        meta["namespace"] = meta.get("namespace") or DEFAULT_NAMESPACE
        meta["uid"] = meta.get("uid") or PLACEHOLDER_UID
    return owner


def _objects_of(
    provider: KServeProvider, body: KubeObject, catalogs: Catalogs, providers: Mapping[str, KubeObject] | None
) -> list[KubeObject]:
    """The stamped objects of one Instance; ValidationFailed with the message it would show."""
    owner = _owner(body)
    if providers is not None:
        problem = version_problem(owner, providers)
        if problem is not None:
            raise ValidationFailed(problem)
        owner = resolve_versions(owner, providers, effective_bundle(owner, providers))
    return [stamp(obj, owner, PROVIDER_NAME) for obj in provider.render(owner, catalogs=catalogs)]


def preview(
    provider: KServeProvider,
    documents: list[Document],
    catalogs: Catalogs,
    providers: Mapping[str, KubeObject] | None,
    *,
    required_only: bool = False,
) -> Preview:
    """Render every Instance in `documents`. `providers` holds the version bundles (None: unknown,
    not checked); `required_only` leaves out the optional kinds, as a cluster without their CRDs
    would."""
    out = Preview()
    no_namespace: list[str] = []
    no_uid: list[str] = []
    for doc in documents:
        body = doc.body
        if not isinstance(body, dict) or body.get("kind") != "Instance":
            kind = body.get("kind", "?") if isinstance(body, dict) else type(body).__name__
            out.errors.append(f"{doc.source}: document {doc.index} is a {kind}, not an Instance")
            continue
        name = _instance_name(doc)
        try:
            objects = _objects_of(provider, body, catalogs, providers)
        except ValidationFailed as exc:
            out.errors.append(f'{doc.source}: Instance "{name}": {exc.message}')
            continue
        meta = body.get("metadata") or {}  # a mapping: the Instance passed validation
        if not meta.get("namespace"):
            no_namespace.append(name)
        if not meta.get("uid"):
            no_uid.append(name)
        for obj in objects:
            _add_object(out, name, obj, required_only)
    if no_namespace:
        out.notes.insert(
            0,
            f"no metadata.namespace in {_names(no_namespace)}: rendered into namespace "
            f'"{DEFAULT_NAMESPACE}", where kubectl apply without -n would create it',
        )
    if no_uid:
        out.notes.insert(
            1 if no_namespace else 0,
            f"ownerReferences carry the placeholder uid {PLACEHOLDER_UID} for {_names(no_uid)} "
            "(no metadata.uid; the API server assigns the real one)",
        )
    return out


def _add_object(out: Preview, name: str, obj: KubeObject, required_only: bool) -> None:
    """`obj` of Instance `name` in `out`, with what the controller does differently from a plain
    apply of it: a stopped object's replicas, an optional kind it skips without its CRD."""
    if stop_requested(obj):
        out.notes.append(
            f'Instance "{name}" is suspended (replicas 0): {obj["kind"]} {obj["metadata"]["name"]} carries '
            f"{STOP_ANNOTATION}, and the controller leaves its replica count as the object stands"
        )
    resource = OPTIONAL_BY_KIND.get(obj["kind"])
    if resource is None:
        out.objects.append(obj)
        return
    where = f"{obj['kind']} {obj['metadata']['namespace']}/{obj['metadata']['name']}"
    if required_only:
        out.notes.append(f"skipped {where}: it needs CRD {_crd(resource)} (--required-only)")
    else:
        out.objects.append(obj)
        out.notes.append(f"{where} needs CRD {_crd(resource)}; the controller skips it while that CRD is not installed")


def _names(names: list[str]) -> str:
    quoted = ", ".join(f'"{n}"' for n in names)
    return f"Instance {quoted}" if len(names) == 1 else f"Instances {quoted}"
