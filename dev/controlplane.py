"""The local control plane (dev/plane) from the command line, with KServe's stack on request.

    .venv/bin/python dev/controlplane.py build  # locate or build the binaries, print their dir
    .venv/bin/python dev/controlplane.py up     # start, install CRDs, print `export KUBECONFIG=`
                                                # (--kubeconfig-out PATH), block until signalled
    .venv/bin/python dev/controlplane.py check  # start, install CRDs, print timings + peak RSS
    ... up --kserve / check --kserve            # plus KServe's controllers, a scheduler and a kwok
                                                # Node (dev/kservestack)

A command, imported by no module: what it combines lives in dev/plane and dev/kservestack.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from actors.client import ApiError, TransportError
from kservestack import KSERVE_CONTROLLERS, KServeStack
from plane import (
    DEFAULT_CONTROLLERS,
    ControlPlane,
    ControlPlaneError,
    block_until_signal,
    find_binaries,
    format_rss,
)


async def _start(plane: ControlPlane, args: argparse.Namespace) -> list[str]:
    names = await plane.start_with_crds(exclude=args.exclude)
    if args.kserve:
        stack = await KServeStack(plane).start()
        plane.timings.update({f"kserve {k}": v for k, v in stack.timings.items()})
    return names


async def _up(plane: ControlPlane, args: argparse.Namespace) -> None:
    names = await _start(plane, args)
    if args.presets_namespace:
        await plane.install_llm_presets(args.presets_namespace)
    kubeconfig = plane.kubeconfig
    if args.kubeconfig_out:
        kubeconfig = plane.write_kubeconfig(args.kubeconfig_out, plane.admin_token, user="admin")
    print(f"# control plane up: {plane.server}, {len(names)} CRDs established", file=sys.stderr)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="controlplane.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="locate or build the binaries and print their directory")
    up = sub.add_parser("up", help="start, install CRDs, print `export KUBECONFIG=...`, block until signalled")
    up.add_argument("--kubeconfig-out", help="also write the admin kubeconfig here (once CRDs are ready)")
    up.add_argument("--presets-namespace", help="install KServe's LLM presets into this namespace")
    check = sub.add_parser("check", help="start, install CRDs, print timings and peak RSS, stop")
    for p in (up, check):
        p.add_argument("--exclude", action="append", default=[], help="CRD group or CRD name to skip")
        p.add_argument("--no-controller-manager", action="store_true", help="run without GC/namespace controllers")
        p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data) after stopping")
        p.add_argument("--kserve", action="store_true", help="also run KServe's controllers, a scheduler and kwok")
    args = parser.parse_args(argv)
    if getattr(args, "kubeconfig_out", None):
        args.kubeconfig_out = Path(args.kubeconfig_out).resolve()

    if args.command == "build":
        print(find_binaries())
        return 0

    controllers = KSERVE_CONTROLLERS if args.kserve else DEFAULT_CONTROLLERS
    plane = ControlPlane(controller_manager=not args.no_controller_manager, controllers=controllers, keep_dir=args.keep)
    try:
        if args.command == "up":
            anyio.run(_up, plane, args)
            block_until_signal()
        else:
            anyio.run(_start, plane, args)
            for name, seconds in plane.timings.items():
                print(f"{name:>32}: {seconds:6.2f} s")
            print(f"{'peak RSS':>32}: {format_rss(plane.peak_rss_kib())}")
    except (ControlPlaneError, ApiError, TransportError) as err:
        # An API error that outlived the retries (e.g. a CRD the server kept refusing): one line.
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        plane.stop()
        if args.keep:
            print(f"# kept {plane.workdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
