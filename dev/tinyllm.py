"""The tiny LLM served on a node-mode cluster (dev/cluster): `make demo-cluster` and the e2e test.

    expected = make_model(cluster, directory)   # a Job writes the model; what it answers
    cluster.kubectl("apply", "-f", str(INSTANCE_FILE))
    api = openai_of(cluster, ready_instance)     # the connection Secret's URL, at its ClusterIP
    api.post("/v1/chat/completions", {...})

make_model puts the files of dev/vllm-cpu/tiny_model.py (a random Llama with its own tokenizer and
chat template, a LoRA adapter for it, and the greedy answers transformers computes from them) on
`directory`, which two hostPath PersistentVolumes pre-bound to the claims of the Instance in
dev/vllm-cpu/tiny-llm.yaml (the model's and the adapter's) share. The script runs in the cluster, in
the vLLM CPU image (`dev/build-image.sh vllm-cpu`: torch, transformers), as a Job. The OpenAI client
speaks plain HTTP to a Service's ClusterIP, as cluster DNS would resolve its name (the node runs no
DNS server), with the name as Host, through kube-proxy's rules.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from cluster.node import NodeCluster
from plane import ControlPlaneError

VLLM_CPU_DIR: Final = Path(__file__).resolve().parent / "vllm-cpu"
MODEL_SCRIPT: Final = VLLM_CPU_DIR / "tiny_model.py"
INSTANCE_FILE: Final = VLLM_CPU_DIR / "tiny-llm.yaml"
JOB: Final = "tiny-model"
CHAT: Final = "/v1/chat/completions"
COMPLETIONS: Final = "/v1/completions"


def vllm_cpu_image() -> str:
    """The name dev/build-image.sh vllm-cpu gives the image: tagged with the locked vLLM version."""
    lock = (VLLM_CPU_DIR / "requirements.lock").read_text()
    match = re.search(r"^vllm-cpu==(\S+)", lock, flags=re.MULTILINE)
    if match is None:
        raise ControlPlaneError(f"{VLLM_CPU_DIR / 'requirements.lock'} pins no vllm-cpu")
    return f"provider-kserve-vllm-cpu:{match.group(1)}"


def instance_manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load(INSTANCE_FILE.read_text())
    return manifest


def claims(instance: dict[str, Any]) -> list[str]:
    """The claims of the Instance's pvc:// model and adapter URIs."""
    parameters = instance["spec"]["components"]["llmEngine"]["parameters"]
    uris = [parameters["modelURI"], *(a["uri"] for a in parameters.get("lora", {}).get("adapters", []))]
    return [uri.removeprefix("pvc://").split("/", 1)[0] for uri in uris if uri.startswith("pvc://")]


def volumes(namespace: str, names: list[str], directory: Path) -> list[dict[str, Any]]:
    """For each claim a hostPath PersistentVolume on `directory` pre-bound to it: written by the
    Job, mounted read-only by KServe into the vLLM pod."""
    objects: list[dict[str, Any]] = []
    for claim in names:
        volume = f"{namespace}-{claim}"
        access = {"accessModes": ["ReadWriteMany"], "storageClassName": ""}
        objects.append({
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume},
            "spec": {
                **access,
                "capacity": {"storage": "100Mi"},
                "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": namespace, "name": claim},
                "hostPath": {"path": str(directory), "type": "Directory"},
            },
        })  # fmt: skip
        objects.append({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace},
            "spec": {**access, "volumeName": volume, "resources": {"requests": {"storage": "100Mi"}}},
        })  # fmt: skip
    return objects


def model_job(namespace: str, claim: str) -> list[dict[str, Any]]:
    """The script as a ConfigMap, and a Job running it in the vLLM image, offline, with the claim
    at /files."""
    script = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": JOB, "namespace": namespace},
        "data": {MODEL_SCRIPT.name: MODEL_SCRIPT.read_text()},
    }
    container = {
        "name": "make",
        "image": vllm_cpu_image(),
        "imagePullPolicy": "Never",
        "command": ["python", f"/script/{MODEL_SCRIPT.name}", "/files"],
        "env": [{"name": "HF_HUB_OFFLINE", "value": "1"}, {"name": "HOME", "value": "/tmp"}],
        "volumeMounts": [{"name": "files", "mountPath": "/files"}, {"name": "script", "mountPath": "/script"}],
    }
    pod = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [
            {"name": "files", "persistentVolumeClaim": {"claimName": claim}},
            {"name": "script", "configMap": {"name": JOB}},
        ],
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": namespace},
        "spec": {"backoffLimit": 0, "template": {"spec": pod}},
    }
    return [script, job]


def apply(cluster: NodeCluster, *objects: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


def make_model(cluster: NodeCluster, directory: Path, timeout: float = 900.0) -> dict[str, Any]:
    """The Instance's namespace, its claims on `directory`, and the Job's files on them; returns
    the answers the model gives (expected.json). Raises ControlPlaneError when the Job fails."""
    instance = instance_manifest()
    namespace = instance["metadata"]["namespace"]
    names = claims(instance)
    directory.chmod(0o755)
    cluster.kubectl("create", "namespace", namespace)
    apply(cluster, *volumes(namespace, names, directory), *model_job(namespace, names[0]))
    deadline = time.monotonic() + timeout
    while True:
        status = json.loads(cluster.kubectl("get", "job", "-n", namespace, JOB, "-o", "json")).get("status") or {}
        if status.get("succeeded"):
            break
        if status.get("failed") or time.monotonic() > deadline:
            logs = cluster.kubectl("logs", "-n", namespace, f"job/{JOB}", "--tail=30", check=False)
            raise ControlPlaneError(f"the Job {namespace}/{JOB} making the tiny model failed:\n{logs}")
        time.sleep(2)
    answers: dict[str, Any] = json.loads((directory / "expected.json").read_text())
    return answers


def delete_model(cluster: NodeCluster) -> None:
    """The Job and the claims (the Instance first: its pods use them)."""
    instance = instance_manifest()
    namespace = instance["metadata"]["namespace"]
    cluster.kubectl("delete", "job,configmap", JOB, "-n", namespace, "--ignore-not-found", "--wait", check=False)
    for claim in claims(instance):
        cluster.kubectl("delete", "pvc", claim, "-n", namespace, "--ignore-not-found", "--timeout=60s", check=False)
        cluster.kubectl("delete", "pv", f"{namespace}-{claim}", "--ignore-not-found", "--timeout=60s", check=False)


def request(model: str, case: dict[str, Any]) -> dict[str, Any]:
    """The request that gets one of expected.json's answers: greedy, as many tokens, and vLLM's
    token ids in the answer."""
    prompt: dict[str, Any] = {key: case[key] for key in ("prompt", "messages") if key in case}
    return {"model": model, **prompt, "max_tokens": len(case["token_ids"]), "temperature": 0, "return_token_ids": True}


# -- the OpenAI API ----------------------------------------------------------------------------------


@dataclass
class Streamed:
    """One answer as server-sent events: its chunks, and when the first token and the end came."""

    chunks: list[dict[str, Any]] = field(default_factory=list)
    first_token_seconds: float = 0.0
    total_seconds: float = 0.0
    done: bool = False

    def text(self) -> str:
        """The completion's `text`s or the chat deltas' `content`s, joined."""
        return "".join(
            choice.get("text") or (choice.get("delta") or {}).get("content") or ""
            for chunk in self.chunks
            for choice in chunk.get("choices") or []
        )

    def token_ids(self) -> list[int]:
        return [t for c in self.chunks for choice in c.get("choices") or [] for t in choice.get("token_ids") or []]

    def usage(self) -> dict[str, Any]:
        usages = [c["usage"] for c in self.chunks if c.get("usage")]
        return usages[-1] if usages else {}


@dataclass(frozen=True)
class OpenAI:
    """The OpenAI-compatible API at `ip`:`port`, with `host` as the Host header."""

    ip: str
    port: int
    host: str

    def _send(self, method: str, path: str, body: dict[str, Any] | None) -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection(self.ip, self.port, timeout=60)
        payload = json.dumps(body) if body is not None else None
        connection.request(method, path, payload, {"Host": self.host, "Content-Type": "application/json"})
        return connection.getresponse()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, str]:
        response = self._send(method, path, body)
        with response:
            return response.status, response.read().decode()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        status, text = self.request("POST", path, body)
        if status != 200:
            raise ControlPlaneError(f"POST {path}: {status} {text}")
        answer: dict[str, Any] = json.loads(text)
        return answer

    def models(self) -> list[str]:
        status, text = self.request("GET", "/v1/models")
        if status != 200:
            raise ControlPlaneError(f"GET /v1/models: {status} {text}")
        return [m["id"] for m in json.loads(text)["data"]]

    def stream(self, path: str, body: dict[str, Any]) -> Streamed:
        """POST with `stream: true` (and the usage chunk), reading the events as they come."""
        streamed = Streamed()
        started = time.monotonic()
        response = self._send("POST", path, {**body, "stream": True, "stream_options": {"include_usage": True}})
        with response:
            if response.status != 200 or not response.getheader("Content-Type", "").startswith("text/event-stream"):
                raise ControlPlaneError(f"POST {path} (stream): {response.status} {response.read().decode()}")
            for raw in response:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                data = line.removeprefix("data:").strip()
                if data == "[DONE]":
                    streamed.done = True
                    break
                chunk = json.loads(data)
                if not streamed.first_token_seconds and any(c.get("token_ids") for c in chunk.get("choices") or []):
                    streamed.first_token_seconds = time.monotonic() - started
                streamed.chunks.append(chunk)
        streamed.total_seconds = time.monotonic() - started
        return streamed


def openai_of(cluster: NodeCluster, instance: dict[str, Any], timeout: float = 60.0) -> OpenAI:
    """The API at the URL of a Ready Instance's connection Secret (`uri`), once kube-proxy routes
    its Service."""
    namespace = instance["metadata"]["namespace"]
    secret = instance["status"]["connectionSecretRef"]["name"]
    data = json.loads(cluster.kubectl("get", "secret", "-n", namespace, secret, "-o", "json"))["data"]
    url = urlsplit(base64.b64decode(data["uri"]).decode())
    if url.scheme != "http" or not url.hostname or not url.hostname.endswith(f".{namespace}.svc.cluster.local"):
        raise ControlPlaneError(f"unexpected connection URL {url.geturl()}")
    service = url.hostname.split(".")[0]
    spec = json.loads(cluster.kubectl("get", "service", "-n", namespace, service, "-o", "json"))["spec"]
    port = int(spec["ports"][0]["port"])
    if url.port != port:
        raise ControlPlaneError(f"the connection URL's port {url.port} is not the Service's {port}")
    deadline = time.monotonic() + timeout
    while not cluster.service_programmed(namespace, service):
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"kube-proxy has no rule for Service {namespace}/{service} after {timeout:.0f}s")
        time.sleep(0.5)
    return OpenAI(spec["clusterIP"], port, url.hostname)
