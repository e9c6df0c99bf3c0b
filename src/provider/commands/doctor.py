"""`provider-kserve doctor`: check the cluster and the credentials the provider would run with.

Reads the kubeconfig (or the in-cluster config) exactly as `provider-kserve run` does, creates
nothing, prints one table row per check and exits 1 when anything the provider needs is missing:
the API server, the Instance and Provider CRDs, or any permission in the chart's RBAC rules.
Optional integrations (KServe kinds, Envoy AI Gateway, Prometheus Operator) are reported only.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio

from actors import KubeClient, add_connection_arguments
from provider.doctor.cluster_checks import diagnose, exit_code, format_table
from provider.kserve import KServeProvider
from provider.model.settings import ProviderSettings


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="check API access, CRDs and every RBAC permission the provider needs (creates nothing)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_connection_arguments(parser)
    parser.add_argument(
        "--namespace",
        dest="namespaces",
        action="append",
        default=[],
        help="the provider watches only this namespace (repeatable), as `run --namespace`: namespaced "
        "permissions are checked there; default: in every namespace",
    )
    parser.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        help="the provider's own namespace, where it needs its leader-election Lease (default: %(default)s)",
    )
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    return anyio.run(_main, args)


async def _main(args: argparse.Namespace) -> int:
    try:
        client = await KubeClient.connect(args.kubeconfig, args.context)
    except Exception as err:  # any config problem: a missing file, a bad context, no in-cluster token
        print(f"doctor: cannot load the kubeconfig: {err}", file=sys.stderr)
        return 2
    owned = KServeProvider(ProviderSettings()).owned_resources()
    async with client:
        rows = await diagnose(client, owned=owned, own_namespace=args.lease_namespace, namespaces=args.namespaces)
    sys.stdout.write(format_table(rows))
    return exit_code(rows)
