"""The node-mode cluster the stories served through KServe share (the scikit-learn model server's
and the LLM's, in file order): started once for both, with the model server's image imported (the
vLLM CPU image is imported while the model server's story runs), KServe's controllers in the
chart's release namespace (so that the llmisvc controller takes its presets, the CPU profile among
them, from the chart, as with the chart's bundled controllers), and the chart installed once with
`cpuProfile.image` naming the vLLM image. One cluster instead of one per story: a cluster start, an
image import of the provider, KServe's start and the chart's install fewer (docs/ci-time.md). Each
story deletes what it applied when it ends.

This directory is a Python package (its `__init__.py`): without one, pytest gives a package-scoped
fixture the enclosing package's scope, tests/'s, and the cluster would run to the session's end,
beside the next stories' own.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
import pytest_asyncio

import tinyllm
from cluster.node import NodeCluster
from tests.e2e.support import MEASUREMENTS, build_image, install_chart, node_cluster

# The HPA controller's scale-down window on this cluster: KServe 0.20 copies no `behavior` to the
# HPA it makes, so the controller's default holds (300 s, measured in docs/performance.md); a
# platform can shorten it, and here the scaling story's wait for the scale-in is a minute, not five.
SCALE_DOWN_WINDOW_SECONDS = 60


@pytest_asyncio.fixture(scope="package")
async def node() -> AsyncIterator[NodeCluster]:
    modelserver = build_image(target="modelserver")
    async with node_cluster(
        modelserver,
        kserve=True,
        kserve_in_release_namespace=True,
        metrics_server=True,
        hpa_scale_down_window_seconds=SCALE_DOWN_WINDOW_SECONDS,
    ) as cluster:
        MEASUREMENTS["kserve_cluster_images_seconds"] = round(cluster.timings["containerd_and_images"], 1)
        yield cluster


@pytest.fixture(scope="package")
def vllm_image_imported(node: NodeCluster) -> Iterator[Future[None]]:
    """The vLLM image (4.9 GiB, about two minutes to import) built if need be and imported into the
    node while the model server's story runs, not before the cluster starts: only the LLM's story
    runs it, and it waits on this future's result."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        imported = executor.submit(_import_vllm_image, node)
        yield imported
        imported.cancel()


def _import_vllm_image(node: NodeCluster) -> None:
    started = time.monotonic()
    vllm = build_image(target="vllm-cpu")
    MEASUREMENTS["vllm_image_build_seconds"] = round(time.monotonic() - started, 1)
    MEASUREMENTS["vllm_image_archive_gib"] = round(vllm.stat().st_size / 2**30, 2)
    started = time.monotonic()
    node.import_image(vllm)
    MEASUREMENTS["vllm_image_import_seconds"] = round(time.monotonic() - started, 1)


@pytest.fixture(scope="package")
def release(node: NodeCluster, vllm_image_imported: Future[None]) -> None:
    """The chart, installed the README's way, its CPU profile running the vLLM image built here."""
    install_chart(node, f"cpuProfile.image={tinyllm.vllm_cpu_image()}")
