"""`make demo-cluster` (root): the provider the way users run it. A node-mode cluster (dev/cluster)
with the image `make image` built and the vLLM CPU image (`dev/build-image.sh vllm-cpu`), KServe's
real controllers (out-of-cluster, in the release namespace, as the chart's bundled ones run), the
chart installed as its README says with `cpuProfile.image` naming that vLLM image, and examples/
applied. Then the tiny LLM of dev/vllm-cpu/tiny-llm.yaml (its files made by a Job, dev/tinyllm.py)
is applied, and once Ready it answers one chat request through the URL of its connection Secret.
The pods, the Provider, the Instances and their KServe objects are printed, and the cluster stays
up until Ctrl-C (`--once`: stop right away). Stopping restores the host.

The examples' models come from Hugging Face or need GPUs, which this machine cannot give: their
pods stay waiting (no registry, no internet); `make demo` shows them on a simulated node.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "dev")]

import tinyllm  # noqa: E402
from cluster.node import NodeCluster, script_output  # noqa: E402
from kservestack import KServeStack  # noqa: E402
from plane import BUILD_SCRIPT, ControlPlaneError, block_until_signal  # noqa: E402

CHART = ROOT / "charts" / "provider-kserve"
RELEASE_NAMESPACE = "kserve-system"
NAMESPACE = "models"  # where examples/ put their Instances
IMAGE_SCRIPT = ROOT / "dev" / "build-image.sh"


def _show(cluster: NodeCluster, title: str, *args: str) -> None:
    print(f"\n== {title}: kubectl {' '.join(args)}")
    print(cluster.kubectl(*args, check=False).rstrip() or "(nothing)")


def _install(cluster: NodeCluster) -> None:
    helm = script_output(BUILD_SCRIPT, "helm") / "helm"
    values = CHART / "values-external-kserve.yaml"
    command = [str(helm), "upgrade", "--install", "provider-kserve", str(CHART), "-n", RELEASE_NAMESPACE,
               "--create-namespace", "--skip-crds", "-f", str(values), "--wait",
               "--set", f"cpuProfile.image={tinyllm.vllm_cpu_image()}"]  # fmt: skip
    print("$ " + " ".join(command[1:]).replace(str(ROOT) + "/", ""), flush=True)
    proc = subprocess.run(command, env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}, check=False)
    if proc.returncode != 0:
        raise ControlPlaneError("helm install failed (see above)")


def _apply_examples(cluster: NodeCluster) -> None:
    cluster.kubectl("create", "namespace", NAMESPACE)
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(path))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        items = json.loads(cluster.kubectl("get", "instances", "-n", NAMESPACE, "-o", "json"))["items"]
        if items and all((i.get("status") or {}).get("phase") for i in items):
            return
        time.sleep(1)


def _tiny_llm_answers(cluster: NodeCluster, directory: Path) -> None:
    """The tiny LLM's files, its Instance until Ready, and one chat request through its URL."""
    print("\n== the tiny LLM: its files made by a Job in the vLLM image (dev/vllm-cpu/tiny_model.py)", flush=True)
    expected = tinyllm.make_model(cluster, directory)
    manifest = tinyllm.instance_manifest()
    namespace, name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
    print(f"$ kubectl apply -f {tinyllm.INSTANCE_FILE.relative_to(ROOT)}", flush=True)
    cluster.kubectl("apply", "-f", str(tinyllm.INSTANCE_FILE))
    started = time.monotonic()
    while True:
        instance = json.loads(cluster.kubectl("get", "instance", "-n", namespace, name, "-o", "json"))
        status = instance.get("status") or {}
        if status.get("phase") == "Ready":
            break
        if status.get("phase") == "Failed" or time.monotonic() - started > 900:
            raise ControlPlaneError(f"Instance {namespace}/{name}: {status.get('phase')} {status.get('message')}")
        time.sleep(1)
    print(f"Ready after {time.monotonic() - started:.0f}s", flush=True)
    api = tinyllm.openai_of(cluster, instance)
    case = expected["base"]["chat"][0]
    model = manifest["spec"]["components"]["llmEngine"]["parameters"]["modelName"]
    body = {"model": model, "messages": case["messages"], "max_tokens": len(case["token_ids"]), "temperature": 0}
    # The Service's name as cluster DNS would resolve it: its ClusterIP, which the host reaches too.
    print(f"\n$ curl http://{api.ip}:{api.port}{tinyllm.CHAT} -H 'Host: {api.host}' "
          f"-H 'Content-Type: application/json' -d '{json.dumps(body)}'", flush=True)  # fmt: skip
    answer = api.post(tinyllm.CHAT, body)
    print(json.dumps(answer["choices"][0]["message"]["content"]), json.dumps(answer["usage"]))
    same = answer["choices"][0]["message"]["content"].split() == case["text"].split()
    print(f"transformers, from the same weights: {json.dumps(case['text'])} ({'the same' if same else 'DIFFERENT'})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="print, then stop instead of waiting for Ctrl-C")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("error: `make demo-cluster` runs a real node and needs root; `make demo` needs none", file=sys.stderr)
        return 1
    try:
        images = (script_output(IMAGE_SCRIPT, "provider"), script_output(IMAGE_SCRIPT, "vllm-cpu"))
        # metrics-server too: `kubectl top` answers, and a predictor's range scales with its load.
        cluster = NodeCluster(images=images, metrics_server=True)
        asyncio.run(cluster.start())
    except ControlPlaneError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    directory = Path(tempfile.mkdtemp(prefix="provider-kserve-node-llm-"))
    try:
        asyncio.run(KServeStack(cluster.plane, fake_node=False, namespace=RELEASE_NAMESPACE, llm_presets=False).start())
        _install(cluster)
        _apply_examples(cluster)
        _tiny_llm_answers(cluster, directory)
        _show(cluster, "the node", "get", "nodes", "-o", "wide")
        _show(cluster, "the provider", "get", "pods,service,lease", "-n", RELEASE_NAMESPACE, "-o", "wide")
        _show(cluster, "its Provider resource", "get", "provider")
        _show(cluster, "the Instances", "get", "instances", "-A")
        kinds = "llminferenceservices,inferenceservices,services,serviceaccounts,pods"
        for namespace in (NAMESPACE, tinyllm.instance_manifest()["metadata"]["namespace"]):
            _show(cluster, "what they became", "get", kinds, "-n", namespace)
        _show(cluster, "the provider's log", "logs", "-n", RELEASE_NAMESPACE, "deployment/provider-kserve", "--tail=5")
        if not args.once:
            print(f"\nexport KUBECONFIG={cluster.kubeconfig}   # the cluster runs until Ctrl-C", flush=True)
            block_until_signal()
    except ControlPlaneError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping the cluster and restoring the host ...", file=sys.stderr)
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
