"""The predictor translation against the real InferenceService CRD on a real API server.

Fixtures (tests/conftest.py): `kube` is a connected actors.client.KubeClient, `namespace` a fresh
namespace, on a control plane without KServe (so the object reads back exactly as applied). The
status mapping is tested on KServe's real controllers (predictor/test_runtime.py, and the runtime
test at the end here) and on shapes recorded from them (tests/unit/provider/test_recorded_kserve_status.py).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import is_owned_by, stamp
from actors.interface import KubeObject
from provider.kserve import KServeProvider
from provider.model import kinds as llm_kinds
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.model.kinds import INFERENCE_SERVICE
from provider.model.names import PROVIDER_NAME
from provider.model.settings import ProviderSettings
from provider.topologies.llm import own_conditions
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.predictor import PredictorTopology
from tests.support.instances import predictor_instance
from tests.support.kserve import KServeCluster
from tests.support.read_back import first_difference
from tests.support.runtime import running_manager
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

PROVIDER = PROVIDER_NAME
TOPOLOGY = PredictorTopology()
NAME = "iris"


def instance_body(namespace: str, parameters: dict[str, Any]) -> KubeObject:
    resources = {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "500m"}}
    return predictor_instance(
        NAME, namespace, on_cluster=True, version="0.20", parameters=parameters, component={"resources": resources}
    )


PARAMETERS: dict[str, Any] = {
    "modelFormat": "sklearn",
    "storageURI": "gs://kfserving-examples/models/sklearn/1.0/model",
    "runtime": "kserve-sklearnserver",
    "runtimeVersion": "v0.20.0",
    "minReplicas": 1,
    "maxReplicas": 3,
}


async def create_instance(kube: KubeClient, namespace: str, parameters: dict[str, Any]) -> KubeObject:
    return await kube.create(INSTANCES, instance_body(namespace, parameters))


def desired(instance: KubeObject) -> KubeObject:
    """What the runtime applies: the translation, stamped with our labels and ownerReference."""
    parsed = Instance.model_validate(instance)
    (obj,) = TOPOLOGY.desired(parsed, TOPOLOGY.validate(parsed, Catalogs()), frozenset())
    return stamp(obj, instance, PROVIDER)


async def apply(kube: KubeClient, obj: KubeObject) -> KubeObject:
    return await kube.apply(INFERENCE_SERVICE, obj, field_manager=PROVIDER, force=True)


async def test_accepted_by_the_crd_and_reads_back_unchanged(kube: KubeClient, namespace: str) -> None:
    instance = await create_instance(kube, namespace, PARAMETERS)
    want = desired(instance)
    await apply(kube, want)

    got = await kube.get(INFERENCE_SERVICE, namespace, NAME)
    assert got is not None
    # No field pruned by the structural schema, none defaulted: the spec is exactly ours.
    assert got["spec"] == want["spec"]
    assert got["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "Standard"
    assert want["metadata"]["labels"].items() <= got["metadata"]["labels"].items()
    assert got["metadata"]["ownerReferences"] == want["metadata"]["ownerReferences"]
    assert is_owned_by(got, instance)


async def test_reapply_is_a_no_op(kube: KubeClient, namespace: str) -> None:
    instance = await create_instance(kube, namespace, PARAMETERS)
    first = await apply(kube, desired(instance))
    second = await apply(kube, desired(instance))
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert second["metadata"]["generation"] == 1


async def test_version_upgrade_updates_in_place(kube: KubeClient, namespace: str) -> None:
    instance = await create_instance(kube, namespace, PARAMETERS)
    before = await apply(kube, desired(instance))

    # A new bundle version alone changes nothing in the object: the apply is a no-op.
    bumped = copy.deepcopy(instance)
    bumped["spec"]["version"] = "0.21"
    same = await apply(kube, desired(bumped))
    assert same["metadata"]["generation"] == before["metadata"]["generation"]

    # A new runtimeVersion is an in-place update of the same object.
    upgraded = copy.deepcopy(instance)
    upgraded["spec"]["components"]["predictor"]["parameters"]["runtimeVersion"] = "v0.20.1"
    after = await apply(kube, desired(upgraded))
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert after["spec"]["predictor"]["model"]["runtimeVersion"] == "v0.20.1"
    assert after["spec"] == desired(upgraded)["spec"]


async def test_removed_parameters_are_pruned_from_the_object(kube: KubeClient, namespace: str) -> None:
    instance = await create_instance(kube, namespace, PARAMETERS)
    await apply(kube, desired(instance))

    trimmed = copy.deepcopy(instance)
    params = trimmed["spec"]["components"]["predictor"]["parameters"]
    for key in ("runtime", "runtimeVersion", "maxReplicas"):
        del params[key]
    after = await apply(kube, desired(trimmed))
    model = after["spec"]["predictor"]["model"]
    assert "runtime" not in model
    assert "runtimeVersion" not in model
    assert "maxReplicas" not in after["spec"]["predictor"]
    assert after["spec"] == desired(trimmed)["spec"]


async def test_delete_cleans_up(kube: KubeClient, namespace: str) -> None:
    """What the runtime does when the object is no longer desired (topology switch, deletion)."""
    instance = await create_instance(kube, namespace, PARAMETERS)
    applied = await apply(kube, desired(instance))
    assert await kube.delete(INFERENCE_SERVICE, namespace, NAME, uid=applied["metadata"]["uid"])
    # Without the KServe controller there is no finalizer: the object is gone at once.
    assert await kube.get(INFERENCE_SERVICE, namespace, NAME) is None
    assert not await kube.delete(INFERENCE_SERVICE, namespace, NAME)


async def test_instance_deletion_garbage_collects_the_inference_service(kube: KubeClient, namespace: str) -> None:
    """The controller ownerReference is right: Kubernetes' garbage collector removes the object."""
    instance = await create_instance(kube, namespace, PARAMETERS)
    await apply(kube, desired(instance))
    await kube.delete(INSTANCES, namespace, NAME)

    async def collected() -> bool:
        return await kube.get(INFERENCE_SERVICE, namespace, NAME) is None

    await wait_for(collected, timeout=60)


# -- through the real runtime -------------------------------------------------------------------


LLM_ONLY_CONDITIONS = {
    own_conditions.HF_TOKEN,
    own_conditions.METRICS,
    own_conditions.EXTERNAL_ACCESS,
    own_conditions.AI_GATEWAY_ROUTE,
    own_conditions.TOKEN_LIMIT,
}


def kserve_provider() -> KServeProvider:
    # Explicit handlers: independent of whether the registry line for predictor is in yet.
    settings = ProviderSettings()
    return KServeProvider(settings, topologies={"llm": LlmTopology(settings), "predictor": PredictorTopology(settings)})


async def phase_of(kube: KubeClient, namespace: str) -> str:
    obj = await kube.get(INSTANCES, namespace, NAME) or {}
    return str((obj.get("status") or {}).get("phase") or "")


@pytest.mark.kserve
async def test_runtime_reconciles_status_and_topology_switch(kserve: KServeCluster, kserve_namespace: str) -> None:
    """Against KServe's controllers: create → InferenceService → Ready by KServe's word, with
    details; switch to llm → the InferenceService is pruned; switch back → the llm objects are
    pruned; delete → all gone."""
    kube, namespace, controlplane = kserve.kube, kserve_namespace, kserve.plane
    body = instance_body(namespace, PARAMETERS)
    del body["spec"]["version"]  # no Provider CR here, so no bundle to check against
    predictor_component = body["spec"]["components"]["predictor"]

    async with running_manager(controlplane, kserve_provider(), namespace):
        created = await kube.create(INSTANCES, body)

        async def isvc() -> KubeObject | None:
            return await kube.get(INFERENCE_SERVICE, namespace, NAME)

        # The first object on a cluster whose KServe webhooks default and validate it: slow on a
        # busy machine.
        applied = await wait_for(isvc, timeout=120, what="the InferenceService")
        # KServe's defaulting webhook adds to the spec; everything we set is there as we set it.
        assert first_difference(desired(created)["spec"], applied["spec"]) is None
        assert is_owned_by(applied, created)

        async def ready() -> bool:
            return await phase_of(kube, namespace) == "Ready"

        await wait_for(ready, timeout=120)
        instance = await kube.get(INSTANCES, namespace, NAME)
        assert instance is not None
        conditions = {c["type"]: c for c in instance["status"]["conditions"]}
        assert conditions["KServeReady"]["status"] == "True"
        assert conditions["ConnectionDetailsReady"]["status"] == "True"
        secret = await kube.get(SECRETS, namespace, f"{NAME}-conn")
        assert secret is not None
        assert base64.b64decode(secret["data"]["host"]).decode() == f"{NAME}-predictor.{namespace}.svc.cluster.local"

        # predictor → llm
        llm_engine = {"type": "vllm", "parameters": {"modelURI": "hf://facebook/opt-125m"}}
        await kube.patch(
            INSTANCES,
            namespace,
            NAME,
            {"spec": {"topology": {"type": "llm"}, "components": {"predictor": None, "llmEngine": llm_engine}}},
        )

        async def switched_to_llm() -> bool:
            llm = await kube.get(llm_kinds.LLM_INFERENCE_SERVICE, namespace, NAME)
            return llm is not None and await isvc() is None

        # The InferenceService goes once KServe's own finalizer has cleaned up after it.
        await wait_for(switched_to_llm, timeout=120, what="the LLMInferenceService, and the InferenceService gone")

        # llm → predictor
        await kube.patch(
            INSTANCES,
            namespace,
            NAME,
            {
                "spec": {
                    "topology": {"type": "predictor"},
                    "components": {"llmEngine": None, "predictor": predictor_component},
                }
            },
        )

        async def switched_back() -> bool:
            if await isvc() is None:
                return False
            for kind in llm_kinds.OWNED:
                items, _ = await kube.list_all(kind, namespace)
                if any(is_owned_by(item, created) for item in items):
                    return False
            return True

        # Likewise the llm objects, through KServe's finalizers.
        await wait_for(switched_back, timeout=120, what="the InferenceService, and the llm objects gone")

        async def predictor_status_again() -> bool:
            """The new InferenceService Ready by KServe's word; none of the llm topology's conditions."""
            obj = await kube.get(INSTANCES, namespace, NAME) or {}
            status = obj.get("status") or {}
            types = {c["type"] for c in status.get("conditions") or []}
            fresh = "KServePredictorReady" in types and not types & LLM_ONLY_CONDITIONS
            return status.get("phase") == "Ready" and fresh

        await wait_for(predictor_status_again, timeout=120)

        # Deletion: the runtime removes what it owns, then its finalizer.
        await kube.delete(INSTANCES, namespace, NAME)

        async def all_gone() -> bool:
            return await kube.get(INSTANCES, namespace, NAME) is None and await isvc() is None

        await wait_for(all_gone, timeout=120, what="the Instance and the InferenceService gone")
