"""`provider-kserve run`: the controller process (in-cluster, under Tilt, or against a kubeconfig).
The runtime's command (actors.manager.command) makes it: its flags, and the process around the
Manager; what is ours is the provider it runs."""

from __future__ import annotations

import argparse
import os
from typing import Any

from actors import KubeClient, Provider, SharedActors, add_manager_arguments, run_manager
from provider.model.names import PROVIDER_NAME as PROVIDER_NAME  # the one definition, re-exported


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser("run", help="run the provider controller")
    add_manager_arguments(parser, name=PROVIDER_NAME)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    return run_manager(args, name=PROVIDER_NAME, build=_build)


def _build(client: KubeClient) -> tuple[Provider[Any], SharedActors]:
    from provider.kserve import build_provider  # here: the other verbs start without it

    return build_provider(os.environ, client=client)
