"""The whole life of a predictor Instance against KServe's real controllers (the `kserve` fixture):
Ready → Updating → Ready on a model change; Ready → Suspending → Suspended → Resuming → Ready with
`predictor.replicas` 0 and back; a suspension while Provisioning and the suspended Instance deleted.

Every phase is recorded from a watch on the Instance (tests.support.phases); `pytest -s` prints each
timeline with its timestamps.
"""

from __future__ import annotations

import copy
import json
from itertools import dropwhile

import pytest

from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject
from provider.kserve import KServeProvider
from provider.model.kinds import INFERENCE_SERVICE
from provider.model.settings import ProviderSettings
from provider.topologies.suspension import STOP_ANNOTATION
from tests.support.instance_status import (
    conditions_of,
    connection_secret,
    instance_status,
    rolled_out_reported,
    wait_status,
)
from tests.support.instances import predictor_instance, predictor_parameters
from tests.support.kserve import DEPLOYMENTS, KServeCluster, wait_all_gone, wait_gone
from tests.support.phases import recording_phases
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]

READY_TIMEOUT = 120.0
PENDING = "Deployment does not have minimum availability."
NEXT_MODEL = "gs://kfserving-examples/models/sklearn/1.0/model-2"


def provider() -> KServeProvider:
    return KServeProvider(ProviderSettings())


def _spec_and_labels(obj: KubeObject) -> KubeObject:
    return {"spec": copy.deepcopy(obj["spec"]), "labels": obj["metadata"].get("labels")}


async def test_model_change_is_updating_then_ready(kserve: KServeCluster, kserve_namespace: str) -> None:
    """A Ready Instance's storageURI changes: Updating from the pass that applies it until KServe
    reports the predictor Deployment rolled out again, then Ready. Never Provisioning."""
    kube, ns, name = kserve.kube, kserve_namespace, "iris"
    async with running_manager(kserve.plane, provider(), ns), recording_phases(kube, ns, name) as phases:
        await kube.create(INSTANCES, predictor_instance(name, ns, on_cluster=True))
        await phases.reached("Ready", 0, READY_TIMEOUT)
        served = await connection_secret(kube, ns, name)

        mark = phases.mark()
        parameters = predictor_parameters(storageURI=NEXT_MODEL)
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"predictor": {"parameters": parameters}}}})
        await phases.reached("Updating", mark, READY_TIMEOUT)
        ready = await phases.reached("Ready", mark, READY_TIMEOUT)
        print(phases.report(mark, "model change"))
        assert phases.since(mark) == ["Updating", "Ready"]

        # KServe may report the old Deployment's rollout as complete a moment after the change (its
        # status has no generation of the InferenceService's own): the new model follows.
        async def rolled_out() -> bool | NotYet:
            deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-predictor") or {}
            status = deployment.get("status") or {}
            template = json.dumps((deployment.get("spec") or {}).get("template"))
            done = NEXT_MODEL in template and status.get("updatedReplicas") == status.get("availableReplicas") == 1
            return done or NotYet(status)

        await wait_for(rolled_out, what="the new model rolled out", timeout=READY_TIMEOUT)
        # KServe, then the provider, report the Deployment's new state a moment after it: wait for
        # the very status asserted (a loaded machine still showed MinimumReplicasAvailable here).
        status = await wait_status(
            kube, ns, name, rolled_out_reported, "Ready with the new ReplicaSet available", READY_TIMEOUT
        )
        assert (status["phase"], ready.message) == ("Ready", "")
        assert conditions_of(status)["KServePredictorReady"]["status"] == "True"
        assert await connection_secret(kube, ns, name) == served


async def test_suspend_and_resume(kserve: KServeCluster, kserve_namespace: str) -> None:
    """replicas 0: the stop annotation on the InferenceService (its spec untouched); KServe deletes
    the Deployment, Service and HPA and reports Stopped; Suspending → Suspended, the connection
    details kept. replicas 1: Resuming → Ready, the Deployment back."""
    kube, ns, name = kserve.kube, kserve_namespace, "iris"
    async with running_manager(kserve.plane, provider(), ns), recording_phases(kube, ns, name) as phases:
        await kube.create(INSTANCES, predictor_instance(name, ns, on_cluster=True))
        await phases.reached("Ready", 0, READY_TIMEOUT)
        before = await kube.get(INFERENCE_SERVICE, ns, name)
        assert before is not None
        served_status = await instance_status(kube, ns, name)
        served_secret = await connection_secret(kube, ns, name)

        mark = phases.mark()
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"predictor": {"replicas": 0}}}})
        suspended = await phases.reached("Suspended", mark, READY_TIMEOUT)
        print(phases.report(mark, "suspend"))
        assert phases.since(mark) == ["Suspending", "Suspended"]
        assert suspended.message.startswith("predictor replicas is 0, so KServe stopped")
        await wait_gone(kube, ns, name, timeout=READY_TIMEOUT)  # Deployment, Service, HPA and pods

        after = await kube.get(INFERENCE_SERVICE, ns, name)
        assert after is not None
        assert after["metadata"]["annotations"][STOP_ANNOTATION] == "true"
        assert after["metadata"]["generation"] == before["metadata"]["generation"]
        assert _spec_and_labels(after) == _spec_and_labels(before)
        assert after["spec"]["predictor"]["minReplicas"] == 1
        status = await instance_status(kube, ns, name)
        stopped = conditions_of(status)["KServeStopped"]
        assert (stopped["status"], stopped["reason"]) == ("True", "Stopped")
        assert await connection_secret(kube, ns, name) == served_secret
        assert status["connection"] == served_status["connection"]

        mark = phases.mark()
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"predictor": {"replicas": 1}}}})
        await phases.reached("Ready", mark, READY_TIMEOUT)
        print(phases.report(mark, "resume"))
        assert phases.since(mark) == ["Resuming", "Ready"]
        resumed = await kube.get(INFERENCE_SERVICE, ns, name)
        assert resumed is not None and STOP_ANNOTATION not in resumed["metadata"]["annotations"]
        assert await kube.get(DEPLOYMENTS, ns, f"{name}-predictor") is not None
        assert await connection_secret(kube, ns, name) == served_secret


async def test_suspension_while_provisioning_then_delete(kserve: KServeCluster, kserve_namespace: str) -> None:
    """A predictor whose pod cannot be scheduled is Provisioning; replicas 0 suspends it (the pending
    pod goes); the suspended Instance then deletes cleanly, with everything KServe made for it."""
    kube, ns, name = kserve.kube, kserve_namespace, "greedy"
    async with running_manager(kserve.plane, provider(), ns), recording_phases(kube, ns, name) as phases:
        limits = {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": str(kserve.stack.gpus * 2)}
        body = predictor_instance(name, ns, on_cluster=True, component={"resources": {"limits": limits}})
        await kube.create(INSTANCES, body)

        await wait_status(kube, ns, name, lambda s: s.get("message") == PENDING, "the pod pending", READY_TIMEOUT)
        # The GET above can be ahead of the recorder's watch: mark only once the recorder too has
        # seen Provisioning. A Provisioning may still follow the mark (the pending message still
        # in flight on the watch, or KServe writing once more before the patch lands): those, and
        # only those, may lead; what the suspension shows must be exactly Suspending, Suspended.
        await phases.reached("Provisioning", 0, READY_TIMEOUT)
        mark = phases.mark()
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"predictor": {"replicas": 0}}}})
        await phases.reached("Suspended", mark, READY_TIMEOUT)
        await wait_gone(kube, ns, name, timeout=READY_TIMEOUT)
        print(phases.report(mark, "suspend while provisioning"))
        assert list(dropwhile(lambda p: p == "Provisioning", phases.since(mark))) == ["Suspending", "Suspended"]

        mark = phases.mark()
        await kube.delete(INSTANCES, ns, name)

        await wait_all_gone(kube, ns, name, INFERENCE_SERVICE, timeout=READY_TIMEOUT)
        # A GET's 404 can come before the watch delivers the DELETED event.
        await phases.reached("(deleted)", mark, READY_TIMEOUT)
        print(phases.report(mark, "delete while suspended"))
        assert phases.since(mark) == ["Terminating", "(deleted)"]
