"""Issue 29, finding 3: idle and slow connections do not take the probes down.

Before, 20 000 idle TCP connections to the health port filled the process's file descriptors:
accept() failed with "Too many open files" and /healthz stopped answering, so the kubelet would
have restarted a healthy provider; keep-alive, raw idle and slowloris connections all stayed open.
Now each listener keeps a bounded number of connections (evicting the one idle longest for a new
one) and cuts idle ones after 15 s and a request head not complete 10 s after its first byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from actors.client import KubeClient
from plane import free_port
from tests.support.provider_process import ProviderProcess, write_kubeconfig
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

# The header timeout (10 s) and the guard's sweep (1 s), plus what a starved 2-core machine adds to
# both ends (the provider's loop, and this test's, under twenty thousand connections): well short of
# the minute `slowloris` keeps trying for, which is what a connection never cut would take.
SLOWLORIS_CUT_WITHIN = 25.0
# A probe's answer under the attack: before, none came at all (accept() failed); a starved machine
# may delay one by seconds, well within the 10 s `probe` itself waits.
PROBE_WITHIN = 5.0
PROVIDER_FILES = 8192


def open_idle(port: int, count: int) -> list[socket.socket]:
    """`count` connections that never send a byte (non-blocking connects: the handshake is the
    kernel's, so the server accepts them as fast as it can)."""
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            sock.connect(("127.0.0.1", port))
        sockets.append(sock)
    return sockets


async def probe(port: int) -> float:
    """Seconds for one GET /healthz on a fresh connection, as the kubelet probes."""
    started = time.monotonic()
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
    return time.monotonic() - started


async def slowloris(port: int) -> float:
    """A request head sent a header line every second, never finished: seconds until cut."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: slow\r\n")
    started = time.monotonic()
    while time.monotonic() - started < 60:
        try:
            writer.write(b"X-Slow: 1\r\n")
            await writer.drain()
            if await asyncio.wait_for(reader.read(1), 1.0) == b"":
                break
        except TimeoutError:
            continue
        except OSError:
            break
    writer.close()
    return time.monotonic() - started


async def test_probes_answer_under_twenty_thousand_idle_connections_and_slowloris_is_cut(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the attacker's own descriptors
    count = min(20_000, hard - 512)
    health, validation = free_port(), free_port()
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    args = ["--health-port", str(health), "--validation-port", str(validation)]
    # Fewer descriptors than the attack has connections, as in a container with a default limit.
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", args=args, nofile=PROVIDER_FILES)
    idle: list[socket.socket] = []
    try:
        await provider.start()
        # The first wait after a cold start of the process (`provider-kserve run`) on a busy machine.
        await wait_for(lambda: _answers(health), timeout=120, what="/healthz")
        baseline = [await probe(health) for _ in range(5)]
        idle += open_idle(validation, PROVIDER_FILES // 2)
        idle += open_idle(health, count - len(idle))
        await asyncio.sleep(1)
        under_attack = []
        for _ in range(10):
            under_attack.append(await probe(health))
            await asyncio.sleep(0.5)
        cut_after = await slowloris(health)
        assert provider.alive()
        print(
            f"{len(idle)} idle connections; /healthz without them {max(baseline) * 1000:.1f} ms at most, "
            f"under them {max(under_attack) * 1000:.1f} ms at most; slowloris cut after {cut_after:.1f} s"
        )
        assert max(under_attack) < PROBE_WITHIN, under_attack
        assert cut_after < SLOWLORIS_CUT_WITHIN, cut_after
        log = (tmp_path / "provider.log").read_text()
        assert "Too many open files" not in log and "Traceback" not in log
    finally:
        for sock in idle:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        await provider.stop()


async def _answers(port: int) -> bool:
    try:
        await probe(port)
    except (OSError, TimeoutError, AssertionError):
        return False
    return True
