"""The node-mode cluster from the command line (root):

    .venv/bin/python -m cluster up [--image ARCHIVE ...] [--kubeconfig-out PATH] [--kserve]   # until signalled
    .venv/bin/python -m cluster check [--image ARCHIVE ...]    # start, print timings and memory, stop
    .venv/bin/python -m cluster cleanup                        # undo what a killed cluster left behind
    .venv/bin/python -m cluster start|stop|import|identity --state-dir D ...   # in the background, for
                                                               # Tilt (see cluster/background.py)

(with `dev` on PYTHONPATH, as the Makefile sets it). `--kserve` also runs KServe's real controllers
against it (dev/kservestack, out-of-cluster, webhooks on 127.0.0.1), with KServe's configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster import background, host, host_record
from cluster.node import NodeCluster
from kservestack import KServeStack
from plane import ControlPlaneError, block_until_signal, format_rss


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "cleanup":
            with host.host_lock():
                host_record.recover_orphan()
            return 0
        if args.command in ("identity", "start", "stop", "import"):
            return background.command(args)
        state_dir = getattr(args, "state_dir", None)
        identity = background.identity_dir(state_dir.resolve()) if state_dir else None
        cluster = NodeCluster(
            images=tuple(args.image),
            keep_dir=args.keep,
            identity_dir=identity,
            metrics_server=getattr(args, "metrics_server", False),
        )
        asyncio.run(cluster.start())
    except ControlPlaneError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return _run_then_stop(cluster, args, state_dir)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m cluster", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start, print `export KUBECONFIG=...`, block until signalled")
    up.add_argument("--kubeconfig-out", type=Path, help="also write the admin kubeconfig here")
    check = sub.add_parser("check", help="start, print timings and peak memory, stop")
    for p in (up, check):
        p.add_argument("--image", action="append", type=Path, default=[], help="image archive to import")
        p.add_argument("--keep", action="store_true", help="keep the work dir (logs) after stopping")
        p.add_argument("--kserve", action="store_true", help="also run KServe's controllers against it")
        p.add_argument("--metrics-server", action="store_true", help="also serve the resource metrics API")
    up.add_argument("--state-dir", type=Path, help="keep the API server's identity here and record the cluster")
    sub.add_parser("cleanup", help="undo the host changes of a cluster whose process died")
    _add_background_commands(sub)
    return parser


def _run_then_stop(cluster: NodeCluster, args: argparse.Namespace, state_dir: Path | None) -> int:
    """`up` (blocks until signalled) or `check` (prints timings) on the started cluster, then stop it."""
    try:
        if args.kserve:
            asyncio.run(KServeStack(cluster.plane, fake_node=False).start())
        if args.command == "up":
            kubeconfig = cluster.kubeconfig
            if args.kubeconfig_out:
                kubeconfig = cluster.plane.write_kubeconfig(
                    args.kubeconfig_out.resolve(), cluster.plane.admin_token, user="admin"
                )
            print(f"# node-mode cluster up: {cluster.plane.server}", file=sys.stderr)
            print(f"export KUBECONFIG={kubeconfig}", flush=True)
            with background.recorded(state_dir.resolve(), cluster) if state_dir else contextlib.nullcontext():
                block_until_signal()
        else:
            for name, seconds in {**cluster.plane.timings, **cluster.timings}.items():
                print(f"{name:>28}: {seconds:6.2f} s")
            print(f"{'peak RSS':>28}: {format_rss(cluster.peak_rss_kib())}")
    except ControlPlaneError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        try:
            cluster.stop()
        except ControlPlaneError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        if args.keep:
            print(f"# kept {cluster.workdir}", file=sys.stderr)
    return 0


def _add_background_commands(sub: Any) -> None:
    """The cluster in the background with a kept identity, for Tilt (cluster/background.py)."""
    commands = {
        "identity": "make (once) and print the kubeconfig of the state directory's identity",
        "start": "start in the background unless running; return once up",
        "stop": "stop the cluster started from the state directory",
        "import": "import an image archive into the running cluster's containerd",
    }
    for name, text in commands.items():
        p = sub.add_parser(name, help=text)
        p.add_argument("--state-dir", type=Path, required=True, help="identity, record and log of the cluster")
        if name in ("start", "stop"):
            p.add_argument("--timeout", type=float, default=1800.0 if name == "start" else 300.0)
        if name == "start":
            p.add_argument("--image", action="append", type=Path, default=[], help="image archive to import")
        if name == "import":
            p.add_argument("archive", type=Path)
            p.add_argument("--content-tag", action="store_true", help="also tag each image tilt-<digest>, print tags")


if __name__ == "__main__":
    sys.exit(main())
