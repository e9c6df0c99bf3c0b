"""`python -m tests.support.run_null KUBECONFIG NAMESPACE METRICS_PORT`: the null provider run as a
provider's `run` verb runs it (actors.manager_main: the same flags, process and exits), with leader
election on, as a separate process (for leader-election tests)."""

from __future__ import annotations

import sys

from actors import KubeClient, SharedActors, manager_main
from tests.support.null_provider import NullProvider


def null_provider(client: KubeClient) -> tuple[NullProvider, SharedActors]:
    return NullProvider(), SharedActors()


def main(kubeconfig: str, namespace: str, metrics_port: str) -> int:
    flags = ["--kubeconfig", kubeconfig, "--namespace", namespace, "--bind-host", "127.0.0.1"]
    flags += ["--leader-elect", "--lease-namespace", namespace, "--lease-name", "null-provider-leader"]
    flags += ["--metrics-port", metrics_port, "--health-port", "0", "--validation-port", "0"]
    return manager_main(flags, name="null-provider", build=null_provider)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
