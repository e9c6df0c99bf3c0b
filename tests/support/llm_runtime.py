"""The llm topology's provider as `provider-kserve run` builds it, for the tests against KServe's real
controllers: its environment, the Hugging Face token Secret, and a spy on whom a shared actor wakes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from actors import Wake
from actors.client import KubeClient
from actors.client.known_resources import SECRETS
from actors.interface import KubeObject
from provider.kserve import build_provider
from provider.model import kinds
from tests.support.kserve import KServeCluster
from tests.support.runtime import running_manager

LLM = kinds.LLM_INFERENCE_SERVICE
ENV = {"HF_TOKEN_SECRET_NAME": "hf-token", "POD_MONITOR_INTERVAL": "15s"}
PENDING = "Deployment does not have minimum availability."


def held_for_gpus(status: dict[str, Any]) -> bool:
    """Provisioning, and the message says what holds the pod back: the scheduler's own words (more
    GPUs than the Node has), not KServe's "minimum availability"."""
    message = str(status.get("message", ""))
    return (
        status.get("phase") == "Provisioning"
        and message.startswith("llmEngine: Unschedulable: 0/")
        and "Insufficient nvidia.com/gpu" in message
    )


READY_TIMEOUT = 120.0


async def hf_token_secret(kube: KubeClient, namespace: str) -> None:
    """The Secret the chart's hfToken.secretName names, as a user creates it: KServe reads it for
    the model pods (and refuses to build them without it)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": ENV["HF_TOKEN_SECRET_NAME"], "namespace": namespace},
        "stringData": {"HF_TOKEN": "hf_test"},
    }
    await kube.create(SECRETS, secret)


@asynccontextmanager
async def provider_running(kserve: KServeCluster, namespace: str) -> AsyncIterator[None]:
    """The provider as `provider-kserve run` builds it from ENV, watching `namespace`, with the
    Hugging Face token Secret in place."""
    await hf_token_secret(kserve.kube, namespace)
    client = await KubeClient.connect(str(kserve.plane.kubeconfig))
    provider, shared = build_provider(ENV, client)
    async with running_manager(kserve.plane, provider, namespace, shared=shared, client=client):
        yield


@dataclass(frozen=True)
class Woken:
    """One call of a shared actor's `wake`: the Instances it chose (`namespace/name`) and how many
    the manager says it woke (the same number, or the spy did not see what the manager did)."""

    keys: frozenset[str]
    count: int


@dataclass
class WakeSpy:
    """Whom a shared actor's changes woke, one `Woken` per `wake` call. Counting reconciles cannot
    tell this: any Instance may legitimately be reconciled at any time (KServe's status writes,
    watch events, polls), but only the Instances the actor's change concerns may be woken by it."""

    calls: list[Woken] = field(default_factory=list)

    def wrap(self, wake: Wake) -> Wake:
        """`wake`, recording the Instances its predicate chose: the manager wakes exactly those
        (`Manager.wake_matching`)."""

        def recording(predicate: Callable[[KubeObject], bool]) -> int:
            keys: set[str] = set()

            def chosen(obj: KubeObject) -> bool:
                hit = predicate(obj)
                if hit:
                    meta = obj.get("metadata") or {}
                    keys.add(f"{meta.get('namespace')}/{meta.get('name')}")
                return hit

            count = wake(chosen)
            self.calls.append(Woken(frozenset(keys), count))
            return count

        return recording
