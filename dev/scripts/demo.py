"""`make demo`: a local cluster running the real KServe controllers (dev/kservestack: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kwok with one fake GPU Node, KServe's
manager and llmisvc with their webhooks), every CRD, the Provider resource, the provider itself,
and examples/ applied.

Nothing here writes a status: each Instance goes Provisioning → Ready because KServe's controllers
create the Deployments and Services, kwok runs the pods, and KServe reports Ready. The demo prints
every change of each Instance (phase, message, KServe's conditions, the connection details
decoded), then the objects the provider derived and those KServe created, each with its kind.
"""

from __future__ import annotations

import argparse
import base64
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "dev")]

from actors.client import ApiError, KubeClient  # noqa: E402
from actors.client.known_resources import INSTANCES, PROVIDERS, SECRETS  # noqa: E402
from actors.interface import KubeObject, Resource  # noqa: E402
from jaeger import Jaeger, reconcile_tree  # noqa: E402
from kservestack import start_kserve_cluster  # noqa: E402
from kservestack.provider import provider_process  # noqa: E402
from plane import (  # noqa: E402
    ControlPlane,
    ControlPlaneError,
    create_or_replace,
    ensure_namespace,
    format_rss,
    free_port,
    retry_transient,
    vm_hwm_kib,
)

NAMESPACE = "demo"
DERIVED = (
    Resource("serving.kserve.io", "v1alpha2", "llminferenceservices", "LLMInferenceService"),
    Resource("serving.kserve.io", "v1alpha2", "llminferenceserviceconfigs", "LLMInferenceServiceConfig"),
    Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService"),
    Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    Resource("", "v1", "services", "Service"),
    Resource("monitoring.coreos.com", "v1", "podmonitors", "PodMonitor"),
    SECRETS,
)
CREATED_BY_KSERVE = (
    Resource("apps", "v1", "deployments", "Deployment"),
    Resource("", "v1", "services", "Service"),
    Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    Resource("", "v1", "pods", "Pod"),
)
EXAMPLES = ("instance-llm.yaml", "instance-llm-cpu.yaml", "instance-llm-lora.yaml", "instance-predictor.yaml")
PROVIDER_LOG = Path(tempfile.gettempdir()) / "provider-kserve-demo.log"
JAEGER_QUERY_PORT = 16686  # Jaeger's usual port, when it is free


def tracing_env(jaeger: Jaeger) -> dict[str, str]:
    # The SDK's batch exporter sends every 0.5 s rather than 5 s: the summary at the end reads them.
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_http, "OTEL_BSP_SCHEDULE_DELAY": "500"}


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@dataclass(frozen=True)
class View:
    """What the demo shows of one Instance; printed again whenever it changes."""

    phase: str
    message: str
    kserve: tuple[str, ...]
    waiting: tuple[str, ...]  # the provider's own conditions that are not True
    connection: tuple[tuple[str, str], ...]


def _kind_of(resource: Resource, obj: KubeObject) -> KubeObject:
    # List items come without apiVersion and kind: the list's resource says what they are.
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}


def _decoded(secret: KubeObject | None) -> dict[str, str]:
    data = (secret or {}).get("data") or {}
    return {k: base64.b64decode(v).decode(errors="replace") for k, v in data.items()}


async def _view(kube: KubeClient, name: str) -> View:
    instance = await retry_transient(kube.get)(INSTANCES, NAMESPACE, name) or {}
    status = instance.get("status") or {}
    conditions = status.get("conditions") or []
    kserve = tuple(
        f"{c['type'].removeprefix('KServe')}={c['status']}" + (f" ({c['reason']})" if c["status"] != "True" else "")
        for c in conditions
        if c["type"].startswith("KServe")
    )
    waiting = tuple(
        f"{c['type']}={c['status']} ({c['reason']})"
        for c in conditions
        if not c["type"].startswith("KServe") and c["status"] != "True"
    )
    connection: tuple[tuple[str, str], ...] = ()
    if ref := status.get("connectionSecretRef"):
        secret = await retry_transient(kube.get)(SECRETS, NAMESPACE, ref["name"])
        connection = tuple(sorted(_decoded(secret).items()))
    return View(str(status.get("phase") or "-"), str(status.get("message") or ""), kserve, waiting, connection)


def _print_view(elapsed: float, name: str, view: View) -> None:
    message = f"  {view.message}" if view.message else ""
    print(f"[{elapsed:6.1f} s] {name:<14} {view.phase:<12}{message}")
    if view.kserve:
        print(f"{'':>10} KServe: {', '.join(view.kserve)}")
    if view.waiting:
        print(f"{'':>10} provider: {', '.join(view.waiting)}")
    if view.connection:
        print(f"{'':>10} connection: {', '.join(f'{k}={v}' for k, v in view.connection)}")


async def follow(kube: KubeClient, names: list[str], timeout: float) -> None:
    """Print each Instance's view whenever it changes, until all are Ready."""
    started = time.monotonic()
    shown: dict[str, View] = {}
    while True:
        for name in names:
            view = await _view(kube, name)
            if shown.get(name) != view:
                shown[name] = view
                _print_view(time.monotonic() - started, name, view)
        if all(v.phase == "Ready" for v in shown.values()) and len(shown) == len(names):
            return
        if time.monotonic() - started > timeout:
            waiting = {n: f"{v.phase}: {v.message}" for n, v in shown.items() if v.phase != "Ready"}
            raise TimeoutError(f"not Ready after {timeout:.0f} s: {waiting}")
        await anyio.sleep(0.5)


def _print_objects(title: str, objects: list[KubeObject]) -> None:
    print(f"\n=== {title} ===")
    for obj in objects:
        meta = obj["metadata"]
        keys = ("name", "namespace", "labels", "annotations", "ownerReferences")
        body: dict[str, Any] = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "metadata": {k: v for k, v in meta.items() if k in keys},
        }
        if obj["kind"] == "Secret":
            body["data (decoded)"] = _decoded(obj)
        else:
            body["spec"] = obj.get("spec")
        print(yaml.safe_dump(body, sort_keys=False).rstrip())
        print("---")


def _summary_line(obj: KubeObject) -> str:
    status = obj.get("status") or {}
    match obj["kind"]:
        case "Deployment":
            detail = f"{status.get('availableReplicas', 0)}/{(obj.get('spec') or {}).get('replicas', 0)} available"
        case "Pod":
            node = (obj.get("spec") or {}).get("nodeName", "-")
            detail = f"{status.get('phase', '')} on {node}, IP {status.get('podIP', '-')}"
        case "Service":
            spec = obj.get("spec") or {}
            detail = (
                f"{spec.get('type')} {spec.get('clusterIP')} ports {[p.get('port') for p in spec.get('ports') or []]}"
            )
        case "HorizontalPodAutoscaler":
            spec = obj.get("spec") or {}
            detail = f"min {spec.get('minReplicas')} max {spec.get('maxReplicas')}"
        case _:
            detail = ""
    return f"  {obj['kind']}/{obj['metadata']['name']}: {detail}"


def _from_provider(obj: KubeObject) -> bool:
    # Not by label: KServe copies an InferenceService's labels (ours) onto what it creates.
    owners = obj["metadata"].get("ownerReferences") or []
    return any(o.get("controller") and o.get("kind") == INSTANCES.kind for o in owners)


async def print_objects(kube: KubeClient) -> None:
    for resource in DERIVED:
        items, _ = await retry_transient(kube.list_all)(resource, NAMESPACE)
        if ours := [_kind_of(resource, o) for o in items if _from_provider(o)]:
            _print_objects(f"{resource.kind} objects (from the provider)", ours)
    print("\n=== created by KServe (and kube-controller-manager, kwok) ===")
    for resource in CREATED_BY_KSERVE:
        items, _ = await retry_transient(kube.list_all)(resource, NAMESPACE)
        for obj in items:
            if not _from_provider(obj):
                print(_summary_line(_kind_of(resource, obj)))


async def print_status(kube: KubeClient, names: list[str]) -> None:
    print("\n=== Instance status ===")
    for name in names:
        obj = await retry_transient(kube.get)(INSTANCES, NAMESPACE, name) or {}
        status = obj.get("status") or {}
        print(f"\n{name}: phase={status.get('phase')} message={status.get('message')!r}")
        for cond in status.get("conditions") or []:
            reason, message = cond.get("reason", ""), cond.get("message", "")
            print(f"  {cond['type']:<26} {cond['status']:<6} {reason}" + (f": {message}" if message else ""))
        if ref := status.get("connectionSecretRef"):
            print(f"  connection secret {ref['name']}:")
            secret = await retry_transient(kube.get)(SECRETS, NAMESPACE, ref["name"])
            for key, value in _decoded(secret).items():
                print(f"    {key}: {value}")


async def run(plane: ControlPlane, kube: KubeClient, timeout: float) -> None:
    await ensure_namespace(kube, NAMESPACE)
    generated = yaml.safe_load((ROOT / "charts/provider-kserve/generated/provider-spec.yaml").read_text())
    provider = {"apiVersion": PROVIDERS.api_version, "kind": PROVIDERS.kind, "metadata": {"name": "provider-kserve"}}
    await create_or_replace(kube, PROVIDERS, {**provider, "spec": generated["spec"]})
    names = []
    for example in EXAMPLES:
        obj = yaml.safe_load((ROOT / "examples" / example).read_text())
        obj["metadata"]["namespace"] = NAMESPACE
        await create_or_replace(kube, INSTANCES, obj)
        names.append(obj["metadata"]["name"])
        print(f"applied examples/{example} → Instance {NAMESPACE}/{obj['metadata']['name']}")
    print("\nfollowing the Instances (each line is a change):")
    await follow(kube, names, timeout)
    await print_objects(kube)
    await print_status(kube, names)


async def main(args: argparse.Namespace) -> None:
    print("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and KServe's controllers,")
    print("installing CRDs and KServe's configuration (first run builds the binaries: ~30 min cold) …", flush=True)
    started = time.monotonic()
    plane, stack = await start_kserve_cluster()
    print(f"cluster up in {time.monotonic() - started:.0f} s (KServe stack {stack.timings['total_start']:.0f} s)")
    # The provider's spans go to a Jaeger beside it; the link works while the demo runs.
    jaeger = Jaeger(query_port=JAEGER_QUERY_PORT if port_free(JAEGER_QUERY_PORT) else free_port())
    try:
        with (
            jaeger,
            provider_process(plane, PROVIDER_LOG, "--poll-not-ready", "2", env=tracing_env(jaeger)) as provider,
        ):
            print(f"the provider's traces (Jaeger's query API, while the demo runs): {jaeger.search_link()}")
            async with plane.client() as kube:
                await run(plane, kube, args.timeout)
            provider_kib = vm_hwm_kib(provider.pid)
            await anyio.sleep(1.5)  # the provider's exporter sends its spans every 0.5 s (tracing_env)
            first = yaml.safe_load((ROOT / "examples" / EXAMPLES[0]).read_text())["metadata"]["name"]
            spans = await anyio.to_thread.run_sync(jaeger.traces)
            print(f"\n=== the reconcile of {NAMESPACE}/{first} that did the most, as Jaeger has it ===")
            print("\n".join(reconcile_tree(spans, f"{NAMESPACE}/{first}")) or "(no trace yet)")
            jaeger_kib = jaeger.process.peak_kib() if jaeger.process else 0
        print(f"\npeak RSS (VmHWM) of the cluster: {format_rss(plane.peak_rss_kib())}")
        print(f"peak RSS of the provider: {provider_kib / 1024:.0f} MiB; its log: {PROVIDER_LOG}")
        print(f"peak RSS of Jaeger: {jaeger_kib / 1024:.0f} MiB")
        print(f"demo done in {time.monotonic() - started:.0f} s")
    finally:
        if args.keep:
            plane.keep_dir = True
            print(f"logs kept in {plane.workdir}")
        plane.stop()


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for every Instance to be Ready")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's logs and data after the demo")
    args = parser.parse_args()
    try:
        anyio.run(main, args)
    except (ControlPlaneError, ApiError, TimeoutError, OSError) as err:
        print(
            f"\nerror: {err}\n(provider log: {PROVIDER_LOG}; rerun with --keep to keep the cluster's logs)",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(cli())
