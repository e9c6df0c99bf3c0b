"""Shared fixtures: one real local control plane (etcd + kube-apiserver + GC/namespace controllers)
per test session, an admin client for it, and a fresh namespace per test; and, for the tests whose
subject is what KServe reports, a second one running the real KServe controllers (`kserve`,
`kserve_namespace`).

Both are started lazily, only by tests that ask for them, and once per session.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NoReturn

import pytest
import pytest_asyncio

DEV_DIR = Path(__file__).resolve().parents[1] / "dev"
if str(DEV_DIR) not in sys.path:
    sys.path.insert(0, str(DEV_DIR))

from actors.client import KubeClient  # noqa: E402
from kservestack import start_kserve_cluster  # noqa: E402
from plane import NAMESPACE, ControlPlane  # noqa: E402
from tests.support.kserve import KServeCluster, add_status_connection  # noqa: E402


def _cannot_start(what: str, err: BaseException) -> NoReturn:
    where = "in CI" if os.environ.get("CI") else "locally"
    pytest.fail(f"{what} could not start ({where}): {err}", pytrace=False)


# The directories of planes kept because a test failed (their processes' logs), for the summary.
_KEPT: list[Path] = []


def _stop(plane: ControlPlane, session: pytest.Session) -> None:
    """Stop `plane`; keep its directory (every process's log) when a test of the session failed,
    so that a failure seen once in CI can be read afterwards on the machine that ran it (the
    logs only: etcd's data goes)."""
    keep = bool(session.testsfailed)
    plane.keep_dir = keep
    plane.stop()
    if keep:
        shutil.rmtree(plane.workdir / "etcd", ignore_errors=True)
        _KEPT.append(plane.workdir)


@pytest_asyncio.fixture(scope="session")
async def controlplane(request: pytest.FixtureRequest) -> AsyncIterator[ControlPlane]:
    """Started once, with every CRD from shared/crds installed and Established.

    A control plane that cannot start fails the test (never skips), in CI and locally alike:
    a skipped integration suite would look green while proving nothing.
    """
    plane = ControlPlane()
    try:
        await plane.start_with_crds()
    except Exception as err:
        _cannot_start("the local control plane", err)
    try:
        yield plane
    finally:
        _stop(plane, request.session)


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


@pytest_asyncio.fixture(scope="session")
async def kserve(request: pytest.FixtureRequest) -> AsyncIterator[KServeCluster]:
    """Started once per session, beside (not instead of) `controlplane`: KServe's webhooks default
    and its controllers finalize every KServe object, which the tests of our own objects must not
    see. Its Instance CRD has the newer core's status.connection. Fails (never skips) when it
    cannot start."""
    try:
        plane, stack = await start_kserve_cluster()
    except Exception as err:
        _cannot_start("the KServe stack", err)
    try:
        async with plane.client() as client:
            await add_status_connection(client)
            yield KServeCluster(plane, stack, client)
    finally:
        _stop(plane, request.session)


@pytest_asyncio.fixture
async def kserve_namespace(kserve: KServeCluster) -> AsyncIterator[str]:
    """A fresh namespace on the KServe cluster, deleted afterwards (with what KServe created)."""
    name = f"k-{uuid.uuid4().hex[:10]}"
    await kserve.kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        await kserve.kube.delete(NAMESPACE, None, name)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The order this run used, also under `-q` (which hides pytest-randomly's header line): a
    failure that only one order shows is repeated with `--randomly-seed=N`."""
    if config.pluginmanager.has_plugin("randomly") and config.getoption("randomly_reorganize", True):
        terminalreporter.write_line(f"random order: --randomly-seed={config.getoption('randomly_seed')}")
    for kept in _KEPT:
        terminalreporter.write_line(f"a test failed: logs of the control plane and its controllers kept in {kept}")
