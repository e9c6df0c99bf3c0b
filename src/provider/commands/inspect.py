"""`provider-kserve inspect NAME`: an Instance, the objects it should have and the ones it has.

Per derived object: whether it is expected (from `KServeProvider.render`, what the controller
applies), present and ours; its raw status conditions (KServe's, verbatim); and its managedFields
owners, i.e. which field manager holds which fields, which is how an apply conflict is read.
`-o yaml` prints the same as data, with every condition message and every owned field.

Chart settings come from the environment as for `render` and `run` (HF_TOKEN_SECRET_NAME,
ENABLE_POD_MONITOR, AI_GATEWAY_*), the LoRA catalog from `--lora-catalog FILE` or else
LORA_ADAPTER_CATALOG. Exit codes: 0 shown; 1 no such Instance; 2 bad configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
import yaml

from actors import KubeClient, add_connection_arguments
from provider.inspect.inventory import format_table, gather, report_document
from provider.kserve import KServeProvider
from provider.model.catalog import LORA_CATALOG_ENV, CatalogError, Catalogs, lora_catalog_from
from provider.model.settings import ProviderSettings, SettingsError


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "inspect",
        help="show an Instance's expected and present objects, their conditions and field owners",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("instance", help="the Instance name")
    parser.add_argument("-n", "--namespace", default="default", help="the Instance's namespace (default: %(default)s)")
    parser.add_argument("-o", "--output", choices=("table", "yaml"), default="table")
    add_connection_arguments(parser)
    parser.add_argument("--lora-catalog", metavar="FILE", help=f"LoRA catalog JSON (default: ${LORA_CATALOG_ENV})")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        provider = KServeProvider(ProviderSettings.from_env(os.environ))
        catalogs = lora_catalog_from(args.lora_catalog, os.environ)
    except (OSError, SettingsError, CatalogError) as err:
        print(f"inspect: {err}", file=sys.stderr)
        return 2
    return anyio.run(_run, args, provider, catalogs)


async def _run(args: argparse.Namespace, provider: KServeProvider, catalogs: Catalogs) -> int:
    try:
        client = await KubeClient.connect(args.kubeconfig, args.context)
    except Exception as err:  # any config problem: a missing file, a bad context, no in-cluster token
        print(f"inspect: cannot load the kubeconfig: {err}", file=sys.stderr)
        return 2
    async with client:
        report = await gather(client, provider, args.namespace, args.instance, catalogs)
    if report is None:
        print(f"inspect: Instance {args.namespace}/{args.instance} not found", file=sys.stderr)
        return 1
    if args.output == "yaml":
        yaml.safe_dump(report_document(report), sys.stdout, sort_keys=False, allow_unicode=True)
    else:
        sys.stdout.write(format_table(report))
    return 0
