"""`provider-kserve render [-f values.yaml] FILE...`: preview what Instances become in a real install.

Offline and deterministic: no cluster is contacted. Every Instance is checked and translated the
controller's way (provider.render.preview) and everything it asks for is printed, optional kinds
included; stderr says per optional object which CRD it needs (the controller skips it without),
and once when a namespace was defaulted or a placeholder uid stamped.

Settings, in increasing precedence:
1. with `-f/--values FILE` (repeatable): the chart's values.yaml with the files merged over it, as
   `helm install -f` does, turned into the environment the chart's Deployment gives the provider
   (provider.render.chart_values); without `-f`: the provider's own environment variables, as the
   controller reads them;
2. one flag per setting (below), e.g. `--ai-gateway-enabled true`.

Exit codes: 0 rendered; 1 an Instance is invalid (the message the Instance would show, on stderr,
nothing on stdout); 2 bad usage, an unreadable file, values or catalog.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml

from actors import KubeObject
from provider.generate.definition import DefinitionError
from provider.generate.generation import CHART_DIR, find_root
from provider.kserve import KServeProvider
from provider.model.catalog import (
    LORA_CATALOG_ENV,
    MODEL_CATALOG_ENV,
    CatalogError,
    Catalogs,
    parse_lora_catalog,
    parse_model_catalog,
)
from provider.model.settings import ENV_VARS, ProviderSettings, SettingsError
from provider.render import chart_values
from provider.render.preview import Document, offline_providers, preview

# Exit status of a process that wrote into a closed pipe (128 + SIGPIPE), as `head` leaves a shell.
BROKEN_PIPE = 141
CATALOGS = {LORA_CATALOG_ENV: "lora_catalog", MODEL_CATALOG_ENV: "model_catalog"}


def _flag(var: str) -> str:
    return "--" + var.lower().replace("_", "-")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "render",
        help="preview the objects an Instance becomes in a real install (offline)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="Instance YAML, one or more documents; - reads stdin")
    parser.add_argument(
        "-f", "--values", action="append", default=[], metavar="VALUES",
        help="a Helm values file of the provider chart (repeatable; later files win)",
    )  # fmt: skip
    parser.add_argument(
        "--chart", metavar="DIR", help="the provider chart whose values.yaml -f merges over (default: the checkout's)"
    )
    parser.add_argument(
        "--release",
        default=chart_values.DEFAULT_RELEASE,
        help="Helm release name, which names the AI Gateway (default: %(default)s)",
    )
    parser.add_argument(
        "--release-namespace",
        default=chart_values.DEFAULT_NAMESPACE,
        help="Helm release namespace, the AI Gateway's (default: %(default)s)",
    )
    parser.add_argument(
        "--required-only",
        action="store_true",
        help="leave out the optional kinds (PodMonitor, Envoy AI Gateway), as a cluster without their CRDs would",
    )
    # Rendering everything is the default now; the flag is kept so older command lines still work.
    parser.add_argument("--available-all", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    overrides = parser.add_argument_group(
        "settings", "override one setting of the provider (the value as its environment variable takes it)"
    )
    for field, var in ENV_VARS.items():
        description = ProviderSettings.model_fields[field].description or ""
        overrides.add_argument(
            _flag(var),
            dest=f"set_{var}",
            metavar="VALUE",
            help=f"{description} (${var}; chart: {chart_values.VALUE_OF.get(var, '-')})",
        )
    overrides.add_argument(
        "--lora-catalog", metavar="FILE", help=f"LoRA catalog JSON (${LORA_CATALOG_ENV}; chart: loraAdapters)"
    )
    overrides.add_argument(
        "--model-catalog", metavar="FILE", help=f"model catalog JSON (${MODEL_CATALOG_ENV}; chart: models)"
    )
    parser.set_defaults(func=main)


def _checkout() -> Path | None:
    try:
        return find_root(Path.cwd())
    except DefinitionError:
        return None


def _environment(args: argparse.Namespace, root: Path | None) -> dict[str, str]:
    """The provider's environment: from values files through the chart mapping, or this process's."""
    if args.values:
        chart = Path(args.chart) if args.chart else (root / CHART_DIR if root is not None else None)
        if chart is None:
            raise chart_values.ValuesError("cannot find the provider chart outside a checkout: pass --chart DIR")
        values = chart_values.load_values(chart, [Path(p) for p in args.values])
        env = chart_values.deployment_env(values, release=args.release, namespace=args.release_namespace)
    else:
        env = {var: os.environ[var] for var in (*ENV_VARS.values(), *CATALOGS) if var in os.environ}
    for var in ENV_VARS.values():
        if (value := getattr(args, f"set_{var}")) is not None:
            env[var] = value
    for var, option in CATALOGS.items():
        if path := getattr(args, option):
            env[var] = Path(path).read_text(encoding="utf-8")
    return env


def _catalogs(env: Mapping[str, str]) -> Catalogs:
    return Catalogs(
        models=parse_model_catalog(env.get(MODEL_CATALOG_ENV, "")),
        lora_adapters=parse_lora_catalog(env.get(LORA_CATALOG_ENV, "")),
    )


def _documents(paths: list[str]) -> Iterator[Document]:
    for path in paths:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        docs = (doc for doc in yaml.safe_load_all(text) if doc is not None)
        yield from (Document(path, index, doc) for index, doc in enumerate(docs, start=1))


def _write(objects: list[KubeObject], output: str, stream: TextIO) -> None:
    if output == "json":
        json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, stream, indent=2)
        stream.write("\n")
    else:
        yaml.safe_dump_all(objects, stream, sort_keys=False, default_flow_style=False, allow_unicode=True)
    stream.flush()


def main(args: argparse.Namespace) -> int:
    root = _checkout()
    try:
        env = _environment(args, root)
        settings = ProviderSettings.from_env(env)
        catalogs = _catalogs(env)
        documents = list(_documents(args.files))
    except (OSError, SettingsError, CatalogError, chart_values.ValuesError, yaml.YAMLError) as exc:
        print(f"render: {exc}", file=sys.stderr)
        return 2
    providers = offline_providers(root) if root is not None else None
    if providers is None:
        print("render: no definition/versions.yaml here: spec.version is not checked", file=sys.stderr)
    result = preview(KServeProvider(settings), documents, catalogs, providers, required_only=args.required_only)
    if result.errors:
        for error in result.errors:
            print(error, file=sys.stderr)
        return 1
    for note in result.notes:
        print(f"render: {note}", file=sys.stderr)
    try:
        _write(result.objects, args.output, sys.stdout)
    except BrokenPipeError:
        # The reader left (`| head`): no traceback. Point stdout at /dev/null so the interpreter's
        # final flush does not fail on the closed pipe again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE
    return 0
