"""Shared fixtures: one real local control plane (etcd + kube-apiserver + GC/namespace controllers)
per test session, an admin client for it, and a fresh namespace per test.

The control plane is started lazily, only by tests that ask for it (the integration tests).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

DEV_DIR = Path(__file__).resolve().parents[1] / "dev"
if str(DEV_DIR) not in sys.path:
    sys.path.insert(0, str(DEV_DIR))

from actors.kube import KubeClient  # noqa: E402
from controlplane import NAMESPACE, ControlPlane  # noqa: E402


@pytest_asyncio.fixture(scope="session")
async def controlplane() -> AsyncIterator[ControlPlane]:
    """Started once, with every CRD from shared/crds installed and Established.

    A control plane that cannot start fails the test (never skips), in CI and locally alike:
    a skipped integration suite would look green while proving nothing.
    """
    plane = ControlPlane()
    try:
        await plane.start_with_crds()
    except Exception as err:
        where = "in CI" if os.environ.get("CI") else "locally"
        pytest.fail(f"the local control plane could not start ({where}): {err}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest_asyncio.fixture(scope="session")
async def kube(controlplane: ControlPlane) -> AsyncIterator[KubeClient]:
    """An admin (system:masters) client for the control plane."""
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    try:
        yield client
    finally:
        await client.close()


@pytest_asyncio.fixture
async def namespace(kube: KubeClient) -> AsyncIterator[str]:
    """A fresh namespace, deleted afterwards (the namespace controller empties it)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        await kube.delete(NAMESPACE, None, name)
