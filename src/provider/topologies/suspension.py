"""Suspend and resume: KServe's stop annotation on what the provider applies, and what KServe's
object says of it.

The user's gesture is `replicas: 0` on the Instance's serving component (`llmEngine`,
`predictor`). It becomes KServe 0.20's `serving.kserve.io/stop: "true"` on the
LLMInferenceService or InferenceService, never zero replicas: KServe then deletes the workloads
(Deployments, its Services and routes of the workload, the scheduler) and reports the object
stopped, while the object itself and everything else the provider made for the Instance stay as
they were. The replica count the object was applied with is kept while it is stopped, so that only
the annotation differs; undoing the gesture (replicas above 0) takes the annotation off and sets
the new count.
"""

from __future__ import annotations

from typing import Any, Final

from actors import KubeObject
from provider.topologies import kserve_conditions

STOP_ANNOTATION: Final = "serving.kserve.io/stop"
# KServe's reason on the conditions of what it stopped (StoppedISVCReason, and the llmisvc
# workload, router and scheduler conditions).
STOPPED_REASON: Final = "Stopped"


def stop_requested(obj: KubeObject) -> bool:
    """The stored object carries the stop annotation (as KServe reads it: "true", any case)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(STOP_ANNOTATION)
    return isinstance(value, str) and value.lower() == "true"


def isvc_stopped(isvc: KubeObject) -> bool:
    """KServe reports the InferenceService stopped: its condition `Stopped` is True."""
    return kserve_conditions.is_true(kserve_conditions.condition(isvc, "Stopped"))


def llmisvc_stopped(llmisvc: KubeObject) -> bool:
    """KServe reports the LLMInferenceService stopped: it has no `Stopped` condition, but marks the
    main workload (and the router's and scheduler's parts) not ready with reason Stopped once it
    has deleted them."""
    main = kserve_conditions.condition(llmisvc, "MainWorkloadReady") or {}
    return main.get("status") == "False" and main.get("reason") == STOPPED_REASON


def kept_count(live: KubeObject | None, *path: str) -> int | None:
    """The replica count at `path` of the object as it stands (what it was last applied with), for
    a suspension to leave it as it is; None when there is none (not created yet)."""
    node: Any = live
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, int) and not isinstance(node, bool) else None


def with_stop(metadata: dict[str, Any], suspended: bool) -> dict[str, Any]:
    """`metadata` with the stop annotation when suspended."""
    if not suspended:
        return metadata
    return {**metadata, "annotations": {**(metadata.get("annotations") or {}), STOP_ANNOTATION: "true"}}
