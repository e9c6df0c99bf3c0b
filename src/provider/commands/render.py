"""`provider-kserve render FILE`: print the objects the provider would apply for Instances in FILE.

Offline and deterministic: no cluster is contacted. Each Instance document is validated and
translated by `KServeProvider.render` (the code path the controller uses), then stamped with the
ownership metadata the runtime adds (`actors.ownership.stamp`), using the document's uid or a fixed
placeholder. Chart settings come from the environment exactly as in the controller
(HF_TOKEN_SECRET_NAME, AI_GATEWAY_*, ENABLE_POD_MONITOR, POD_MONITOR_INTERVAL); the LoRA catalog
from `--lora-catalog FILE` or else LORA_ADAPTER_CATALOG.

Exit codes: 0 rendered; 1 an Instance is invalid (the message the Instance would show, on stderr);
2 bad usage, an unreadable file or catalog.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, TextIO

import yaml

from actors.interface import KubeObject, ValidationFailed
from actors.ownership import stamp
from provider.catalog import LORA_CATALOG_ENV, CatalogError, lora_catalog_from
from provider.kserve import KServeProvider
from provider.names import PROVIDER_NAME
from provider.settings import ProviderSettings, SettingsError
from provider.topology import Catalogs

PLACEHOLDER_UID: Final = "00000000-0000-0000-0000-000000000000"
DEFAULT_NAMESPACE: Final = "default"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "render", help="print the objects the provider would apply for Instance YAML (offline)"
    )
    parser.add_argument("file", help="Instance YAML, one or more documents; - reads stdin")
    parser.add_argument(
        "--available-all",
        action="store_true",
        help="render as if every optional CRD were installed (PodMonitor, Envoy AI Gateway); "
        "by default only the required kinds are assumed",
    )
    parser.add_argument("--lora-catalog", metavar="FILE", help=f"LoRA catalog JSON (default: ${LORA_CATALOG_ENV})")
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.set_defaults(func=main)


def _read(path: str) -> str:
    return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")


def _documents(text: str) -> Iterator[Any]:
    return (doc for doc in yaml.safe_load_all(text) if doc is not None)


def _owner(doc: KubeObject) -> KubeObject:
    """The Instance as `stamp` needs it: namespace and uid filled like the API server would."""
    owner = copy.deepcopy(doc)
    meta = owner.setdefault("metadata", {})
    meta.setdefault("namespace", DEFAULT_NAMESPACE)
    meta["uid"] = meta.get("uid") or PLACEHOLDER_UID
    return owner


def render_documents(
    provider: KServeProvider, docs: list[Any], catalogs: Catalogs, *, available_all: bool
) -> list[KubeObject]:
    """Stamped objects for every Instance in `docs`; ValidationFailed names the offending document."""
    served = None if available_all else provider.required_resources()
    out: list[KubeObject] = []
    for index, doc in enumerate(docs, start=1):
        if not isinstance(doc, dict) or doc.get("kind") != "Instance":
            kind = doc.get("kind", "?") if isinstance(doc, dict) else type(doc).__name__
            raise ValidationFailed(f"document {index} is a {kind}, not an Instance")
        name = str((doc.get("metadata") or {}).get("name") or f"document {index}")
        try:
            objects = provider.render(doc, catalogs=catalogs, available=served)
        except ValidationFailed as exc:
            raise ValidationFailed(f'Instance "{name}": {exc.message}') from None
        owner = _owner(doc)
        out.extend(stamp(obj, owner, PROVIDER_NAME) for obj in objects)
    return out


def _write(objects: list[KubeObject], output: str, stream: TextIO) -> None:
    if output == "json":
        json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, stream, indent=2)
        stream.write("\n")
    else:
        yaml.safe_dump_all(objects, stream, sort_keys=False, default_flow_style=False, allow_unicode=True)


def main(args: argparse.Namespace) -> int:
    try:
        settings = ProviderSettings.from_env(os.environ)
        catalogs = lora_catalog_from(args.lora_catalog, os.environ)
        docs = list(_documents(_read(args.file)))
    except (OSError, SettingsError, CatalogError, yaml.YAMLError) as exc:
        print(f"render: {exc}", file=sys.stderr)
        return 2
    provider = KServeProvider(settings, catalogs=catalogs)
    try:
        objects = render_documents(provider, docs, catalogs, available_all=args.available_all)
    except ValidationFailed as exc:
        print(f"{args.file}: {exc.message}", file=sys.stderr)
        return 1
    _write(objects, args.output, sys.stdout)
    return 0
