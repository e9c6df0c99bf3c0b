"""One module per `provider-kserve` verb, and the options several verbs share."""

from __future__ import annotations

import argparse
import os


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """How a verb reaches the API server: a kubeconfig (and context), else the in-cluster config."""
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="default: in-cluster config")
    parser.add_argument("--context", default=None)
