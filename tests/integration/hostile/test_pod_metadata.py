"""Issue 29, finding 2: labels and annotations that reach the pods are held to Pod Security too.

KServe v0.20 copies `spec.annotations` and `spec.labels` of an LLMInferenceService (and of the
configs it is based on, the Instance's inline config among them) onto its pod templates, and the
prefill and scheduler ones onto theirs. Before, `annotations: {container.apparmor.security.beta.
kubernetes.io/main: unconfined}` in the inline config was Valid and applied, while the same setting
through `securityContext.appArmorProfile` was refused. Now the annotations are checked as
Kubernetes' own admission checks them (AppArmor and seccomp), and labels may not take over the
selectors KServe and the provider use: each is refused with the field that carries it, by the
reconciler and by /validate alike, and nothing is applied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from plane import free_port
from provider.model.kinds import LLM_INFERENCE_SERVICE, LLM_INFERENCE_SERVICE_CONFIG
from tests.support.convergence import wait_converged
from tests.support.instances import llm_instance
from tests.support.provider_process import ProviderProcess, write_kubeconfig
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

# Inline configs and the message each must be refused with (the namespace has no label: the chart's
# default level, restricted).
REFUSED = {
    "apparmor": (
        "annotations: {container.apparmor.security.beta.kubernetes.io/main: unconfined}",
        'llmEngine.parameters.config.annotations["container.apparmor.security.beta.kubernetes.io/main"]: '
        "AppArmor profile 'unconfined' is not allowed by the Pod Security Standard 'restricted' of this namespace",
    ),
    "seccomp": (
        "prefill: {annotations: {seccomp.security.alpha.kubernetes.io/pod: unconfined}}",
        'llmEngine.parameters.config.prefill.annotations["seccomp.security.alpha.kubernetes.io/pod"]: '
        "seccomp profile 'unconfined' is not allowed by the Pod Security Standard 'restricted' of this namespace",
    ),
    "selector": (
        "labels: {app.kubernetes.io/name: someone-else}",
        'llmEngine.parameters.config.labels["app.kubernetes.io/name"]: '
        "the label is KServe's or the provider's (they select pods by it)",
    ),
}


async def test_pod_labels_and_annotations_are_held_to_pod_security(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    validation = free_port()
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    args = ["--validation-port", str(validation)]
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", args=args)
    bodies = {}
    for name, (config, _) in REFUSED.items():
        body = llm_instance(name, namespace, on_cluster=True, engine={"config": config})
        bodies[name] = body
        await kube.create(INSTANCES, body)
    allowed = "annotations: {container.apparmor.security.beta.kubernetes.io/main: runtime/default}\nlabels: {team: a}"
    await kube.create(INSTANCES, llm_instance("allowed", namespace, on_cluster=True, engine={"config": allowed}))
    try:
        await provider.start()
        # The first wait after a cold start of the process (`provider-kserve run`) on a busy machine.
        await wait_converged(kube, namespace, ["allowed"], timeout=120)

        async def all_failed() -> dict[str, str] | None:
            messages = {}
            for name in REFUSED:
                status = ((await kube.get(INSTANCES, namespace, name)) or {}).get("status") or {}
                if status.get("phase") != "Failed":
                    return None
                messages[name] = status.get("message", "")
            return messages

        messages = await wait_for(all_failed, timeout=60, what="the refused Instances Failed")
        for name, (_, message) in REFUSED.items():
            assert messages[name] == message
            assert await kube.get(LLM_INFERENCE_SERVICE_CONFIG, namespace, f"{name}-config") is None
            assert await kube.get(LLM_INFERENCE_SERVICE, namespace, name) is None
            status, answer = await fetch_validate(validation, bodies[name])
            assert status == 200 and json.loads(answer) == {"allowed": False, "message": message}
    finally:
        await provider.stop()


async def fetch_validate(port: int, body: dict[str, Any]) -> tuple[int, str]:
    url = f"http://127.0.0.1:{port}/validate"
    async with aiohttp.ClientSession() as session, session.post(url, json={"object": body}) as answer:
        return answer.status, await answer.text()
