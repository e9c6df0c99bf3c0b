"""The llm topology's provider as `provider-kserve run` builds it, for the tests against KServe's real
controllers: its environment and the Hugging Face token Secret."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from actors.client import KubeClient
from actors.client.known_resources import SECRETS
from provider.kserve import build_provider
from provider.model import kinds
from tests.support.kserve import KServeCluster
from tests.support.runtime import running_manager

LLM = kinds.LLM_INFERENCE_SERVICE
ENV = {"HF_TOKEN_SECRET_NAME": "hf-token", "POD_MONITOR_INTERVAL": "15s"}
PENDING = "Deployment does not have minimum availability."
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

