"""Freed large buffers go back to the operating system instead of staying in RSS.

Every object read from the API server arrives as one buffer the size of the object (the API server
stores up to ~1.5 MB each), decoded into strings as large. glibc serves such allocations with mmap
and unmaps them on free, but after each free it raises its mmap threshold to the size just freed
(up to 32 MiB); from then on the same buffers come from the heap, where freed memory fragments and
stays resident. Fixing it (which also turns off the adjustment) costs one mmap per buffer over
128 KiB, which is rare beside the per-object work.
"""

from __future__ import annotations

import ctypes

import structlog

log = structlog.get_logger(__name__)

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, from glibc's <malloc.h>
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value


def keep_large_buffers_unmapped() -> bool:
    """Fix glibc's mmap threshold; False where the C library has no mallopt (musl, macOS)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        log.debug("no mallopt in this C library; the allocator keeps its own policy")
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
