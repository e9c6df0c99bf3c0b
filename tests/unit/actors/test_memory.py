"""The allocator policy `run` sets: freed object-sized buffers leave RSS (a process of its own each,
since the policy is process-wide)."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

# Forty 1.4 MB buffers (the size of a large object as the API server sends it), each followed by a
# small long-lived allocation that pins the heap above it, then the buffers freed: what reading and
# refusing forty large Instances does. One 4 MiB buffer freed first raises glibc's dynamic threshold,
# as one large list page would.
SCRIPT = textwrap.dedent(
    """
    import sys
    from actors.process.memory import keep_large_buffers_unmapped

    def rss_mib():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    if sys.argv[1] == "fixed":
        assert keep_large_buffers_unmapped()
    size = 4 << 20
    page = b"x" * size
    del page
    before = rss_mib()
    held, buffers = [], []
    for i in range(40):
        buffers.append(b"x" * 1_400_000)
        held.append(bytes(2000 + i))
    del buffers
    print(rss_mib() - before)
    """
)


def retained_mib(policy: str) -> float:
    out = subprocess.run([sys.executable, "-c", SCRIPT, policy], check=True, capture_output=True, text=True)
    return float(out.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the policy is glibc's")
def test_freed_large_buffers_leave_rss_once_the_threshold_is_fixed() -> None:
    assert retained_mib("default") > 40  # glibc's own policy keeps them on the heap
    assert retained_mib("fixed") < 5
