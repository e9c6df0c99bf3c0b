"""The node-mode cluster's teardown restores the host: a cluster up and down, running a pod with
the volumes and networking a real workload has, and then the host's sysctls, iptables, links,
addresses, routes, mounts, cgroups, network namespaces, processes and files are what they were
before; while it runs, the comparison shows what the node changed (so that it can fail). Clusters
up and down in a row are the session's own: every e2e module starts one, and the session fixture
(conftest.host_left_clean) compares the host before the first and after the last."""

from __future__ import annotations

import functools
import json

import yaml

from cluster import host, snapshot
from cluster.node import NodeCluster
from tests.e2e.support import build_image
from tests.support.waiting import wait_for_sync

WORKLOAD = [
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sleeper", "namespace": "default", "labels": {"app": "sleeper"}},
        "spec": {
            "containers": [
                {
                    "name": "sleep",
                    "image": "provider-kserve:0.1.0",
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "3600"],
                    "ports": [{"containerPort": 8080}],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                }
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
            "terminationGracePeriodSeconds": 30,
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "sleeper", "namespace": "default"},
        "spec": {"type": "NodePort", "selector": {"app": "sleeper"}, "ports": [{"port": 80, "targetPort": 8080}]},
    },
]


def _running(cluster: NodeCluster) -> bool:
    out = cluster.kubectl("get", "pod", "sleeper", "-o", "json", check=False)
    return bool(out) and json.loads(out)["status"].get("phase") == "Running"


async def test_a_cluster_with_a_workload_leaves_the_host_as_it_was() -> None:
    image = build_image()
    with host.host_lock():  # no other node-mode cluster changes the host in between
        before = snapshot.take()
        cluster = NodeCluster(images=(image,))
        await cluster.start(crd_groups=("openeverest",))
        try:
            cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(WORKLOAD))
            wait_for_sync(
                functools.partial(_running, cluster), what="the workload pod Running", timeout=120, interval=0.5
            )
            during = snapshot.diff(before, snapshot.take())
            # The comparison can see what a node changes: here it must show.
            assert any(line.startswith("links: +") for line in during)
            assert any(line.startswith("iptables: +") for line in during)
            assert any(line.startswith("mounts: +") for line in during)
        finally:
            cluster.stop()
        changes = snapshot.diff(before, snapshot.take())
    assert not changes, "left behind:\n" + "\n".join(changes)
