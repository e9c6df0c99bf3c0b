"""Two runtime processes: only the Lease holder reconciles; kill it and the other takes over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, LEASES
from plane import free_port
from tests.support.http import scraped_total
from tests.support.instances import null_instance
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]


def _reconciles(port: int) -> float:
    """Sum of provider_reconciles_total scraped from a process's /metrics."""
    return scraped_total(port, "provider_reconciles_total")


def _start(kubeconfig: Path, namespace: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.run_null", str(kubeconfig), namespace, str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def _phase(kube: KubeClient, namespace: str, name: str) -> str | None:
    obj = await kube.get(INSTANCES, namespace, name)
    phase = (obj or {}).get("status", {}).get("phase")
    return None if phase is None else str(phase)


async def test_only_the_lease_holder_reconciles_and_a_standby_takes_over(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    ports = [free_port(), free_port()]
    procs = [_start(controlplane.kubeconfig, namespace, port) for port in ports]
    try:

        async def leased() -> str | None:
            lease = await kube.get(LEASES, namespace, "null-provider-leader")
            holder = (lease or {}).get("spec", {}).get("holderIdentity")
            return None if holder is None else str(holder)

        holder = await wait_for(leased, timeout=60)
        await kube.create(INSTANCES, null_instance("first", namespace))

        async def first_ready() -> bool:
            return await _phase(kube, namespace, "first") == "Ready"

        await wait_for(first_ready, timeout=60)

        async def metrics_up() -> bool:
            try:
                return all(_reconciles(p) >= 0 for p in ports)
            except OSError:
                return False

        await wait_for(metrics_up, timeout=30)
        counts = [_reconciles(p) for p in ports]
        leader = 0 if counts[0] > 0 else 1
        standby = 1 - leader
        assert counts[leader] > 0 and counts[standby] == 0, counts
        assert holder.endswith(str(procs[leader].pid))

        procs[leader].send_signal(signal.SIGKILL)  # no graceful release: the lease must expire
        procs[leader].wait(timeout=10)
        await kube.create(INSTANCES, null_instance("second", namespace))

        async def second_ready() -> bool:
            return await _phase(kube, namespace, "second") == "Ready"

        await wait_for(second_ready, timeout=90)
        assert _reconciles(ports[standby]) > 0
        successor = await leased()
        assert successor is not None and successor.endswith(str(procs[standby].pid))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
