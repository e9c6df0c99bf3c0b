"""`make demo`: a local control plane, every CRD, the Provider resource, the provider itself, and
examples/ applied; then the derived objects and each Instance's status are printed.

No KServe controller, GPU or node runs here, so nothing would ever become Ready on its own. With
`--simulate-kserve` (the default) the demo plays the KServe controller's part for one step: it
writes a KServe-shaped Ready status (conditions, addresses) onto each LLMInferenceService and
InferenceService, clearly labelled as simulated, so the provider's status mapping and connection
details show end to end. `--no-simulate-kserve` shows the honest Provisioning state instead.
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "dev")]

from actors.interface import KubeObject, Resource  # noqa: E402
from actors.kube import KubeClient  # noqa: E402
from actors.resources import INSTANCES, PROVIDERS, SECRETS  # noqa: E402
from controlplane import ControlPlane, ensure_namespace  # noqa: E402

NAMESPACE = "demo"
LLMISVC = Resource("serving.kserve.io", "v1alpha2", "llminferenceservices", "LLMInferenceService")
ISVC = Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService")
SHOWN = (
    LLMISVC,
    Resource("serving.kserve.io", "v1alpha2", "llminferenceserviceconfigs", "LLMInferenceServiceConfig"),
    ISVC,
    Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    Resource("", "v1", "services", "Service"),
    Resource("monitoring.coreos.com", "v1", "podmonitors", "PodMonitor"),
    SECRETS,
)
EXAMPLES = ("instance-llm.yaml", "instance-llm-cpu.yaml", "instance-llm-lora.yaml", "instance-predictor.yaml")


def _ready_condition(now: str) -> list[dict[str, str]]:
    return [{"type": t, "status": "True", "lastTransitionTime": now} for t in ("Ready", "PredictorReady",
                                                                             "WorkloadsReady", "RouterReady")]


async def _simulate_kserve(kube: KubeClient) -> None:
    now = "2026-01-01T00:00:00Z"
    items, _ = await kube.list_all(LLMISVC, NAMESPACE)
    for obj in items:
        name = obj["metadata"]["name"]
        status = {
            "observedGeneration": obj["metadata"].get("generation", 1),
            "conditions": [c for c in _ready_condition(now) if c["type"] != "PredictorReady"],
            "addresses": [{"url": f"http://{name}-kserve-workload-svc.{NAMESPACE}.svc.cluster.local"}],
        }
        await kube.patch(LLMISVC, NAMESPACE, name, {"status": status}, subresource="status")
    items, _ = await kube.list_all(ISVC, NAMESPACE)
    for obj in items:
        name = obj["metadata"]["name"]
        status = {
            "observedGeneration": obj["metadata"].get("generation", 1),
            "conditions": [c for c in _ready_condition(now) if c["type"] in ("Ready", "PredictorReady")],
            "address": {"url": f"http://{name}-predictor.{NAMESPACE}.svc.cluster.local"},
            "url": f"http://{name}-{NAMESPACE}.example.com",
        }
        await kube.patch(ISVC, NAMESPACE, name, {"status": status}, subresource="status")


def _print_objects(title: str, objects: list[KubeObject]) -> None:
    print(f"\n=== {title} ===")
    for obj in objects:
        meta = obj["metadata"]
        keys = ("name", "namespace", "labels", "annotations", "ownerReferences")
        shown = {k: v for k, v in meta.items() if k in keys}
        body: dict[str, Any] = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": shown}
        if obj.get("kind") == "Secret":
            body["data (decoded)"] = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        else:
            body["spec"] = obj.get("spec")
        print(yaml.safe_dump(body, sort_keys=False).rstrip())
        print("---")


async def _instances_settled(kube: KubeClient, names: list[str]) -> bool:
    for name in names:
        obj = await kube.get(INSTANCES, NAMESPACE, name)
        if not obj or not (obj.get("status") or {}).get("phase"):
            return False
    return True


async def main(args: argparse.Namespace) -> None:
    plane = ControlPlane()
    print("starting kube-apiserver, etcd and kube-controller-manager, installing CRDs …", flush=True)
    await plane.start_with_crds()
    provider_proc: subprocess.Popen[bytes] | None = None
    try:
        async with await KubeClient.connect(str(plane.kubeconfig)) as kube:
            await ensure_namespace(kube, NAMESPACE)
            generated = yaml.safe_load((ROOT / "charts/provider-kserve/generated/provider-spec.yaml").read_text())
            spec = generated["spec"]
            await kube.create(
                PROVIDERS,
                {"apiVersion": PROVIDERS.api_version, "kind": PROVIDERS.kind,
                 "metadata": {"name": "provider-kserve"}, "spec": spec},
            )
            env = {
                **os.environ,
                "LORA_ADAPTER_CATALOG": (ROOT / "examples/lora-catalog.json").read_text(),
                "PYTHONPATH": str(ROOT / "src"),
            }
            log = Path(tempfile.gettempdir()) / "provider-kserve-demo.log"
            provider_proc = subprocess.Popen(  # noqa: ASYNC220 - started once, outlives no await
                [sys.executable, "-m", "provider.cli", "run", "--kubeconfig", str(plane.kubeconfig),
                 "--no-leader-elect", "--metrics-port", "0", "--health-port", "0", "--validation-port", "0",
                 "--poll-not-ready", "2"],
                env=env,
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
            names = []
            for example in EXAMPLES:
                obj = yaml.safe_load((ROOT / "examples" / example).read_text())
                obj["metadata"]["namespace"] = NAMESPACE
                await kube.create(INSTANCES, obj)
                names.append(obj["metadata"]["name"])
                print(f"applied examples/{example} → Instance {NAMESPACE}/{obj['metadata']['name']}")
            with anyio.fail_after(60):
                while not await _instances_settled(kube, names):
                    await anyio.sleep(0.5)
            if args.simulate_kserve:
                await anyio.sleep(1)
                print("\n(simulated) writing KServe-shaped Ready status onto the KServe objects: no KServe"
                      " controller runs in this local control plane")
                await _simulate_kserve(kube)
                await anyio.sleep(4)
            for resource in SHOWN:
                items, _ = await kube.list_all(resource, NAMESPACE)
                if items:
                    _print_objects(f"{resource.kind} objects", items)
            print("\n=== Instance status ===")
            for name in names:
                obj = await kube.get(INSTANCES, NAMESPACE, name) or {}
                status = obj.get("status") or {}
                print(f"\n{name}: phase={status.get('phase')} message={status.get('message')!r}")
                for cond in status.get("conditions") or []:
                    reason, message = cond.get("reason", ""), cond.get("message", "")
                    print(f"  {cond['type']:<26} {cond['status']:<6} {reason}: {message}")
                if status.get("connectionSecretRef"):
                    print(f"  connection secret: {status['connectionSecretRef']['name']}")
            print(f"\nprovider log: {log}")
    finally:
        if provider_proc is not None:
            provider_proc.send_signal(signal.SIGTERM)
            try:
                provider_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                provider_proc.kill()
        plane.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--simulate-kserve", action=argparse.BooleanOptionalAction, default=True)
    anyio.run(main, parser.parse_args())
