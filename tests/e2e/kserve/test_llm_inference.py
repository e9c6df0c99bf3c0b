"""The `llm` topology answering for real: an Instance with computeProfile cpu (dev/vllm-cpu/tiny-llm.yaml),
reconciled by the provider's pod (installed by the chart, whose cpuProfile.image names the vLLM CPU
image built by `dev/build-image.sh vllm-cpu`, as a user with a private registry would set it), turned
by KServe's real llmisvc controller into a Deployment whose vLLM pod serves a tiny model this test
makes on PersistentVolumes, answering OpenAI requests through the Service of the connection Secret
(the ClusterIP's kube-proxy rules, from the host).

Nothing answers but that model: its weights are random (from a fixed seed), its tokenizer and chat
template its own, and every answer is compared token for token with the greedy continuation
transformers computes from the same weights in float32 (dev/vllm-cpu/tiny_model.py, run in the
cluster by a Job in the vLLM image, so the test's venv needs no torch: dev/tinyllm.py). Likewise its
LoRA adapter, which KServe mounts from a claim of its own (`pvc://`).

KServe's controllers run in the chart's release namespace (conftest.py), so that the llmisvc
controller takes its presets, the CPU profile among them, from the chart. The Instance asks for
float32 through KServe's VLLM_ADDITIONAL_ARGS in its inline config (vLLM would run a float32 model
in bfloat16 on this CPU), which leaves the CPU profile's default args in place.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

import tinyllm
from cluster.node import NodeCluster
from tests.e2e.llm_support import as_logged_by_vllm, cpu_profile_default_args, version_probe_seconds, words
from tests.e2e.support import (
    MEASUREMENTS,
    RELEASE_NAMESPACE,
    get_json,
    kubectl,
    provider_writes,
    synced,
    the_leader,
)
from tests.support.waiting import NotYet, wait_for_sync
from tinyllm import CHAT, COMPLETIONS, OpenAI, request

MANIFEST = tinyllm.instance_manifest()
NAMESPACE = MANIFEST["metadata"]["namespace"]
INSTANCE = MANIFEST["metadata"]["name"]
PARAMETERS = MANIFEST["spec"]["components"]["llmEngine"]["parameters"]
MODEL_NAME = PARAMETERS["modelName"]
(ADAPTER,) = [adapter["name"] for adapter in PARAMETERS["lora"]["adapters"]]
RENAMED = f"{MODEL_NAME}-2"
FLOAT32 = "--dtype=float32"  # what the inline config passes in VLLM_ADDITIONAL_ARGS
WORKLOAD_PODS = f"app.kubernetes.io/name={INSTANCE},kserve.io/component=workload"
PATHS = {"completions": COMPLETIONS, "chat": CHAT}


@pytest.fixture(scope="module")
def expected(node: NodeCluster) -> Iterator[dict[str, Any]]:
    """The tiny model and adapter on their claims (a directory of the host, removed afterwards),
    and their answers."""
    directory = Path(tempfile.mkdtemp(prefix="provider-kserve-node-llm-"))
    try:
        started = time.monotonic()
        answers = tinyllm.make_model(node, directory)
        MEASUREMENTS["llm_model_job_seconds"] = round(time.monotonic() - started, 1)
        MEASUREMENTS["llm_model_kib"] = round(sum(p.stat().st_size for p in (directory / "model").iterdir()) / 1024)
        yield answers
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _vllm_restarted(node: NodeCluster) -> None:
    """Fails at once, with vLLM's last words, when its container has exited (it would only restart)."""
    for pod in get_json(node, "pods", "-n", NAMESPACE, "-l", WORKLOAD_PODS)["items"]:
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            if container["name"] == "main" and container.get("restartCount"):
                name = pod["metadata"]["name"]
                logs = kubectl(node, "logs", "-n", NAMESPACE, name, "-c", "main", "--previous", "--tail=40",
                               check=False)  # fmt: skip
                raise AssertionError(f"vLLM exited in {name}:\n{logs}")


def _ready(node: NodeCluster) -> dict[str, Any] | None:
    _vllm_restarted(node)
    instance = get_json(node, "instance", "-n", NAMESPACE, INSTANCE)
    status = instance.get("status") or {}
    if status.get("phase") == "Failed":
        raise AssertionError(f"the Instance failed: {status.get('message')}")
    return instance if status.get("phase") == "Ready" and synced(instance) else None


def vllm_pod(node: NodeCluster) -> dict[str, Any]:
    pods = get_json(node, "pods", "-n", NAMESPACE, "-l", WORKLOAD_PODS)["items"]
    (pod,) = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return dict(pod)


def main_container(pod: dict[str, Any]) -> dict[str, Any]:
    (container,) = [c for c in pod["spec"]["containers"] if c["name"] == "main"]
    return dict(container)


def _remember_vllm_memory(node: NodeCluster) -> None:
    for pod in get_json(node, "pods", "-n", NAMESPACE, "-l", WORKLOAD_PODS)["items"]:
        peak = node.pod_peak_memory_bytes(pod["metadata"]["uid"]) / 2**20
        MEASUREMENTS["vllm_pod_peak_mib"] = max(MEASUREMENTS.get("vllm_pod_peak_mib", 0), round(peak))


@pytest.fixture(scope="module")
def served(
    node: NodeCluster, release: None, vllm_image_imported: Future[None], expected: dict[str, Any]
) -> Iterator[OpenAI]:
    """With the chart installed (its cpuProfile.image the vLLM image: the package's `release`) and
    the image in the node, the Instance applied and Ready, and its first token; the API at the
    connection Secret's URL. Everything is deleted again afterwards."""
    vllm_image_imported.result(timeout=1800)
    started = time.monotonic()
    kubectl(node, "apply", "-f", str(tinyllm.INSTANCE_FILE))
    try:
        ready = wait_for_sync(
            functools.partial(_ready, node), what="the Instance Ready through KServe", timeout=900, interval=1
        )
        MEASUREMENTS["llm_apply_to_ready_seconds"] = round(time.monotonic() - started, 1)
        api = tinyllm.openai_of(node, ready)
        asked = time.monotonic()
        first = api.stream(CHAT, {**request(MODEL_NAME, expected["base"]["chat"][0]), "max_tokens": 1})
        MEASUREMENTS["llm_apply_to_first_token_seconds"] = round(asked - started + first.first_token_seconds, 1)
        yield api
    finally:
        _remember_vllm_memory(node)
        kubectl(node, "delete", "instance", INSTANCE, "-n", NAMESPACE, "--ignore-not-found", "--timeout=180s",
                check=False)  # fmt: skip
        tinyllm.delete_model(node)


def assert_the_models_answer(answer: dict[str, Any], kind: str, case: dict[str, Any]) -> None:
    (choice,) = answer["choices"]
    text = choice["text"] if kind == "completions" else choice["message"]["content"]
    assert choice["token_ids"] == case["token_ids"], (text, case["text"])
    assert words(text) == words(case["text"])
    assert answer["usage"]["prompt_tokens"] == case["prompt_tokens"]
    assert answer["usage"]["completion_tokens"] == len(case["token_ids"])


# -- the tests, in order: the last one renames the served model ------------------------------------


def test_ready_is_kserves_word_on_the_vllm_pod(node: NodeCluster, served: OpenAI) -> None:
    pod = vllm_pod(node)
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])
    llmisvc = get_json(node, "llminferenceservices.serving.kserve.io", "-n", NAMESPACE, INSTANCE)
    kserve = {c["type"]: c["status"] for c in llmisvc["status"]["conditions"]}
    assert kserve["Ready"] == "True" and kserve["WorkloadsReady"] == "True", kserve
    instance = get_json(node, "instance", "-n", NAMESPACE, INSTANCE)
    conditions = {c["type"]: c["status"] for c in instance["status"]["conditions"]}
    assert conditions["KServeReady"] == "True", conditions
    # The chart's CPU preset (in the release namespace, where the controller looks) was merged, and
    # the Instance's own inline config after it.
    applied = {(c["name"], c.get("namespace")) for c in llmisvc["status"]["appliedConfigs"]}
    assert ("kserve-config-llm-cpu", RELEASE_NAMESPACE) in applied and (f"{INSTANCE}-config", NAMESPACE) in applied
    assert main_container(pod)["image"] == tinyllm.vllm_cpu_image()
    writers = {w["pod"] for w in provider_writes(node) if w["objectRef"].get("resource") == "llminferenceservices"}
    assert writers == {the_leader(node)["metadata"]["name"]}


def test_models_lists_the_model_and_its_adapter(served: OpenAI) -> None:
    models = served.models()
    assert MODEL_NAME in models and ADAPTER in models
    assert f"publishers/{NAMESPACE}/models/{MODEL_NAME}" in models  # the name KServe's routing uses


@pytest.mark.parametrize("kind", ["chat", "completions"])
def test_the_answers_are_the_tiny_models(served: OpenAI, expected: dict[str, Any], kind: str) -> None:
    for case in expected["base"][kind]:
        body = request(MODEL_NAME, case)
        answer = served.post(PATHS[kind], body)
        assert_the_models_answer(answer, kind, case)
        if kind == "chat" and "llm_chat_request" not in MEASUREMENTS:
            MEASUREMENTS["llm_chat_request"] = json.dumps({k: v for k, v in body.items() if k != "return_token_ids"})
            MEASUREMENTS["llm_chat_answer"] = json.dumps(answer["choices"][0]["message"]["content"])


@pytest.mark.parametrize("kind", ["chat", "completions"])
def test_streamed_answers_are_the_same_tokens(served: OpenAI, expected: dict[str, Any], kind: str) -> None:
    first_token, whole = [], []
    for case in expected["base"][kind]:
        streamed = served.stream(PATHS[kind], request(MODEL_NAME, case))
        assert streamed.done, "the stream did not end with [DONE]"
        assert streamed.token_ids() == case["token_ids"]
        assert words(streamed.text()) == words(case["text"])
        usage = streamed.usage()
        assert usage["prompt_tokens"] == case["prompt_tokens"] and usage["completion_tokens"] == len(case["token_ids"])
        first_token.append(streamed.first_token_seconds)
        whole.append(streamed.total_seconds)
    MEASUREMENTS[f"llm_{kind}_stream_first_token_ms"] = round(statistics.median(first_token) * 1000)
    MEASUREMENTS[f"llm_{kind}_stream_16_tokens_ms"] = round(statistics.median(whole) * 1000)


def test_the_lora_adapter_answers_as_merged_offline(served: OpenAI, expected: dict[str, Any]) -> None:
    for kind in ("chat", "completions"):
        for base, case in zip(expected["base"][kind], expected["adapter"][kind], strict=True):
            assert_the_models_answer(served.post(PATHS[kind], request(ADAPTER, case)), kind, case)
            assert case["token_ids"] != base["token_ids"]


def test_metrics_are_where_the_pod_monitor_points(node: NodeCluster, served: OpenAI) -> None:
    (monitor,) = get_json(node, "podmonitors.monitoring.coreos.com", "-n", NAMESPACE)["items"]
    pod = vllm_pod(node)
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items(), (selector, pod["metadata"]["labels"])
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["portNumber"] in {p["containerPort"] for p in main_container(pod).get("ports") or []}
    ip = pod["status"]["podIP"]
    status, text = OpenAI(ip, endpoint["portNumber"], ip).request("GET", endpoint["path"])
    assert status == 200
    assert f'vllm:num_requests_running{{engine="0",model_name="{MODEL_NAME}"}}' in text
    counts = [line for line in text.splitlines() if line.startswith("vllm:time_to_first_token_seconds_count")]
    assert counts and float(counts[0].split()[-1]) > 0, counts


def test_kv_cache_and_the_cpu_profiles_args_reach_vllm(node: NodeCluster, served: OpenAI) -> None:
    pod = vllm_pod(node)
    container = main_container(pod)
    env = {e["name"]: e.get("value") for e in container.get("env") or []}
    assert env["VLLM_CPU_KVCACHE_SPACE"] == str(PARAMETERS["kvCacheSpaceGi"])
    assert env["VLLM_ADDITIONAL_ARGS"] == FLOAT32
    defaults = cpu_profile_default_args()
    assert defaults and all(arg in container["args"] for arg in defaults), container["args"]
    log = kubectl(node, "logs", "-n", NAMESPACE, pod["metadata"]["name"], "-c", "main")
    (startup,) = [line for line in log.splitlines() if "non-default args:" in line]
    for arg in (*defaults, FLOAT32, f"--max-lora-rank={PARAMETERS['lora']['maxRank']}"):
        assert as_logged_by_vllm(arg) in startup, (arg, startup)
    assert f"Explicitly set ({float(PARAMETERS['kvCacheSpaceGi']):.1f}/" in log  # the KV cache vLLM reserved
    # KServe's template read the version the image records (dev/vllm-cpu/vllm_alias.py), which
    # the image's `vllm --version` answers without importing vLLM (fast_version.py).
    assert f"vllm version='{tinyllm.vllm_cpu_image().rsplit(':', 1)[1]}+cpu'" in log
    timestamped = kubectl(node, "logs", "-n", NAMESPACE, pod["metadata"]["name"], "-c", "main", "--timestamps")
    (status,) = [c for c in pod["status"]["containerStatuses"] if c["name"] == "main"]
    MEASUREMENTS["llm_version_probe_seconds"] = version_probe_seconds(timestamped, status)


def test_renaming_the_model_rolls_the_pod(node: NodeCluster, served: OpenAI, expected: dict[str, Any]) -> None:
    _remember_vllm_memory(node)
    before = vllm_pod(node)["metadata"]["name"]
    generation = get_json(node, "instance", "-n", NAMESPACE, INSTANCE)["metadata"]["generation"]
    patch = {"spec": {"components": {"llmEngine": {"parameters": {"modelName": RENAMED}}}}}
    started = time.monotonic()
    with watched_phases(node) as watched:
        kubectl(node, "patch", "instance", INSTANCE, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch))
        seen = _wait_rolled(node, served, generation)
    # The provider says a rollout is under way (Updating, from the pass that applied the new
    # generation until KServe reconciled it) and never falls back to Provisioning. A watch sees it
    # however short it is.
    phases = [phase for seen_at, phase in watched if seen_at > generation]
    assert "Updating" in phases and "Provisioning" not in phases, (phases, seen)
    assert phases[-1] == "Ready", (phases, seen)
    MEASUREMENTS["llm_rename_watched_phases"] = phases
    after = wait_for_sync(
        functools.partial(_served_by_the_new_pod_alone, node, served, before),
        what="the old pod gone and the Service routing to the new pod alone",
        timeout=300,
        interval=1,
    )
    MEASUREMENTS["llm_rename_to_answer_seconds"] = round(time.monotonic() - started, 1)
    MEASUREMENTS["llm_rename_phases"] = seen
    assert f'--served-model-name "{RENAMED}"' in " ".join(main_container(after)["command"])
    llmisvc = get_json(node, "llminferenceservices.serving.kserve.io", "-n", NAMESPACE, INSTANCE)
    assert llmisvc["status"]["observedGeneration"] == llmisvc["metadata"]["generation"]
    case = expected["base"]["chat"][0]
    assert_the_models_answer(served.post(CHAT, request(RENAMED, case)), "chat", case)
    assert served.request("POST", CHAT, request(MODEL_NAME, case))[0] == 404


@contextlib.contextmanager
def watched_phases(node: NodeCluster) -> Iterator[list[tuple[int, str]]]:
    """(generation, phase) of the Instance at every change a `kubectl get -w` shows, while open."""
    columns = "custom-columns=GEN:.metadata.generation,PHASE:.status.phase"
    argv = [node.kubectl_path, f"--kubeconfig={node.kubeconfig}", "get", "instance", INSTANCE, "-n", NAMESPACE]
    proc = subprocess.Popen([*argv, "-w", "--no-headers", "-o", columns], stdout=subprocess.PIPE, text=True)
    changes: list[tuple[int, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            generation, _, phase = line.strip().partition(" ")
            if generation.isdigit() and (not changes or changes[-1] != (int(generation), phase.strip())):
                changes.append((int(generation), phase.strip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield changes
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        reader.join(timeout=10)


def _served_by_the_new_pod_alone(node: NodeCluster, served: OpenAI, old_pod: str) -> dict[str, Any] | NotYet:
    """The new vLLM pod once the rollout's old pod is gone, the Service's only ready endpoint is
    the new pod and kube-proxy routes to it alone: one answer without the old name could have come
    from the new pod while the old one still had a rule."""
    pods = get_json(node, "pods", "-n", NAMESPACE, "-l", WORKLOAD_PODS)["items"]
    names = {p["metadata"]["name"]: p["status"].get("podIP") for p in pods}
    service = served.host.split(".")[0]
    endpoints = node.ready_endpoints(NAMESPACE, service)
    seen = {"pods": names, "ready endpoints": sorted(endpoints)}
    if old_pod in names or len(names) != 1:
        return NotYet(seen)
    (new_ip,) = names.values()
    if {endpoint.rsplit(":", 1)[0] for endpoint in endpoints} != {new_ip}:
        return NotYet(seen)
    if not node.service_programmed(NAMESPACE, service):
        return NotYet({**seen, "kube-proxy": "rules not yet synced to the ready endpoints"})
    return vllm_pod(node)


def _wait_rolled(node: NodeCluster, served: OpenAI, generation: int) -> list[str]:
    """Poll until the renamed model answers and the Instance is Ready at the new generation; the
    phases and messages seen on the way."""
    seen: list[str] = []

    def rolled() -> bool:
        _vllm_restarted(node)
        instance = get_json(node, "instance", "-n", NAMESPACE, INSTANCE)
        status = instance.get("status") or {}
        phase = f"{status.get('phase')}: {status.get('message') or ''}".strip(": ")
        if not seen or seen[-1] != phase:
            seen.append(phase)
        assert status.get("phase") != "Failed", seen
        current = instance["metadata"]["generation"] > generation and synced(instance)
        return current and status.get("phase") == "Ready" and served.models().count(RENAMED) == 1

    # KServe's Ready stays True while the old pod serves (it reports the Deployment available, not
    # rolled out), so the rollout is over when the Service answers with the new name only.
    wait_for_sync(what="the renamed model served and the Instance Ready again", probe=rolled, timeout=900, interval=1)
    return seen


def _answers(served: OpenAI) -> bool:
    try:
        return served.request("GET", "/v1/models")[0] == 200
    except OSError:  # refused: the Service has no endpoint while the model is suspended
        return False


def test_suspending_stops_the_pod_and_resuming_answers_again(
    node: NodeCluster, served: OpenAI, expected: dict[str, Any]
) -> None:
    """replicas 0: Suspending → Suspended, the vLLM pod gone, the address kept but not answering;
    replicas 1: Resuming → Ready, a new pod answering the same model on the same address."""
    instance = get_json(node, "instance", "-n", NAMESPACE, INSTANCE)
    model = instance["spec"]["components"]["llmEngine"]["parameters"]["modelName"]
    generation = instance["metadata"]["generation"]
    secret = get_json(node, "secret", "-n", NAMESPACE, f"{INSTANCE}-conn")["data"]
    connection = (instance.get("status") or {}).get("connection")
    before = vllm_pod(node)["metadata"]["name"]

    def replicas(count: int) -> None:
        patch = {"spec": {"components": {"llmEngine": {"replicas": count}}}}
        kubectl(node, "patch", "instance", INSTANCE, "-n", NAMESPACE, "--type=merge", "-p", json.dumps(patch))

    def suspended() -> bool:
        phase = (get_json(node, "instance", "-n", NAMESPACE, INSTANCE).get("status") or {}).get("phase")
        pods = get_json(node, "pods", "-n", NAMESPACE, "-l", WORKLOAD_PODS)["items"]
        return phase == "Suspended" and not pods  # gone, not only Terminating

    with watched_phases(node) as watched:
        started = time.monotonic()
        replicas(0)
        wait_for_sync(suspended, what="the Instance Suspended and its vLLM pod gone", timeout=300, interval=1)
        MEASUREMENTS["llm_suspend_to_pod_gone_seconds"] = round(time.monotonic() - started, 1)
        now = get_json(node, "instance", "-n", NAMESPACE, INSTANCE)
        llmisvc = get_json(node, "llminferenceservices.serving.kserve.io", "-n", NAMESPACE, INSTANCE)
        assert llmisvc["metadata"]["annotations"]["serving.kserve.io/stop"] == "true"
        assert get_json(node, "secret", "-n", NAMESPACE, f"{INSTANCE}-conn")["data"] == secret
        assert (now.get("status") or {}).get("connection") == connection
        assert not _answers(served)

        started = time.monotonic()
        replicas(1)
        ready = wait_for_sync(
            functools.partial(_ready, node), what="the Instance Ready again after resume", timeout=900, interval=1
        )
        # The same connection details; read the address again (KServe may have made its Service anew).
        assert get_json(node, "secret", "-n", NAMESPACE, f"{INSTANCE}-conn")["data"] == secret
        resumed = tinyllm.openai_of(node, ready)
        wait_for_sync(lambda: _answers(resumed), what="the model answering again", timeout=300, interval=1)
        MEASUREMENTS["llm_resume_to_answer_seconds"] = round(time.monotonic() - started, 1)
    phases: list[str] = []
    for seen_at, phase in watched:
        if seen_at > generation and (not phases or phases[-1] != phase):
            phases.append(phase)
    MEASUREMENTS["llm_suspend_resume_phases"] = phases
    if phases and phases[0] == "Ready":
        phases = phases[1:]  # the patch itself, before the provider's status write
    assert phases == ["Suspending", "Suspended", "Resuming", "Ready"], watched
    assert vllm_pod(node)["metadata"]["name"] != before
    assert model in resumed.models()
    case = expected["base"]["chat"][0]
    assert_the_models_answer(resumed.post(CHAT, request(model, case)), "chat", case)
