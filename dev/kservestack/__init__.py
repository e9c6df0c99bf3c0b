"""The local cluster's `kserve` option: KServe's real controllers, kube-scheduler and kwok beside
the control plane of dev/plane. See stack.py."""

from __future__ import annotations

from kservestack.stack import KSERVE_CONTROLLERS, KSERVE_NAMESPACE, LLMISVC, MANAGER, KServeStack
from plane import ControlPlane

__all__ = ["KSERVE_CONTROLLERS", "KSERVE_NAMESPACE", "LLMISVC", "MANAGER", "KServeStack", "start_kserve_cluster"]


async def start_kserve_cluster(*, keep_dir: bool = False) -> tuple[ControlPlane, KServeStack]:
    """A control plane with every CRD and the KServe stack on it, both started; stopped together
    by `plane.stop()` (also on failure here)."""
    plane = ControlPlane(controllers=KSERVE_CONTROLLERS, keep_dir=keep_dir)
    await plane.start_with_crds()
    try:
        stack = await KServeStack(plane).start()
    except BaseException:
        plane.stop()
        raise
    return plane, stack
