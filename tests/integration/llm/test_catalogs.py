"""The chart's catalogs through the real runtime: a LoRA catalog file the provider polls (as a
mounted ConfigMap that `helm upgrade` rewrites) and the model catalog's gated entries.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from actors import Wake
from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject
from provider.kserve import build_provider
from provider.model import kinds
from provider.shared_actors.catalog_actors import LoraCatalogActor
from provider.topologies.llm import own_conditions
from tests.support.instance_status import conditions_of, wait_phase
from tests.support.instances import llm_instance
from tests.support.kserve import KServeCluster
from tests.support.llm_runtime import READY_TIMEOUT, WakeSpy, Woken
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ADAPTER = "qwen2.5-0.5b-sft"
GATED_URI = "hf://meta-llama/Llama-3.1-8B-Instruct"
MODEL_CATALOG = [
    {"label": "Llama 3.1 8B Instruct", "uri": GATED_URI, "gated": True},
    {"label": "SmolLM2 135M Instruct", "uri": "hf://HuggingFaceTB/SmolLM2-135M-Instruct"},
]
UNKNOWN_ADAPTER = (
    f'llmEngine.parameters.loraSlot1 references unknown adapter "{ADAPTER}" (add it to chart loraAdapters)'
)


def write_atomically(path: Path, entries: list[dict[str, Any]]) -> None:
    """As kubelet swaps a mounted ConfigMap: the reader sees the old or the new file, never half."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries))
    tmp.replace(path)


async def test_catalog_changes_revalidate_the_instances_that_use_them(
    kserve: KServeCluster, kserve_namespace: str, tmp_path: Path
) -> None:
    """The adapter is served from the catalog file; removing it from the file fails the Instance
    with the validation message within a few polls (and wakes no other Instance); restoring it
    recovers without an edit. A gated catalog model without an HF token gets ModelAccess=False."""
    full = json.loads((EXAMPLES / "lora-catalog.json").read_text())
    catalog = tmp_path / "lora-catalog.json"
    write_atomically(catalog, full)
    env = {"LORA_ADAPTER_CATALOG_FILE": str(catalog), "MODEL_CATALOG": json.dumps(MODEL_CATALOG)}
    kube, namespace, controlplane = kserve.kube, kserve_namespace, kserve.plane
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    provider, shared = build_provider(env, client)
    adapters = shared.get(LoraCatalogActor)
    poll = adapters.poll_seconds
    wakes = spy_wakes(adapters)

    lora = llm_instance(
        "lora",
        namespace,
        on_cluster=True,
        engine={
            "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
            "modelName": "qwen2.5-0.5b-instruct",
            "loraDeployment": "enabled",
            "loraSlot1": ADAPTER,
        },
    )
    plain = llm_instance("plain", namespace, on_cluster=True)
    gated = llm_instance("gated", namespace, on_cluster=True, engine={"modelURI": GATED_URI, "computeProfile": "gpu"})
    gated["spec"]["components"]["llmEngine"]["resources"]["limits"]["nvidia.com/gpu"] = "1"

    async with running_manager(controlplane, provider, namespace, shared=shared, client=client):
        for body in (lora, plain, gated):
            await kube.create(INSTANCES, body)

        async def llmisvc(name: str) -> KubeObject | None:
            return await kube.get(kinds.LLM_INFERENCE_SERVICE, namespace, name)

        def created(name: str) -> Callable[[], Awaitable[KubeObject | None]]:
            return lambda: llmisvc(name)

        # The first of three Instances the provider applies on a loaded machine: KServe's timeout.
        served = await wait_for(created("lora"), timeout=READY_TIMEOUT)
        sft = next(a for a in full if a["name"] == ADAPTER)
        assert served["spec"]["model"]["lora"]["adapters"] == [{"name": ADAPTER, "uri": sft["uri"]}]
        # All Ready (KServe runs them): the conditions below are those of a Ready Instance.
        for name in ("lora", "plain", "gated"):
            await wait_phase(kube, namespace, name, "Ready", timeout=READY_TIMEOUT)

        # The gated model, and no HF token configured: said up front, not as a 401 in a pod log.
        status = await wait_phase(kube, namespace, "gated", "Ready")
        access = conditions_of(status)[own_conditions.MODEL_ACCESS]
        assert (access["status"], access["reason"]) == ("False", "HuggingFaceTokenMissing")
        assert access["message"] == (
            f'Model "Llama 3.1 8B Instruct" ({GATED_URI}) is gated in the model catalog, but the provider chart '
            "configures no Hugging Face token Secret (hfToken.secretName): its download will be refused"
        )
        # A public model carries no such condition.
        assert own_conditions.MODEL_ACCESS not in conditions_of(await wait_phase(kube, namespace, "plain", "Ready"))

        # Only the Instance that uses the LoRA catalog is woken by its changes. (Not a count of
        # reconciles: KServe's late status writes and the provider's resync may reconcile any of
        # them at any time; what the catalog must not do is wake the others.)
        only_lora = Woken(frozenset({f"{namespace}/lora"}), 1)

        async def catalog_woke(calls: int) -> list[Woken] | NotYet:
            return list(wakes.calls) if len(wakes.calls) >= calls else NotYet(wakes.calls)

        # helm upgrade drops the adapter from the catalog: the actor sees it within a few polls
        # (the claim on time is the poll's), then the woken Instance fails validation.
        write_atomically(catalog, [a for a in full if a["name"] != ADAPTER])
        await wait_for(lambda: catalog_woke(1), what="the LoRA catalog to notice the change", timeout=3 * poll)
        status = await wait_phase(kube, namespace, "lora", "Failed", UNKNOWN_ADAPTER)
        valid = conditions_of(status)["Valid"]
        assert (valid["status"], valid["reason"], valid["message"]) == ("False", "ValidationFailed", UNKNOWN_ADAPTER)
        assert wakes.calls == [only_lora]
        # The objects stay while the Instance is Failed: a catalog typo must not take a model down.
        assert await llmisvc("lora") is not None

        # ... and puts it back: the Instance recovers without an edit.
        write_atomically(catalog, full)
        await wait_for(lambda: catalog_woke(2), what="the LoRA catalog to notice the restore", timeout=3 * poll)
        await wait_phase(kube, namespace, "lora", "Ready")
        assert wakes.calls == [only_lora, only_lora]
        restored = await llmisvc("lora")
        assert restored is not None
        assert restored["spec"]["model"]["lora"]["adapters"] == [{"name": ADAPTER, "uri": sft["uri"]}]
        # The very object served before: kept while Failed, not deleted and made again.
        assert restored["metadata"]["uid"] == served["metadata"]["uid"]


def spy_wakes(actor: LoraCatalogActor) -> WakeSpy:
    """Whom the actor's reloads wake (wraps the `wake` its poll hands `reload`)."""
    wakes = WakeSpy()
    inner = actor.reload

    def reload(wake: Wake) -> int:
        return inner(wakes.wrap(wake))

    actor.reload = reload  # type: ignore[method-assign]
    return wakes
