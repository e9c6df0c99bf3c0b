"""kwok: one fake Node whose pods kwok plays through their lifecycle (scheduled → Running with an
IP and Ready → deleted), so Deployments become available without a kubelet or images.

Stages (kwok's own, from its module, passed with --config): `node/fast` initialises the Node and
marks it Ready, `node/heartbeat-with-lease` keeps it Ready through its Lease (the node-lifecycle
controller otherwise taints it), `pod/fast` plays the pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from actors.interface import KubeObject

NODE_NAME: Final = "kwok-node-0"
# Pods bound to this Node are played by kwok; real pods (none here) would stay off through it.
NODE_ANNOTATION: Final = "kwok.x-k8s.io/node"
STAGES: Final = ("node/fast", "node/heartbeat-with-lease", "pod/fast")
# Pod IPs come from here; kept clear of the Service range (10.0.0.0/24).
POD_CIDR: Final = "10.244.0.0/16"
NODE_IP: Final = "10.240.0.10"
LEASE_SECONDS: Final = 40


def stage_files(kwok_dir: Path) -> list[Path]:
    """The Stage YAML files of STAGES under `<kwok_dir>/stage` (copied there by the build)."""
    files = [f for stage in STAGES for f in sorted((kwok_dir / "stage" / stage).glob("*.yaml"))
             if f.name != "kustomization.yaml"]  # fmt: skip
    return files


def args(kwok_dir: Path, kubeconfig: Path) -> list[str]:
    out = [
        str(kwok_dir / "kwok"),
        f"--kubeconfig={kubeconfig}",
        f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake",
        f"--cidr={POD_CIDR}",
        f"--node-ip={NODE_IP}",
        f"--node-lease-duration-seconds={LEASE_SECONDS}",
    ]
    out.extend(f"--config={f}" for f in stage_files(kwok_dir))
    return out


def node(name: str = NODE_NAME, *, gpus: int = 8) -> KubeObject:
    """A big Node with `gpus` nvidia.com/gpu: room for every test's pods at once, and a GPU count
    a test can exceed on purpose to keep a pod Pending. It has local disk, as a real node reports
    it: a pod that requests ephemeral storage (KServe's node-local KV-cache tier) fits."""
    capacity = {
        "cpu": "1k",
        "memory": "4Ti",
        "ephemeral-storage": "100Ti",
        "pods": "10k",
        "nvidia.com/gpu": str(gpus),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def node_ready(obj: KubeObject | None) -> bool:
    """Ready, and without the taints that keep pods off a Node that is not (yet) Ready."""
    if obj is None:
        return False
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = (obj.get("spec") or {}).get("taints") or []
    return ready and not any(str(t.get("key", "")).startswith("node.kubernetes.io/") for t in taints)
