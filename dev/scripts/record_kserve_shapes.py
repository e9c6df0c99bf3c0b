"""Record what KServe's real controllers write, as fixtures for the unit tests of the pure status
mappers (tests/unit/fixtures/kserve/<scenario>.json).

Starts the local cluster with the KServe stack (dev/kservestack) and the provider, creates one
Instance per scenario, and saves the Instance with the KServe object (spec and status, as KServe
wrote it) once that object reaches the scenario's state. Rerun after a KServe upgrade:

    .venv/bin/python dev/scripts/record_kserve_shapes.py [--out tests/unit/fixtures/kserve] [--only SCENARIO ...]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "dev")]

from actors.client import KubeClient  # noqa: E402
from actors.client.known_resources import INSTANCES  # noqa: E402
from actors.interface import KubeObject, Resource  # noqa: E402
from kservestack import start_kserve_cluster  # noqa: E402
from kservestack.provider import provider_process  # noqa: E402
from plane import ControlPlaneError, ensure_namespace, retry_transient, transient  # noqa: E402

NAMESPACE = "models"
ISVC = Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService")
LLMISVC = Resource("serving.kserve.io", "v1alpha2", "llminferenceservices", "LLMInferenceService")
OUT = ROOT / "tests" / "unit" / "fixtures" / "kserve"
_KEPT_METADATA = ("name", "namespace", "generation", "labels", "annotations")


def _condition(obj: KubeObject, type_: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_]
    return found[0] if found else {}


def _ready(obj: KubeObject) -> bool:
    generation = obj["metadata"].get("generation")
    return _condition(obj, "Ready").get("status") == "True" and obj["status"].get("observedGeneration") == generation


def _failure(reason: str) -> Callable[[KubeObject], bool]:
    def reached(obj: KubeObject) -> bool:
        info = ((obj.get("status") or {}).get("modelStatus") or {}).get("lastFailureInfo") or {}
        return info.get("reason") == reason

    return reached


def _false(type_: str, reason: str) -> Callable[[KubeObject], bool]:
    def reached(obj: KubeObject) -> bool:
        cond = _condition(obj, type_)
        return cond.get("status") == "False" and cond.get("reason") == reason

    return reached


def predictor(name: str, gpus: int = 0, **parameters: Any) -> KubeObject:
    limits: dict[str, str] = {"cpu": "1", "memory": "2Gi"}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    params = {"modelFormat": "sklearn", "storageURI": "gs://kfserving-examples/models/sklearn/1.0/model"}
    return _instance(
        name, "predictor", "predictor", {"resources": {"limits": limits}, "parameters": params | parameters}
    )


def llm(name: str, gpus: int = 0, topology: dict[str, Any] | None = None, **parameters: Any) -> KubeObject:
    limits: dict[str, str] = {"cpu": "4", "memory": "16Gi"}
    params: dict[str, Any] = {"modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "modelName": "qwen"}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    else:
        params["computeProfile"] = "cpu"
    engine = {"type": "vllm", "replicas": 1, "resources": {"limits": limits}, "parameters": params | parameters}
    return _instance(name, "llm", "llmEngine", engine, topology or {"externalAccess": "ClusterIP"})


def _instance(
    name: str, topology: str, component: str, body: dict[str, Any], parameters: dict[str, Any] | None = None
) -> KubeObject:
    spec: dict[str, Any] = {
        "providerRef": {"name": "provider-kserve"},
        "topology": {"type": topology, **({"parameters": parameters} if parameters else {})},
        "components": {component: body},
    }
    return {
        "apiVersion": INSTANCES.api_version,
        "kind": INSTANCES.kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


@dataclass(frozen=True)
class Scenario:
    name: str
    instance: KubeObject
    resource: Resource
    reached: Callable[[KubeObject], bool]
    # A merge patch of the Instance once KServe reports it Ready; `reached` then applies after it.
    then: dict[str, Any] | None = None


def _routed(obj: KubeObject) -> bool:
    return _condition(obj, "WorkloadsReady").get("status") == "True" and bool(_condition(obj, "RouterReady"))


def _scaling(obj: KubeObject) -> bool:
    """The Deployment scales up (the HPA raised replicas): KServe's Ready drops for a moment while
    the model keeps serving. Caught from the watch: it lasts a fraction of a second here."""
    return obj["metadata"].get("generation") == 2 and _false("PredictorReady", "MinimumReplicasUnavailable")(obj)


def _stopped(obj: KubeObject) -> bool:
    """KServe has stopped the object the provider annotated with serving.kserve.io/stop (replicas 0):
    an InferenceService's `Stopped` is True; an LLMInferenceService's main workload is Stopped."""
    annotated = (obj["metadata"].get("annotations") or {}).get("serving.kserve.io/stop") == "true"
    if obj["kind"] == ISVC.kind:
        return annotated and _condition(obj, "Stopped").get("status") == "True"
    return annotated and _false("MainWorkloadReady", "Stopped")(obj)


def _merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`patch` merged into `base` as a JSON merge patch does (for dicts; values replace)."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        out[key] = _merged(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


SUSPEND = {"replicas": 0}

# Pods asking for more GPUs than the kwok Node has stay Pending.
SCENARIOS = (
    Scenario("isvc-ready", predictor("iris"), ISVC, _ready),
    Scenario(
        "isvc-pending", predictor("iris-gpu", gpus=16), ISVC, _false("PredictorReady", "MinimumReplicasUnavailable")
    ),
    Scenario(
        "isvc-no-runtime",
        predictor("iris-format", modelFormat="nosuchformat"),
        ISVC,
        _failure("NoSupportingRuntime"),
    ),
    Scenario(
        "isvc-unknown-runtime",
        predictor("iris-runtime", runtime="no-such-runtime"),
        ISVC,
        _failure("RuntimeNotRecognized"),
    ),
    Scenario(
        "isvc-scaling",
        predictor("iris-scale", minReplicas=1, maxReplicas=3),
        ISVC,
        _scaling,
        then={"spec": {"components": {"predictor": {"parameters": {"minReplicas": 2}}}}},
    ),
    Scenario(
        "isvc-stopped",
        predictor("iris-stop"),
        ISVC,
        _stopped,
        then={"spec": {"components": {"predictor": SUSPEND}}},
    ),
    Scenario("llmisvc-ready", llm("chat"), LLMISVC, _ready),
    Scenario(
        "llmisvc-stopped",
        llm("chat-stop"),
        LLMISVC,
        _stopped,
        then={"spec": {"components": {"llmEngine": SUSPEND}}},
    ),
    Scenario("llmisvc-pending", llm("chat-gpu", gpus=16), LLMISVC, _false("Ready", "MinimumReplicasUnavailable")),
    Scenario(
        "llmisvc-config-not-found",
        llm("chat-baseref", baseRefs=["no-such-config"]),
        LLMISVC,
        _false("PresetsCombined", "ConfigNotFound"),
    ),
    Scenario(
        "llmisvc-gateway-routing",
        llm("chat-routed", topology={"externalAccess": "ClusterIP", "enableGatewayRouting": True}),
        LLMISVC,
        _routed,
    ),
)


def _trimmed(obj: KubeObject) -> KubeObject:
    """The object without what differs on every run (uids, resourceVersions, managedFields)."""
    meta = {k: v for k, v in obj["metadata"].items() if k in _KEPT_METADATA}
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta, **{
        k: copy.deepcopy(obj[k]) for k in ("spec", "status") if k in obj}}  # fmt: skip


async def _first(kube: KubeClient, scenario: Scenario, reached: Callable[[KubeObject], bool], rv: str) -> KubeObject:
    """The first state of the scenario's KServe object that `reached` accepts, from a watch that
    starts at `rv`: some states last less than a poll interval."""
    name = scenario.instance["metadata"]["name"]
    while True:
        try:
            async for event in kube.watch(scenario.resource, NAMESPACE, rv, timeout_seconds=60):
                obj = event.get("object") or {}
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if obj.get("metadata", {}).get("name") == name and obj.get("status") and reached(obj):
                    return obj
        except Exception as err:
            if not transient(err):
                raise


async def record(kube: KubeClient, scenario: Scenario, out: Path, timeout: float) -> None:
    name = scenario.instance["metadata"]["name"]
    _, rv = await retry_transient(kube.list_all)(scenario.resource, NAMESPACE)
    await retry_transient(kube.create)(INSTANCES, scenario.instance)
    try:
        async with asyncio.timeout(timeout):
            if scenario.then is not None:
                ready = await _first(kube, scenario, _ready, rv)
                await retry_transient(kube.patch)(INSTANCES, NAMESPACE, name, scenario.then)
                rv = ready["metadata"]["resourceVersion"]
            obj = await _first(kube, scenario, scenario.reached, rv)
    except TimeoutError:
        last = await kube.get(scenario.resource, NAMESPACE, name)
        raise TimeoutError(
            f"{scenario.name}: not reached in {timeout:.0f} s; last: {(last or {}).get('status')}"
        ) from None
    # The Instance as it stood when KServe wrote that state.
    instance = _merged(scenario.instance, scenario.then) if scenario.then is not None else scenario.instance
    fixture = {"instance": instance, "kserve": _trimmed(obj)}
    (out / f"{scenario.name}.json").write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
    print(f"recorded {scenario.name}")
    # Pending pods keep llmisvc regenerating certificates: no longer than needed.
    await retry_transient(kube.delete)(INSTANCES, NAMESPACE, name)


async def main(args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    plane, _ = await start_kserve_cluster()
    try:
        log = Path(tempfile.gettempdir()) / "provider-kserve-record.log"
        with provider_process(plane, log):
            async with plane.client() as kube:
                await ensure_namespace(kube, NAMESPACE)
                chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
                await asyncio.gather(*(record(kube, s, args.out, args.timeout) for s in chosen))
    finally:
        plane.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--only", action="append", metavar="SCENARIO", help="record only these (repeatable)")
    try:
        asyncio.run(main(parser.parse_args()))
    except (ControlPlaneError, TimeoutError) as err:
        sys.exit(f"error: {err}")
