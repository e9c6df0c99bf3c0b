"""`provider-kserve run`: the controller process (in-cluster, under Tilt, or against a kubeconfig)."""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any

import anyio
import structlog

from actors import (
    Endpoints,
    InstanceLimits,
    KubeClient,
    Manager,
    ManagerOptions,
    RuntimeMetrics,
    StartupFailed,
    collect_young_less_often,
    configure_logging,
    configure_tracing,
    freeze_startup_objects,
    keep_large_buffers_unmapped,
    observe_collections,
)
from provider.commands import add_connection_arguments
from provider.model.names import PROVIDER_NAME as PROVIDER_NAME  # the one definition, re-exported


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser("run", help="run the provider controller")
    in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    add_connection_arguments(parser)
    # The runtime's own defaults, so the flags and ManagerOptions cannot drift apart.
    defaults = ManagerOptions()
    limits = defaults.limits
    parser.add_argument(
        "--namespace",
        dest="namespaces",
        action="append",
        default=[],
        help="watch only this namespace (repeatable); default: all namespaces",
    )
    _add_server_arguments(parser, defaults)
    parser.add_argument(
        "--max-instance-spec-bytes", type=int, default=limits.max_spec_bytes, help="largest Instance spec (JSON bytes)"
    )
    parser.add_argument(
        "--max-instance-spec-depth", type=int, default=limits.max_spec_depth, help="deepest nesting in an Instance spec"
    )
    parser.add_argument(
        "--max-concurrent", type=int, default=defaults.max_concurrent, help="global cap on concurrent reconciles"
    )
    parser.add_argument("--qps", type=float, default=defaults.qps, help="retry token bucket rate")
    parser.add_argument("--burst", type=int, default=defaults.burst, help="retry token bucket burst")
    parser.add_argument("--backoff-base", type=float, default=defaults.backoff_base, help="first retry delay (s)")
    parser.add_argument("--backoff-cap", type=float, default=defaults.backoff_cap, help="longest retry delay (s)")
    parser.add_argument(
        "--idle-timeout", type=float, default=defaults.idle_timeout, help="seconds before an idle actor exits"
    )
    parser.add_argument(
        "--resync-period", type=float, default=defaults.resync_period, help="seconds between full resyncs"
    )
    parser.add_argument(
        "--poll-not-ready", type=float, default=0, help="status poll while not Ready (s); 0: none, watch events only"
    )
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=in_cluster,
        help="elect a leader through a Lease (default: on in-cluster)",
    )
    parser.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "default"))
    parser.add_argument("--lease-name", default=f"{PROVIDER_NAME}-leader")
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "info"))
    parser.add_argument("--log-format", choices=("json", "console"), default="json")
    parser.set_defaults(func=main)


def _add_server_arguments(parser: argparse.ArgumentParser, defaults: ManagerOptions) -> None:
    """The probes, /metrics and /validate: ports, addresses, authorization, TLS."""
    served = defaults.endpoints
    parser.add_argument("--metrics-port", type=int, default=served.metrics_port, help="0 turns /metrics off")
    parser.add_argument("--health-port", type=int, default=served.health_port, help="0 turns the probes off")
    parser.add_argument("--validation-port", type=int, default=served.validation_port, help="0 turns /validate off")
    parser.add_argument("--bind-host", default=served.bind_host, help="address every server listens on")
    parser.add_argument(
        "--metrics-bind-host", default=served.metrics_bind_host, help="address /metrics listens on (e.g. 127.0.0.1)"
    )
    parser.add_argument(
        "--metrics-auth",
        choices=("none", "rbac"),
        default="rbac" if served.metrics_auth else "none",
        help="rbac: /metrics needs a bearer token allowed to get it (TokenReview + SubjectAccessReview), over TLS",
    )
    parser.add_argument(
        "--validation-auth",
        choices=("none", "rbac"),
        default="rbac" if served.validation_auth else "none",
        help="rbac: /validate and /schema need a bearer token allowed to use them, over TLS",
    )
    parser.add_argument(
        "--tls-cert-dir", default=served.tls_cert_dir, help="tls.crt and tls.key of the protected servers"
    )


def main(args: argparse.Namespace) -> int:
    configure_logging(args.log_level, json=args.log_format == "json")
    configure_tracing(PROVIDER_NAME)
    keep_large_buffers_unmapped()
    try:
        anyio.run(_run, args)
    except KeyboardInterrupt:
        return 0
    except BaseExceptionGroup as group:
        failed = _leaves(group, StartupFailed)
        if not failed:
            raise
        structlog.get_logger(__name__).error("start-up failed", reason=str(failed[0]))
        return 1
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


async def _run(args: argparse.Namespace) -> None:
    from provider.kserve import build_provider

    log = structlog.get_logger(__name__)
    metrics = RuntimeMetrics()
    client = await KubeClient.connect(
        args.kubeconfig, args.context, user_agent=PROVIDER_NAME, observers=[metrics.observe_request]
    )
    provider, shared = build_provider(os.environ, client=client)
    options = ManagerOptions(
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
    manager = Manager(client, provider, options=options, shared=shared, metrics=metrics)
    frozen = freeze_startup_objects()
    collect_young_less_often()
    observe_collections(metrics.gc_pause_seconds)  # for the process's lifetime
    log.info("starting", namespaces=args.namespaces or "all", leader_elect=args.leader_elect, frozen_objects=frozen)
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
