"""A write whose connection opens across a pause is withheld: the fence is asked with the connection
in hand, not before it is opened.

A CI run (stop 42) saw a paused leader send an Event when it resumed: the write had passed the
fence before the pause. Opening a connection takes round trips (TCP, TLS), long enough for the
process to be stopped in between; asked once the connection is open, the fence sees the stale lease.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.client import KubeClient, WriteWithheld
from plane import ControlPlane
from plane.identity import write_kubeconfig_file
from tests.support.null_provider import CONFIGMAPS
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration


def config_map(name: str, namespace: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


async def test_a_write_whose_connection_opens_across_a_pause_is_not_sent(
    controlplane: ControlPlane, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    leading, connections = True, 0

    def fence(method: str, resource: str) -> None:
        if not leading:
            raise WriteWithheld(f"{method} {resource} withheld: not leading")

    def accepted() -> None:
        # The proxy has the first connection, and no byte of its TLS handshake has passed yet: the
        # process is "paused" now, and the lease it held is stale by the time the connection opens.
        nonlocal leading, connections
        connections += 1
        leading = leading and connections > 1

    proxy = TcpProxy(controlplane.apiserver_port, on_accept=accepted)
    await proxy.start()
    server = f"https://127.0.0.1:{proxy.port}"
    kubeconfig = write_kubeconfig_file(tmp_path / "kubeconfig", server, controlplane.ca_file, controlplane.admin_token)
    try:
        async with await KubeClient.connect(str(kubeconfig)) as client:
            client.fence_writes(fence)
            with pytest.raises(WriteWithheld):
                await client.create(CONFIGMAPS, config_map("withheld", namespace))
            # The connection opened for it went back to the pool: leading again, the next write
            # goes out on it (no new connection).
            leading = True
            await client.create(CONFIGMAPS, config_map("sent", namespace))
            assert connections == 1
    finally:
        await proxy.close()
    assert await kube.get(CONFIGMAPS, namespace, "withheld") is None
    assert await kube.get(CONFIGMAPS, namespace, "sent") is not None
