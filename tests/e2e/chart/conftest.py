"""The node-mode cluster the chart's stories share, in file order: the provider installed the way
users install it and put through its lifecycle (test_incluster), then the same release upgraded
with the chart's telemetry settings and watched through Jaeger and Prometheus
(test_observability). One cluster for both: a cluster start and stop, and the provider image's
import, fewer (docs/ci-time.md). No KServe controllers run here: the provider's objects are what
the stories look at.

This directory is a Python package (its `__init__.py`): without one, pytest gives a package-scoped
fixture the enclosing package's scope, tests/'s, and the cluster would run to the session's end,
beside the next stories' own.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from cluster.node import NodeCluster
from tests.e2e.support import install_chart, node_cluster


@pytest_asyncio.fixture(scope="package")
async def node() -> AsyncIterator[NodeCluster]:
    """A node-mode cluster with every CRD and the provider image; stopped (host restored) after
    the package."""
    async with node_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def install(node: NodeCluster) -> Callable[..., None]:
    """Runs the README's `helm upgrade --install` (extra `--set`s appended)."""
    return functools.partial(install_chart, node)
