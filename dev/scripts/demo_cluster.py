"""`make demo-cluster` (root): the provider the way users run it. A node-mode cluster (dev/cluster)
with the image `make image` built, the chart installed as its README says, examples/ applied;
then the pods, the Provider, the Instances and their KServe objects are printed, and the cluster
stays up until Ctrl-C (`--once`: stop right away). Stopping restores the host.

No KServe controller runs here (the cluster plays one that already runs KServe, without it), so
the Instances stay Provisioning with their KServe objects created; `make demo` shows the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "dev")]

from cluster.node import NodeCluster, script_output  # noqa: E402
from plane import BUILD_SCRIPT, ControlPlaneError, block_until_signal  # noqa: E402

CHART = ROOT / "charts" / "provider-kserve"
NAMESPACE = "models"  # where examples/ put their Instances


def _show(cluster: NodeCluster, title: str, *args: str) -> None:
    print(f"\n== {title}: kubectl {' '.join(args)}")
    print(cluster.kubectl(*args, check=False).rstrip() or "(nothing)")


def _install(cluster: NodeCluster) -> None:
    helm = script_output(BUILD_SCRIPT, "helm") / "helm"
    values = CHART / "values-external-kserve.yaml"
    command = [str(helm), "upgrade", "--install", "provider-kserve", str(CHART), "-n", "kserve-system",
               "--create-namespace", "--skip-crds", "-f", str(values), "--wait"]  # fmt: skip
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="print, then stop instead of waiting for Ctrl-C")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("error: `make demo-cluster` runs a real node and needs root; `make demo` needs none", file=sys.stderr)
        return 1
    try:
        image = script_output(ROOT / "dev" / "build-image.sh", "provider")
        cluster = NodeCluster(images=(image,))
        asyncio.run(cluster.start())
    except ControlPlaneError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        _install(cluster)
        _apply_examples(cluster)
        _show(cluster, "the node", "get", "nodes", "-o", "wide")
        _show(cluster, "the provider", "get", "pods,service,lease", "-n", "kserve-system", "-o", "wide")
        _show(cluster, "its Provider resource", "get", "provider")
        _show(cluster, "the Instances", "get", "instances", "-n", NAMESPACE)
        kinds = "llminferenceservices,inferenceservices,services,serviceaccounts"
        _show(cluster, "what they became", "get", kinds, "-n", NAMESPACE)
        _show(cluster, "the provider's log", "logs", "-n", "kserve-system", "deployment/provider-kserve", "--tail=5")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
