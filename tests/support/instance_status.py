"""What the provider reports on an Instance (its status, its connection Secret), and waiting for it."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.interface import KubeObject
from tests.support.waiting import NotYet, wait_for


def workload_url(name: str, namespace: str) -> str:
    return f"http://{name}-kserve-workload-svc.{namespace}.svc.cluster.local"


async def instance_status(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    obj = await kube.get(INSTANCES, namespace, name) or {}
    status: dict[str, Any] = obj.get("status") or {}
    return status


def conditions_of(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


def rolled_out_reported(status: dict[str, Any]) -> bool:
    """Ready, with KServe's predictor condition naming the Deployment's completed rollout
    (NewReplicaSetAvailable). The provider reports Ready as soon as KServe's Ready is True, which
    it may be while PredictorReady still says MinimumReplicasAvailable: a test asserting the
    completed rollout waits for this, not for Ready alone."""
    predictor = conditions_of(status).get("KServePredictorReady") or {}
    return status.get("phase") == "Ready" and predictor.get("reason") == "NewReplicaSetAvailable"


async def wait_phase(
    kube: KubeClient, namespace: str, name: str, phase: str, message: str | None = None, timeout: float = 30.0
) -> dict[str, Any]:
    def reached(status: dict[str, Any]) -> bool:
        return status.get("phase") == phase and (message is None or status.get("message") == message)

    return await wait_status(kube, namespace, name, reached, f"{phase} {message!r}", timeout)


async def wait_status(
    kube: KubeClient,
    namespace: str,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    wanted: str,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """The Instance's status once `check` holds (a status that was already right before a change
    passes `wait_phase` at once: check what the change alters)."""

    async def reached() -> dict[str, Any] | NotYet:
        status = await instance_status(kube, namespace, name)
        return status if check(status) else NotYet(status)

    return await wait_for(reached, what=f"{name} to reach {wanted}", timeout=timeout)


async def connection_secret(kube: KubeClient, namespace: str, name: str) -> dict[str, str]:
    secret = await kube.get(SECRETS, namespace, f"{name}-conn")
    if secret is None:
        return {}
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


def secret_text(secret: KubeObject, key: str) -> str:
    """One key of a Secret as read from the API server, decoded."""
    return base64.b64decode(secret["data"][key]).decode()
