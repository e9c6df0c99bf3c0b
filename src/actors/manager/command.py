"""The runtime's command line: a provider's `run` verb in a few lines.

`add_manager_arguments` builds the flags from `ManagerOptions` (their defaults are the options' own,
so the two cannot drift apart); `run_manager` is the process around a `Manager`: logs, traces, the
memory and garbage-collector settings of a long-running server, signals (SIGTERM/SIGINT stop,
SIGHUP resyncs), and a failed start-up or a lost lease as one line and exit code 1, never a
traceback. The
counterparts: controller-runtime's `manager.Options` and `ctrl.SetupSignalHandler()`, `kopf.run()`.
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import structlog

from actors.cache.informer import StartupFailed
from actors.cache.limits import InstanceLimits
from actors.client import KubeClient
from actors.interface import Provider
from actors.manager.leader import LostLeadership
from actors.manager.manager import Manager
from actors.manager.options import ManagerOptions
from actors.manager.shared import SharedActors
from actors.observe.logs import configure_logging
from actors.observe.metrics import RuntimeMetrics
from actors.observe.tracing import configure_tracing
from actors.process.garbage_collector import collect_young_less_often, freeze_startup_objects, observe_collections
from actors.process.memory import keep_large_buffers_unmapped
from actors.serve.endpoints import Endpoints

log = structlog.get_logger(__name__)

# Builds the provider (and the shared actors it asks for) once the client is connected.
ProviderFactory = Callable[[KubeClient], tuple[Provider[Any], SharedActors]]


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """How a command reaches the API server: a kubeconfig (and context), else the in-cluster config."""
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="default: in-cluster config")
    parser.add_argument("--context", default=None)


def add_manager_arguments(parser: argparse.ArgumentParser, *, name: str) -> None:
    """Every flag of `run_manager`: the connection, ManagerOptions, the servers, logs. `name` is the
    provider's (the default Lease is `<name>-leader`)."""
    in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    add_connection_arguments(parser)
    defaults = ManagerOptions()
    limits = defaults.limits
    add = parser.add_argument
    add("--namespace", dest="namespaces", action="append", default=[], help="watch only this namespace (repeatable)")
    _add_server_arguments(parser, defaults.endpoints)
    add("--max-instance-spec-bytes", type=int, default=limits.max_spec_bytes, help="largest Instance spec (JSON)")
    add("--max-instance-spec-depth", type=int, default=limits.max_spec_depth, help="deepest nesting in a spec")
    add("--max-concurrent", type=int, default=defaults.max_concurrent, help="global cap on concurrent reconciles")
    add("--qps", type=float, default=defaults.qps, help="retry token bucket rate")
    add("--burst", type=int, default=defaults.burst, help="retry token bucket burst")
    add("--backoff-base", type=float, default=defaults.backoff_base, help="first retry delay (s)")
    add("--backoff-cap", type=float, default=defaults.backoff_cap, help="longest retry delay (s)")
    add("--idle-timeout", type=float, default=defaults.idle_timeout, help="seconds before an idle actor exits")
    add("--resync-period", type=float, default=defaults.resync_period, help="seconds between full resyncs")
    add("--poll-not-ready", type=float, default=0, help="status poll while not Ready (s); 0: watch events only")
    add(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=in_cluster,
        help="elect a leader through a Lease (default: on in-cluster)",
    )
    add("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "default"))
    add("--lease-name", default=f"{name}-leader")
    add("--log-level", default=os.environ.get("LOG_LEVEL", "info"))
    add("--log-format", choices=("json", "console"), default="json")


def _add_server_arguments(parser: argparse.ArgumentParser, served: Endpoints) -> None:
    """The probes, /metrics and /validate: ports, addresses, authorization, TLS."""
    add = parser.add_argument
    add("--metrics-port", type=int, default=served.metrics_port, help="0 turns /metrics off")
    add("--health-port", type=int, default=served.health_port, help="0 turns the probes off")
    add("--validation-port", type=int, default=served.validation_port, help="0 turns /validate off")
    add("--bind-host", default=served.bind_host, help="address every server listens on")
    add("--metrics-bind-host", default=served.metrics_bind_host, help="address /metrics listens on (e.g. 127.0.0.1)")
    add(
        "--metrics-auth",
        choices=("none", "rbac"),
        default="rbac" if served.metrics_auth else "none",
        help="rbac: /metrics needs a bearer token allowed to get it (TokenReview + SubjectAccessReview), over TLS",
    )
    add(
        "--validation-auth",
        choices=("none", "rbac"),
        default="rbac" if served.validation_auth else "none",
        help="rbac: /validate and /schema need a bearer token allowed to use them, over TLS",
    )
    add("--tls-cert-dir", default=served.tls_cert_dir, help="tls.crt and tls.key of the protected servers")


def options_from(args: argparse.Namespace) -> ManagerOptions:
    """The ManagerOptions the flags of `add_manager_arguments` say."""
    return ManagerOptions(
        namespaces=args.namespaces,
        max_concurrent=args.max_concurrent,
        qps=args.qps,
        burst=args.burst,
        backoff_base=args.backoff_base,
        backoff_cap=args.backoff_cap,
        idle_timeout=args.idle_timeout,
        resync_period=args.resync_period,
        poll_not_ready=args.poll_not_ready or None,
        leader_elect=args.leader_elect,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        limits=InstanceLimits(args.max_instance_spec_bytes, args.max_instance_spec_depth),
        endpoints=Endpoints(
            bind_host=args.bind_host,
            metrics_port=args.metrics_port or None,
            health_port=args.health_port or None,
            validation_port=args.validation_port or None,
            metrics_bind_host=args.metrics_bind_host,
            metrics_auth=args.metrics_auth == "rbac",
            validation_auth=args.validation_auth == "rbac",
            tls_cert_dir=args.tls_cert_dir,
        ),
    )


def manager_main(argv: Sequence[str] | None, *, name: str, build: ProviderFactory) -> int:
    """Parse `argv` with the manager's flags and run it: a provider with no other command."""
    parser = argparse.ArgumentParser(prog=name)
    add_manager_arguments(parser, name=name)
    return run_manager(parser.parse_args(argv), name=name, build=build)


def run_manager(args: argparse.Namespace, *, name: str, build: ProviderFactory) -> int:
    """Run the provider `build` makes until a signal stops it; the process's exit code."""
    configure_logging(args.log_level, json=args.log_format == "json")
    configure_tracing(name)
    keep_large_buffers_unmapped()
    try:
        anyio.run(_serve, args, name, build)
    except KeyboardInterrupt:
        return 0
    except StartupFailed as err:
        log.error("start-up failed", reason=str(err))
        return 1
    except BaseExceptionGroup as group:
        if failed := _leaves(group, StartupFailed):
            log.error("start-up failed", reason=str(failed[0]))
            return 1
        if lost := _leaves(group, LostLeadership):
            # Another replica may lead now: exit, and come back (the Deployment restarts us) as a standby.
            log.error("stepping down", reason=str(lost[0]))
            return 1
        raise
    return 0


def _leaves(group: BaseExceptionGroup[BaseException], kind: type[Exception]) -> list[BaseException]:
    """The exceptions of `kind` in a (nested) exception group, as anyio's task groups raise them."""
    matched = group.subgroup(kind)
    out: list[BaseException] = []
    stack: list[BaseException] = [matched] if matched is not None else []
    while stack:
        item = stack.pop()
        if isinstance(item, BaseExceptionGroup):
            stack.extend(item.exceptions)
        else:
            out.append(item)
    return out


async def _serve(args: argparse.Namespace, name: str, build: ProviderFactory) -> None:
    metrics = RuntimeMetrics()
    observers = [metrics.observe_request]
    try:
        client = await KubeClient.connect(args.kubeconfig, args.context, user_agent=name, observers=observers)
    except Exception as err:  # a missing or broken kubeconfig, a context it lacks, no in-cluster token
        raise StartupFailed(f"cannot load the configuration of the API server: {err}") from err
    provider, shared = build(client)
    options = options_from(args)
    manager = Manager(client, provider, options=options, shared=shared, metrics=metrics)
    # What start-up made lives as long as the process: out of the collector's way from now on.
    frozen = freeze_startup_objects()
    collect_young_less_often()
    observe_collections(metrics.gc_pause_seconds)
    namespaces = options.namespaces or "all"
    log.info("starting", namespaces=namespaces, leader_elect=options.leader_elect, frozen_objects=frozen)
    async with client, anyio.create_task_group() as tg:

        async def handle_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                async for signum in signals:
                    if signum == signal.SIGHUP:
                        # `kill -HUP`: reconcile every Instance now instead of at the next resync.
                        log.info("resync requested", signal="SIGHUP")
                        manager.resync()
                        continue
                    log.info("stopping", signal=signal.Signals(signum).name)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(handle_signals)
        await manager.run()
        tg.cancel_scope.cancel()
