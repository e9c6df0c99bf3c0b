"""Issue 29, finding 7: a leader paused past its lease writes nothing when it resumes.

Two replicas share one Lease. The leader is stopped (SIGSTOP) for 25 s; the standby takes over once
the lease expires (15 s) and converges a change made meanwhile. Before, the old leader sent an apply
30-73 ms after SIGCONT, before its renew loop noticed the lost Lease. Now every write is fenced on a
lease renewed within the renew deadline: the API server's audit log shows no write of the old
leader's after it resumed (the Lease's own aside), and the old leader steps down.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
import yaml

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, LEASES
from plane import NAMESPACE as NAMESPACES, ControlPlane, free_port
from tests.support.events import events_about
from tests.support.instances import null_instance
from tests.support.null_provider import CONFIGMAPS
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]
NS = "resume"
REPLICAS = ("replica-a", "replica-b")
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def audit_args(directory: Path) -> tuple[str, ...]:
    policy = directory / "audit-policy.yaml"
    rules = [{"level": "Metadata", "verbs": sorted(WRITES)}, {"level": "None"}]
    policy.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": rules}))
    return (f"--audit-policy-file={policy}", f"--audit-log-path={directory / 'audit.log'}")


@asynccontextmanager
async def audited_plane(directory: Path) -> AsyncIterator[ControlPlane]:
    """A control plane of its own, with an audit log of every write and one user per replica."""
    plane = ControlPlane(
        users={user: ("system:masters",) for user in REPLICAS}, extra_apiserver_args=audit_args(directory)
    )
    await plane.start_with_crds(groups=["openeverest"])
    try:
        yield plane
    finally:
        plane.stop()


def writes_by(audit_log: Path, user: str, after_line: int) -> list[str]:
    """The writes `user` made after line `after_line` of the audit log, but the Lease's."""
    found = []
    for line in audit_log.read_text().splitlines()[after_line:]:
        event = json.loads(line)
        resource = (event.get("objectRef") or {}).get("resource", "")
        if event["user"]["username"] == user and event["verb"] in WRITES and resource != "leases":
            found.append(f"{event['verb']} {resource}/{(event.get('objectRef') or {}).get('name', '')}")
    return found


def start_replica(plane: ControlPlane, user: str, directory: Path, server: str) -> subprocess.Popen[bytes]:
    kubeconfig = plane.write_kubeconfig(directory / f"{user}.kubeconfig", plane.user_tokens[user], user=user)
    config = yaml.safe_load(kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = server
    kubeconfig.write_text(yaml.safe_dump(config))
    # PROVIDER_SRC: another checkout's runtime (and its tests.support.run_null), for before/after.
    root = Path(os.environ["PROVIDER_SRC"]).parent if os.environ.get("PROVIDER_SRC") else ROOT
    env = {**os.environ, "PYTHONPATH": f"{root}:{root / 'src'}"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.run_null", str(kubeconfig), NS, str(free_port())],
        cwd=root,
        env=env,
        stdout=(directory / f"{user}.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


async def test_a_leader_resumed_after_losing_its_lease_writes_nothing(tmp_path: Path) -> None:
    async with audited_plane(tmp_path) as plane, plane.client() as kube:
        await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        # A network as long as a cloud's between zones (20 ms each way): what a resumed leader sends
        # before its renewal comes back reaches the API server.
        proxy = TcpProxy(plane.apiserver_port, delay=0.02)
        await proxy.start()
        server = f"https://127.0.0.1:{proxy.port}"
        replicas = {user: start_replica(plane, user, tmp_path, server) for user in REPLICAS}
        try:
            await run_the_pause(kube, replicas, tmp_path / "audit.log")
        finally:
            await proxy.close()
            for process in replicas.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGCONT)
                    process.kill()
                process.wait(timeout=10)


async def holder(kube: KubeClient) -> str | None:
    lease = await kube.get(LEASES, NS, "null-provider-leader")
    value = ((lease or {}).get("spec") or {}).get("holderIdentity")
    return None if value is None else str(value)


async def run_the_pause(kube: KubeClient, replicas: dict[str, subprocess.Popen[bytes]], audit_log: Path) -> None:
    # Two processes started afresh on a busy machine: imports, informers, then the election.
    first = await wait_for(lambda: holder(kube), timeout=120, what="a leader")
    leader = next(user for user, process in replicas.items() if first.endswith(f"-{process.pid}"))
    standby = next(user for user in REPLICAS if user != leader)
    await kube.create(INSTANCES, null_instance("steady", NS))
    await wait_for(lambda: phase(kube, "steady", "Ready"), timeout=60, what="steady Ready")
    # Its pass ends with an Event, written after the status: paused before that write is sent, a
    # process sends it as it resumes (a request decided while leading, as a network may delay one),
    # which no lease held by the client can stop. The point here is the work it finds waiting, so it
    # is paused with none of its own requests in flight.
    await wait_for(lambda: recorded_about(kube, "steady"), timeout=60, what="steady's Event")

    replicas[leader].send_signal(signal.SIGSTOP)
    await wait_for(lambda: taken_over(kube, replicas[standby].pid), timeout=60, what="the standby holding the lease")
    # Work the paused leader will find waiting for it: a change and a new Instance.
    await kube.patch(INSTANCES, NS, "steady", {"spec": {"topology": {"parameters": {"size": 2}}}})
    await kube.create(INSTANCES, null_instance("during", NS))
    await wait_for(lambda: config_size(kube, "steady", "2"), timeout=60, what="the change applied by the standby")
    await wait_for(lambda: phase(kube, "during", "Ready"), timeout=60, what="during Ready")
    await anyio.sleep(25 - 15)  # the pause lasts 25 s in all

    resumed_at = len((await anyio.Path(audit_log).read_text()).splitlines())
    replicas[leader].send_signal(signal.SIGCONT)
    # A change as it resumes: its event reaches the old leader before the answer to its first
    # renewal does, and the old leader's reconcile of it would write.
    await kube.patch(INSTANCES, NS, "steady", {"spec": {"topology": {"parameters": {"size": 3}}}})

    # It steps down (exits) once it sees the lease gone: its writes are all in the log after that.
    async def stepped_down() -> bool | NotYet:
        code = replicas[leader].poll()
        return code is not None or NotYet("the old leader still runs")

    await wait_for(stepped_down, timeout=60, interval=0.2, what="the old leader exited")
    await anyio.sleep(1)  # the API server's audit entries of requests it was answering as it went
    after = writes_by(audit_log, leader, resumed_at)
    print(f"the old leader's writes after it resumed: {len(after)} {after}; it exited: {replicas[leader].poll()}")
    assert after == []
    await wait_for(lambda: config_size(kube, "steady", "3"), timeout=60, what="the new leader applying the change")
    assert await holder(kube) is not None and (await holder(kube) or "").endswith(f"-{replicas[standby].pid}")


async def taken_over(kube: KubeClient, pid: int) -> bool:
    return (await holder(kube) or "").endswith(f"-{pid}")


async def phase(kube: KubeClient, name: str, wanted: str) -> bool:
    obj = await kube.get(INSTANCES, NS, name)
    return ((obj or {}).get("status") or {}).get("phase") == wanted


async def recorded_about(kube: KubeClient, name: str) -> bool | NotYet:
    return bool(await events_about(kube, NS, name)) or NotYet(f"no Event about {name} yet")


async def config_size(kube: KubeClient, name: str, size: str) -> bool:
    obj = await kube.get(CONFIGMAPS, NS, f"{name}-cm")
    return ((obj or {}).get("data") or {}).get("size") == size
