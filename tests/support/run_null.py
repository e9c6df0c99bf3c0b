"""`python -m tests.support.run_null KUBECONFIG NAMESPACE METRICS_PORT`: the real runtime with the
null provider and leader election on, as a separate process (for leader-election tests)."""

from __future__ import annotations

import sys

import anyio

from actors.client import KubeClient
from actors.manager.manager import Manager
from actors.manager.options import ManagerOptions
from actors.observe.logs import configure_logging
from actors.serve.endpoints import Endpoints
from tests.support.null_provider import NullProvider


async def main(kubeconfig: str, namespace: str, metrics_port: int) -> None:
    configure_logging("info")
    client = await KubeClient.connect(kubeconfig)
    options = ManagerOptions(
        namespaces=[namespace],
        leader_elect=True,
        lease_namespace=namespace,
        lease_name="null-provider-leader",
        endpoints=Endpoints(bind_host="127.0.0.1", metrics_port=metrics_port, health_port=None, validation_port=None),
    )
    async with client:
        await Manager(client, NullProvider(), options=options).run()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
