"""End-to-end fixtures: the e2e marker, the session's measurements, and the host left as it was.
The node-mode clusters (dev/cluster, with the provider image built by dev/build-image.sh imported,
and the chart installed the way its README tells users) are the packages' own: chart/ and kserve/
each share one among their stories; test_host_clean and test_tilt start their own.

Everything here is real: containerd runs the image, the kubelet runs the pod under the chart's
ServiceAccount, kube-proxy routes the Service. Needs root (`make e2e`). The whole session is
bracketed by host snapshots: whatever the clusters changed on the host must be gone at the end.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from cluster import host, snapshot
from tests.e2e.support import IMAGE_SCRIPT, MEASUREMENTS, MEASUREMENTS_FILE, ROOT


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not MEASUREMENTS:
        return
    MEASUREMENTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    MEASUREMENTS_FILE.write_text(json.dumps(MEASUREMENTS, indent=1))
    terminalreporter.section("e2e measurements")
    for key, value in MEASUREMENTS.items():
        terminalreporter.write_line(f"{key}: {value}")


@pytest.fixture(scope="session", autouse=True)
def host_left_clean() -> Iterator[None]:
    """The host after the end-to-end tests is the host before them. The host lock is held
    throughout (it is re-entrant for this session's own clusters), so that no other node-mode
    cluster on this host starts or stops in between and shows up in the comparison. The Debian
    packages the node and the image builds need are installed first: they are what the set-up
    installs for good (as `make` installs the venv), not a change a teardown undoes."""
    host.ensure_packages()
    subprocess.run(["bash", str(IMAGE_SCRIPT), "packages"], check=True)
    with host.host_lock():
        before = snapshot.take()
        yield
        changes = snapshot.diff(before, snapshot.take())
    assert not changes, "the e2e clusters left host changes behind:\n" + "\n".join(changes)


@pytest.fixture(scope="session", autouse=True)
def tilt_built_beside_the_first_stories(request: pytest.FixtureRequest) -> Iterator[None]:
    """When test_tilt is to run, tilt (cold: its web UI, yarn and a bundler, then about five
    minutes of compiling) builds at a lower priority while the stories before it run: they mostly
    wait on containers, pods and vLLM, and leave about half of two cores idle (docs/ci-time.md).
    test_tilt then finds it built, or waits on the build's lock; a failed build is built again
    there, and fails with its message."""
    if not any(item.path.name == "test_tilt.py" for item in request.session.items):
        yield
        return
    log = ROOT / "build" / "e2e-tilt-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        build = subprocess.Popen(["nice", "-n", "10", "bash", str(ROOT / "dev" / "build-controlplane.sh"), "tilt"],
                                 stdout=subprocess.DEVNULL, stderr=out)  # fmt: skip
    try:
        yield
    finally:
        build.wait()
