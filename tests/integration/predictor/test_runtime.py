"""The predictor topology against KServe's real controllers (the `kserve` fixture): every status
here is what KServe's manager wrote, for Deployments kube-controller-manager made and pods kwok
runs on a fake Node.
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.client import ApiError
from actors.client.known_resources import INSTANCES
from actors.contract import is_owned_by
from actors.interface import KubeObject
from kservestack import MANAGER
from provider.kserve import KServeProvider
from provider.model.kinds import INFERENCE_SERVICE
from provider.model.settings import ProviderSettings
from tests.support.instance_status import (
    conditions_of,
    connection_secret,
    instance_status,
    rolled_out_reported,
    wait_phase,
    wait_status,
)
from tests.support.instances import predictor_instance, predictor_parameters
from tests.support.kserve import DEPLOYMENTS, HPAS, SERVICES, KServeCluster, kserve_children, wait_all_gone
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]

PENDING = "Deployment does not have minimum availability."
READY_TIMEOUT = 120.0


def provider() -> KServeProvider:
    return KServeProvider(ProviderSettings())


async def test_create_to_ready_then_scale_then_delete(kserve: KServeCluster, kserve_namespace: str) -> None:
    """Create → Provisioning → Ready by KServe's word, with the predictor Service in `<name>-conn`
    and status.connection; more replicas and other resources while Ready → Updating, then Ready once
    KServe has rolled them out and the Deployment follows; delete → the InferenceService and
    everything KServe made for it (Deployment, Service, HPA, pods) are collected."""
    kube, ns, name = kserve.kube, kserve_namespace, "iris"
    host = f"{name}-predictor.{ns}.svc.cluster.local"
    async with running_manager(kserve.plane, provider(), ns):
        created = await kube.create(
            INSTANCES,
            predictor_instance(
                name, ns, on_cluster=True, parameters=predictor_parameters(minReplicas=1, maxReplicas=3)
            ),
        )
        # The provider is Ready once KServe's Ready is True, which it may be while PredictorReady
        # still says MinimumReplicasAvailable (seen on a loaded machine): wait for the rollout's end.
        status = await wait_status(
            kube, ns, name, rolled_out_reported, "Ready with the new ReplicaSet available", READY_TIMEOUT
        )
        conditions = conditions_of(status)
        assert (conditions["KServeReady"]["status"], conditions["KServeReady"]["reason"]) == ("True", "Ready")
        assert (conditions["KServeStopped"]["status"], conditions["KServeStopped"]["reason"]) == ("False", "NotStopped")
        assert await connection_secret(kube, ns, name) == {
            "type": "kserve",
            "provider": "provider-kserve",
            "host": host,
            "port": "80",
            "uri": f"http://{host}",
        }
        assert status["connection"] == {"host": host, "port": "80", "url": f"http://{host}"}
        isvc = await kube.get(INFERENCE_SERVICE, ns, name)
        assert isvc is not None and is_owned_by(isvc, created)
        assert isvc["status"]["clusterServingRuntimeName"] == "kserve-sklearnserver"
        children = await kserve_children(kube, ns, name)
        for made in (
            f"Deployment/{name}-predictor",
            f"Service/{name}-predictor",
            f"HorizontalPodAutoscaler/{name}-predictor",
        ):
            assert made in children

        # Scale and resize while Ready: Updating until KServe has rolled it out, never Provisioning.
        await kube.patch(
            INSTANCES,
            ns,
            name,
            {"spec": {"components": {"predictor": {
                "parameters": {"minReplicas": 2}, "resources": {"limits": {"cpu": "2", "memory": "3Gi"}}}}}},
        )  # fmt: skip
        phases: set[str] = set()

        async def rolled_out() -> bool | NotYet:
            status = await instance_status(kube, ns, name)
            phases.add(f"{status.get('phase')}: {status.get('message')}")
            isvc = await kube.get(INFERENCE_SERVICE, ns, name) or {}
            deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-predictor") or {}
            seen = {
                "generation": isvc["metadata"]["generation"],
                "observed": (isvc.get("status") or {}).get("observedGeneration"),
                "available": (deployment.get("status") or {}).get("availableReplicas"),
                "synced": conditions_of(status)["Synced"].get("observedGeneration"),
            }
            # KServe 0.20 copies the predictor Deployment's generation into the InferenceService's
            # status.observedGeneration (the HPA scaling the Deployment bumps it past ours): only
            # "at least" holds.
            caught_up = isinstance(seen["observed"], int) and seen["observed"] >= seen["generation"] == 2
            return (caught_up and seen["available"] == 2 and seen["synced"] == 2) or NotYet(seen)

        await wait_for(rolled_out, what="two replicas rolled out", timeout=READY_TIMEOUT)
        # Ready or Updating throughout: the model serves on while KServe rolls the change out.
        assert {p.partition(":")[0] for p in phases} <= {"Ready", "Updating"}, phases
        await wait_phase(kube, ns, name, "Ready", "", timeout=READY_TIMEOUT)
        deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-predictor")
        assert deployment is not None
        (container,) = [
            c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "kserve-container"
        ]
        assert container["resources"]["limits"] == {"cpu": "2", "memory": "3Gi"}
        hpa = await kube.get(HPAS, ns, f"{name}-predictor")
        assert hpa is not None and (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 3)

        await kube.delete(INSTANCES, ns, name)
        # The provider's finalizer, KServe's and the garbage collector, one after another: a loaded
        # machine's pace, not the 60 s default.
        await wait_all_gone(kube, ns, name, INFERENCE_SERVICE, timeout=READY_TIMEOUT)
        assert await kube.get(SERVICES, ns, f"{name}-predictor") is None


async def test_how_to_scale_reaches_kserves_horizontal_pod_autoscaler(
    kserve: KServeCluster, kserve_namespace: str
) -> None:
    """scaleMetric and scaleTarget become the metric of the HPA KServe's controller makes for the
    predictor (memory at 70 % of the request), and a change of them changes it (cpu at 55 %)."""
    kube, ns, name = kserve.kube, kserve_namespace, "scaled"
    scaling = predictor_parameters(minReplicas=1, maxReplicas=3, scaleMetric="memory", scaleTarget=70)

    def metric_of(hpa: KubeObject | None) -> tuple[Any, Any, Any] | None:
        metrics = ((hpa or {}).get("spec") or {}).get("metrics") or [{}]
        resource = metrics[0].get("resource") or {}
        target = resource.get("target") or {}
        return (resource.get("name"), target.get("type"), target.get("averageUtilization")) if resource else None

    async def hpa_scales_on(wanted: tuple[Any, Any, Any]) -> bool | NotYet:
        hpa = await kube.get(HPAS, ns, f"{name}-predictor")
        bounds = ((hpa or {}).get("spec") or {}).get("minReplicas"), ((hpa or {}).get("spec") or {}).get("maxReplicas")
        return (metric_of(hpa) == wanted and bounds == (1, 3)) or NotYet(f"{metric_of(hpa)}, replicas {bounds}")

    async with running_manager(kserve.plane, provider(), ns):
        await kube.create(INSTANCES, predictor_instance(name, ns, on_cluster=True, parameters=scaling))
        await wait_for(lambda: hpa_scales_on(("memory", "Utilization", 70)), what="KServe's HPA", timeout=READY_TIMEOUT)
        changed = {"scaleMetric": "cpu", "scaleTarget": 55}
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"predictor": {"parameters": changed}}}})
        await wait_for(lambda: hpa_scales_on(("cpu", "Utilization", 55)), what="the HPA changed", timeout=READY_TIMEOUT)
        isvc = await kube.get(INFERENCE_SERVICE, ns, name)
        assert isvc is not None
        assert (isvc["spec"]["predictor"]["scaleMetric"], isvc["spec"]["predictor"]["scaleTarget"]) == ("cpu", 55)


async def test_pending_pods_are_provisioning_with_the_predictors_reason(
    kserve: KServeCluster, kserve_namespace: str
) -> None:
    """More GPUs than the Node has: the pod stays Pending, and the Instance says what KServe's
    PredictorReady says, not Ready's "Predictor ingress not created"."""
    kube, ns, name = kserve.kube, kserve_namespace, "greedy"
    async with running_manager(kserve.plane, provider(), ns):
        limits = {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": str(kserve.stack.gpus * 2)}
        await kube.create(
            INSTANCES, predictor_instance(name, ns, on_cluster=True, component={"resources": {"limits": limits}})
        )
        # The pending message (from KServe's PredictorReady) and Ready's reason (from KServe's
        # ingress step) need not come in the same status write: wait for every field asserted.
        status = await wait_status(
            kube, ns, name, _pending_reported, "Provisioning with KServe's reasons", READY_TIMEOUT
        )
        predictor = conditions_of(status)["KServePredictorReady"]
        assert (status["phase"], status["message"]) == ("Provisioning", PENDING)
        assert (predictor["status"], predictor["reason"]) == ("False", "MinimumReplicasUnavailable")
        assert conditions_of(status)["KServeReady"]["reason"] == "PredictorIngressNotCreated"
        assert await connection_secret(kube, ns, name) == {}
        await kube.delete(INSTANCES, ns, name)
        await wait_all_gone(kube, ns, name, INFERENCE_SERVICE, timeout=READY_TIMEOUT)


def _pending_reported(status: dict[str, Any]) -> bool:
    """Provisioning with the predictor's pending message, and both KServe conditions saying why."""
    conditions = conditions_of(status)
    predictor = conditions.get("KServePredictorReady") or {}
    return (
        (status.get("phase"), status.get("message")) == ("Provisioning", PENDING)
        and (predictor.get("status"), predictor.get("reason")) == ("False", "MinimumReplicasUnavailable")
        and (conditions.get("KServeReady") or {}).get("reason") == "PredictorIngressNotCreated"
    )


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (
            {"modelFormat": "nosuchformat"},
            'no ServingRuntime supports model format "nosuchformat" (KServe: No runtime found to support '
            "specified framework/version); install KServe's ClusterServingRuntimes (the kserve-runtime-configs "
            "chart), or name a ServingRuntime that serves it in predictor.parameters.runtime",
        ),
        (
            {"runtime": "no-such-runtime"},
            'no ServingRuntime or ClusterServingRuntime named "no-such-runtime" (KServe: Waiting for runtime to '
            "become available); create it, install KServe's ClusterServingRuntimes (the kserve-runtime-configs "
            "chart), or fix predictor.parameters.runtime",
        ),
        (
            {"runtime": "kserve-tensorflow-serving"},
            'ServingRuntime "kserve-tensorflow-serving" does not support model format "sklearn" (KServe: Specified '
            "runtime does not support specified framework/version); pick a runtime that lists it, or unset "
            "predictor.parameters.runtime to let KServe choose",
        ),
    ],
    ids=["no-runtime-for-format", "unknown-runtime", "runtime-without-format"],
)
async def test_runtime_problems_fail_with_what_to_do(
    kserve: KServeCluster, kserve_namespace: str, parameters: dict[str, Any], message: str
) -> None:
    kube, ns, name = kserve.kube, kserve_namespace, "iris"
    async with running_manager(kserve.plane, provider(), ns):
        await kube.create(
            INSTANCES, predictor_instance(name, ns, on_cluster=True, parameters=predictor_parameters(**parameters))
        )
        status = await wait_phase(kube, ns, name, "Failed", message, timeout=READY_TIMEOUT)
        assert conditions_of(status)["Synced"]["status"] == "True"
        assert await kserve_children(kube, ns, name) == []


async def test_kserve_manager_restart_loses_nothing(kserve: KServeCluster, kserve_namespace: str) -> None:
    """KServe's manager (and with it its admission webhooks) goes away: the provider cannot apply
    the InferenceService, says so and keeps retrying; once the manager is back the Instance goes
    Ready with nothing done twice or left out."""
    kube, ns, name = kserve.kube, kserve_namespace, "iris"
    async with running_manager(kserve.plane, provider(), ns):
        kserve.stack.stop_controller(MANAGER)
        try:
            await kube.create(INSTANCES, predictor_instance(name, ns, on_cluster=True))

            async def refused() -> dict[str, Any] | NotYet:
                synced = conditions_of(await instance_status(kube, ns, name)).get("Synced") or {}
                return synced if synced.get("status") == "False" else NotYet(synced)

            # The provider's first pass and the API server's failed webhook call, on a loaded machine.
            synced = await wait_for(refused, what="the apply refused", timeout=READY_TIMEOUT)
            assert "kserve-webhook-server" in synced["message"] or "webhook" in synced["message"]
            assert await kube.get(INFERENCE_SERVICE, ns, name) is None
        finally:
            await kserve.stack.start_controller(MANAGER)
        status = await wait_phase(kube, ns, name, "Ready", timeout=READY_TIMEOUT)
        assert conditions_of(status)["Synced"]["status"] == "True"
        assert (await connection_secret(kube, ns, name))["port"] == "80"
        deployments, _ = await kube.list_all(DEPLOYMENTS, ns)
        assert [d["metadata"]["name"] for d in deployments] == [f"{name}-predictor"]


async def test_webhooks_run_kserve_rejects_what_it_cannot_serve(kserve: KServeCluster, kserve_namespace: str) -> None:
    """KServe's validating webhook is registered and answers: an InferenceService with two model
    sources is refused at admission, as in a real installation."""
    body: KubeObject = {
        "apiVersion": INFERENCE_SERVICE.api_version,
        "kind": INFERENCE_SERVICE.kind,
        "metadata": {"name": "two-sources", "namespace": kserve_namespace},
        "spec": {"predictor": {"sklearn": {"storageUri": "gs://a"}, "xgboost": {"storageUri": "gs://b"}}},
    }
    with pytest.raises(ApiError) as refused:
        await kserve.kube.create(INFERENCE_SERVICE, body)
    assert refused.value.status == 403
    assert 'admission webhook "inferenceservice.kserve-webhook-server.validator" denied' in refused.value.message
