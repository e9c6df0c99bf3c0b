"""A real model answering a real request: a predictor Instance, reconciled by the provider's pod
(installed by the chart as in test_incluster) into an InferenceService that KServe's real manager
turns into a Deployment, whose pod (the model server image of dev/modelserver, KServe's Python SDK
and scikit-learn) loads a model this test trains and stores on a PersistentVolume, and answers a
v1 `:predict` request sent through the Service's ClusterIP (kube-proxy's rules) from the host.

Nothing answers but the model: the classes are relabelled by a random permutation before
training, so only the estimator saved here can return the expected labels.

KServe 0.20 in Standard mode needs no storage initializer for a `pvc://` storageUri: its pod
webhook mounts the claim (read-only, the URI's path as subPath) at /mnt/models in the
kserve-container, which the test checks on the pod.
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from cluster.node import NodeCluster
from tests.e2e.support import (
    MEASUREMENTS,
    ROOT,
    get_json,
    kubectl,
    provider_writes,
    the_leader,
)
from tests.support.instances import predictor_instance, predictor_parameters
from tests.support.waiting import NotYet, wait_for_sync

NAMESPACE = "inference"
INSTANCE = "iris"
CLAIM = "iris-model"
MODEL_PATH = "iris"  # inside the volume: pvc://CLAIM/MODEL_PATH
RUNTIME = "e2e-sklearn-local"
MODEL_SERVER_IMAGE = "provider-kserve-sklearnserver:local"  # dev/build-image.sh modelserver
REQUIREMENTS = ROOT / "dev" / "modelserver" / "requirements.lock"
# One flower of each species (setosa, versicolor, virginica) from the iris data set.
SAMPLES = (0, 60, 120)


@dataclass(frozen=True)
class TrainedModel:
    directory: Path  # holds MODEL_PATH/model.joblib
    features: list[list[float]]  # SAMPLES' measurements
    expected: list[int]  # their relabelled classes, which the estimator predicts here too


def _pinned_sklearn() -> str:
    match = re.search(r"^scikit-learn==([^\s\\]+)", REQUIREMENTS.read_text(), flags=re.MULTILINE)
    if match is None:
        raise AssertionError(f"{REQUIREMENTS} pins no scikit-learn version")
    return match.group(1)


@pytest.fixture(scope="module")
def trained() -> Iterator[TrainedModel]:
    """A logistic regression on iris with the classes permuted (never the identity), saved with
    joblib in a directory of its own (removed afterwards), readable by the server's uid."""
    import joblib  # the e2e extra (make e2e installs it)
    import numpy
    import sklearn
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    assert sklearn.__version__ == _pinned_sklearn(), (
        f"the test trains with scikit-learn {sklearn.__version__}, the model server loads with "
        f"{_pinned_sklearn()} ({REQUIREMENTS}); pin the same version in pyproject's e2e extra"
    )
    rng = numpy.random.default_rng()
    permutation = [0, 1, 2]
    while permutation == [0, 1, 2]:
        permutation = [int(c) for c in rng.permutation(3)]
    features, classes = load_iris(return_X_y=True)
    labels = numpy.array([permutation[c] for c in classes])
    estimator = LogisticRegression(max_iter=1000).fit(features, labels)
    chosen = [[float(x) for x in features[i]] for i in SAMPLES]
    expected = [permutation[int(classes[i])] for i in SAMPLES]
    assert estimator.predict(chosen).tolist() == expected, "the trained model misclassifies a sample"
    directory = Path(tempfile.mkdtemp(prefix="provider-kserve-node-model-"))
    try:
        directory.chmod(0o755)
        (directory / MODEL_PATH).mkdir(mode=0o755)
        joblib.dump(estimator, directory / MODEL_PATH / "model.joblib")
        (directory / MODEL_PATH / "model.joblib").chmod(0o644)
        yield TrainedModel(directory, chosen, expected)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _volume(model: TrainedModel) -> list[dict[str, Any]]:
    """A hostPath PersistentVolume holding the model, pre-bound to its claim."""
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{NAMESPACE}-{CLAIM}"},
            "spec": {
                "capacity": {"storage": "10Mi"},
                "accessModes": ["ReadOnlyMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "claimRef": {"namespace": NAMESPACE, "name": CLAIM},
                "hostPath": {"path": str(model.directory), "type": "Directory"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": CLAIM, "namespace": NAMESPACE},
            "spec": {
                "accessModes": ["ReadOnlyMany"],
                "storageClassName": "",
                "volumeName": f"{NAMESPACE}-{CLAIM}",
                "resources": {"requests": {"storage": "10Mi"}},
            },
        },
    ]


def _runtime() -> dict[str, Any]:
    """A ClusterServingRuntime for sklearn running the locally built model server (never pulled)."""
    return {
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": RUNTIME},
        "spec": {
            # Only where an Instance names it: KServe's own sklearn runtimes stay the default.
            "supportedModelFormats": [{"name": "sklearn", "version": "1", "autoSelect": False}],
            "protocolVersions": ["v1"],
            "containers": [
                {
                    "name": "kserve-container",
                    "image": MODEL_SERVER_IMAGE,
                    "imagePullPolicy": "Never",
                    "args": [
                        "--model_name={{.Name}}",
                        "--model_dir=/mnt/models",
                        "--http_port=8080",
                        "--enable_grpc=false",
                    ],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                }
            ],
        },
    }


def _instance(replicas: int | None = None, **parameters: Any) -> dict[str, Any]:
    """The trained model, served from the PersistentVolume by the model server's runtime (one
    replica unless `parameters` say otherwise)."""
    return predictor_instance(
        INSTANCE,
        NAMESPACE,
        uid=None,
        parameters=predictor_parameters(
            storageURI=f"pvc://{CLAIM}/{MODEL_PATH}",
            runtime=RUNTIME,
            **{"minReplicas": 1, "maxReplicas": 1, **parameters},
        ),
        component={
            **({} if replicas is None else {"replicas": replicas}),
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        },
    )


def _apply(node: NodeCluster, *objects: dict[str, Any]) -> None:
    node.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


@pytest.fixture(scope="module")
def served(node: NodeCluster, release: None, trained: TrainedModel) -> Iterator[dict[str, Any]]:
    """With the provider installed by the chart (the package's `release`), the model's volume, the
    runtime and the Instance applied; the Instance once Ready. Everything is deleted again
    afterwards, the volume last."""
    kubectl(node, "create", "namespace", NAMESPACE)
    _apply(node, *_volume(trained))
    _apply(node, _runtime())
    started = time.monotonic()
    _apply(node, _instance())
    try:
        instance = wait_for_sync(
            functools.partial(_ready, node), what="the Instance Ready through KServe", timeout=600, interval=0.5
        )
        MEASUREMENTS["inference_ready_seconds"] = round(time.monotonic() - started, 1)
        yield instance
    finally:
        kubectl(node, "delete", "instance", INSTANCE, "-n", NAMESPACE, "--ignore-not-found", "--timeout=120s",
                check=False)  # fmt: skip
        kubectl(node, "delete", "pvc", CLAIM, "-n", NAMESPACE, "--ignore-not-found", "--timeout=60s", check=False)
        kubectl(node, "delete", "pv", f"{NAMESPACE}-{CLAIM}", "--ignore-not-found", "--timeout=60s", check=False)
        kubectl(node, "delete", "clusterservingruntime", RUNTIME, "--ignore-not-found", check=False)


def _ready(node: NodeCluster) -> dict[str, Any] | None:
    instance = get_json(node, "instance", "-n", NAMESPACE, INSTANCE)
    status = instance.get("status") or {}
    if status.get("phase") == "Failed":
        raise AssertionError(f"the Instance failed: {status.get('message')}")
    return instance if status.get("phase") == "Ready" else None


def _connection_url(node: NodeCluster, instance: dict[str, Any]) -> str:
    name = instance["status"]["connectionSecretRef"]["name"]
    data = get_json(node, "secret", "-n", NAMESPACE, name)["data"]
    return base64.b64decode(data["uri"]).decode()


def _service_address(node: NodeCluster, host: str) -> tuple[str, int]:
    """What cluster DNS would answer for `<service>.<namespace>.svc.cluster.local` (the node runs
    no DNS server): the Service's ClusterIP, and its port."""
    service, namespace, *_ = host.split(".")
    spec = get_json(node, "service", "-n", namespace, service)["spec"]
    return spec["clusterIP"], int(spec["ports"][0]["port"])


def _post(ip: str, port: int, host: str, path: str, body: dict[str, Any]) -> tuple[int, str]:
    connection = http.client.HTTPConnection(ip, port, timeout=10)
    try:
        connection.request("POST", path, json.dumps(body), {"Host": host, "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_the_model_answers_a_predict_request(node: NodeCluster, served: dict[str, Any], trained: TrainedModel) -> None:
    url = _connection_url(node, served)
    parts = urlsplit(url)
    assert parts.scheme == "http" and parts.hostname == f"{INSTANCE}-predictor.{NAMESPACE}.svc.cluster.local", url
    ip, port = _service_address(node, parts.hostname)
    assert port == (parts.port or 80)
    path = f"{parts.path.rstrip('/')}/v1/models/{INSTANCE}:predict"
    service = parts.hostname.split(".")[0]
    ready_at = time.monotonic()
    # Ready is KServe's word on the pod; kube-proxy's rules for it follow at its next sync.
    programmed = functools.partial(node.service_programmed, NAMESPACE, service)
    wait_for_sync(programmed, what="kube-proxy's rules for the predictor's endpoint", timeout=60, interval=0.5)
    MEASUREMENTS["inference_proxy_lag_seconds"] = round(time.monotonic() - ready_at, 1)
    started = time.monotonic()
    # From the host through kube-proxy's rules for the ClusterIP, as a client pod would.
    status, answer = _post(ip, port, parts.hostname, path, {"instances": trained.features})
    MEASUREMENTS["inference_request_seconds"] = round(time.monotonic() - started, 3)
    assert status == 200, answer
    assert json.loads(answer) == {"predictions": trained.expected}
    # A request the model cannot read is refused, not answered with something.
    assert _post(ip, port, parts.hostname, path, {"instances": []})[0] == 400


def test_kserve_mounts_the_claim_without_a_storage_initializer(node: NodeCluster, served: dict[str, Any]) -> None:
    selector = f"serving.kserve.io/inferenceservice={INSTANCE}"
    # The serving pod (a pod of a rollout KServe has just replaced can still be terminating).
    pods = get_json(node, "pods", "-n", NAMESPACE, "-l", selector)["items"]
    (pod,) = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert not pod["spec"].get("initContainers")
    (container,) = [c for c in pod["spec"]["containers"] if c["name"] == "kserve-container"]
    assert container["image"].endswith(MODEL_SERVER_IMAGE)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/mnt/models"]["subPath"] == MODEL_PATH and mounts["/mnt/models"]["readOnly"] is True
    claims = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName") for v in pod["spec"]["volumes"]}
    assert claims[mounts["/mnt/models"]["name"]] == CLAIM
    # The InferenceService was written by the provider's pod (the chart's ServiceAccount) and
    # reconciled by KServe's manager into this pod.
    isvc = get_json(node, "inferenceservices.serving.kserve.io", "-n", NAMESPACE, INSTANCE)
    assert isvc["spec"]["predictor"]["model"]["runtime"] == RUNTIME
    writers = {w["pod"] for w in provider_writes(node) if w["objectRef"].get("resource") == "inferenceservices"}
    assert writers == {the_leader(node)["metadata"]["name"]}
    (deployment,) = pod["metadata"]["ownerReferences"]
    assert deployment["kind"] == "ReplicaSet" and deployment["name"].startswith(f"{INSTANCE}-predictor-")


# -- scaling with the load (issue 40) ------------------------------------------------------------

HPA = "horizontalpodautoscalers.autoscaling"
DEPLOYMENT = f"{INSTANCE}-predictor"  # KServe's name for the predictor's Deployment and HPA
SCALING: dict[str, Any] = {"minReplicas": 1, "maxReplicas": 3, "scaleMetric": "cpu", "scaleTarget": 50}


class LoadGenerator:
    """`clients` threads sending the same predict request in a loop until stopped or `limit`
    seconds have passed (bounded whatever the test does), counting answers and failures."""

    def __init__(self, address: tuple[str, int], host: str, path: str, body: dict[str, Any], *,
                 clients: int = 4, limit: float = 900.0) -> None:  # fmt: skip
        self.address, self.host, self.path, self.body = address, host, path, body
        self.stop = threading.Event()
        self.answered = 0
        self.failures: list[str] = []
        self._deadline = time.monotonic() + limit
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def _run(self) -> None:
        while not self.stop.is_set() and time.monotonic() < self._deadline:
            try:
                status, answer = _post(*self.address, self.host, self.path, self.body)
            except OSError as err:
                self.failures.append(f"{type(err).__name__}: {err}")
                continue
            if status == 200:
                self.answered += 1
            else:
                self.failures.append(f"{status}: {answer[:200]}")

    def __enter__(self) -> LoadGenerator:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


def _hpa(node: NodeCluster) -> dict[str, Any]:
    return get_json(node, HPA, "-n", NAMESPACE, DEPLOYMENT)


def _reads_cpu(node: NodeCluster) -> dict[str, Any] | None:
    """The HPA KServe made for the range, once it reads the pods' CPU through metrics-server."""
    hpa = _hpa(node)
    current = (hpa.get("status") or {}).get("currentMetrics") or []
    reading = any((m.get("resource") or {}).get("current", {}).get("averageUtilization") is not None for m in current)
    return hpa if hpa["spec"]["maxReplicas"] == SCALING["maxReplicas"] and reading else None


def _ready_pods(node: NodeCluster) -> list[dict[str, Any]]:
    pods = get_json(node, "pods", "-n", NAMESPACE, "-l", f"serving.kserve.io/inferenceservice={INSTANCE}")["items"]
    return [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
    ]


def _hpa_wants(node: NodeCluster, count: int) -> dict[str, Any] | NotYet:
    status = _hpa(node).get("status") or {}
    return status if status.get("desiredReplicas", 0) >= count else NotYet(f"HPA status {status}")


def _back_at_one(node: NodeCluster) -> bool | NotYet:
    current = (_hpa(node).get("status") or {}).get("currentReplicas")
    ready = [p["metadata"]["name"] for p in _ready_pods(node)]
    return (current == 1 and len(ready) == 1) or NotYet(f"HPA currentReplicas {current}, ready pods {ready}")


def _suspended(node: NodeCluster) -> bool | NotYet:
    phase = _phase(node)
    ready = [p["metadata"]["name"] for p in _ready_pods(node)]
    return (phase == "Suspended" and not ready) or NotYet(f"phase {phase}, ready pods {ready}")


def _at_least_ready(node: NodeCluster, count: int) -> list[dict[str, Any]] | NotYet:
    pods = _ready_pods(node)
    return pods if len(pods) >= count else NotYet(f"ready pods {[p['metadata']['name'] for p in pods]}")


def _rolled_out(node: NodeCluster) -> dict[str, Any] | NotYet:
    """The predictor's Deployment at rest on its current template: every replica updated and
    available, and the ready pods all of one template (none of the previous one left serving).
    KServe 0.20 rolls the pods when a range is set (the autoscaler's settings reach the pod
    template); a load sent mid-rollout meets the old pods' shutdown."""
    deployment = get_json(node, "deployment", "-n", NAMESPACE, DEPLOYMENT)
    status = deployment.get("status") or {}
    wanted = deployment["spec"].get("replicas", 1)
    templates = {p["metadata"]["labels"].get("pod-template-hash") for p in _ready_pods(node)}
    done = (
        status.get("observedGeneration", 0) >= deployment["metadata"]["generation"]
        and status.get("updatedReplicas") == status.get("availableReplicas") == status.get("replicas") == wanted
        and len(templates) == 1
    )
    return deployment if done else NotYet(f"Deployment status {status}, ready pods of templates {templates}")


def _components_say(node: NodeCluster, at_least: int) -> dict[str, Any] | None:
    """The Instance's status.components: the predictor with `at_least` pods, all ready."""
    status = get_json(node, "instance", "-n", NAMESPACE, INSTANCE).get("status") or {}
    for component in status.get("components") or []:
        if component.get("total", 0) >= at_least and component.get("ready") == component.get("total"):
            return status
    return None


def test_load_scales_the_predictor_out_every_replica_answers_and_it_scales_back_in(
    node: NodeCluster, served: dict[str, Any], trained: TrainedModel
) -> None:
    """A range 1-3 on the pods' CPU (50 % of the 100m they request): KServe makes the HPA,
    kube-controller-manager's HPA controller reads metrics-server, a load from the host drives the
    predictor over its target and it scales out; every replica answers; without the load it scales
    back in (KServe 0.20 copies no scale-down behaviour to the HPA: the controller's window holds,
    set to a minute on this cluster, conftest.SCALE_DOWN_WINDOW_SECONDS)."""
    _apply(node, _instance(**SCALING))
    started = time.monotonic()
    # The HPA with the range (KServe updates the Deployment before it) reading the pods' CPU, and
    # the rollout the range started over, before any load.
    wait_for_sync(functools.partial(_reads_cpu, node), what="the HPA reading the pods' CPU", timeout=300, interval=1)
    MEASUREMENTS["scaling_hpa_reading_seconds"] = round(time.monotonic() - started, 1)
    wait_for_sync(functools.partial(_rolled_out, node), what="the range's rollout done", timeout=600, interval=1)
    MEASUREMENTS["scaling_range_rollout_seconds"] = round(time.monotonic() - started, 1)
    parts = urlsplit(_connection_url(node, served))
    assert parts.hostname is not None
    address = _service_address(node, parts.hostname)
    path = f"{parts.path.rstrip('/')}/v1/models/{INSTANCE}:predict"
    body = {"instances": trained.features}
    with LoadGenerator(address, parts.hostname, path, body) as load:
        loaded = time.monotonic()
        wait_for_sync(functools.partial(_hpa_wants, node, 2), what="the HPA wanting a second replica",
                      timeout=300, interval=1)  # fmt: skip
        MEASUREMENTS["scaling_load_to_wanted_seconds"] = round(time.monotonic() - loaded, 1)
        pods = wait_for_sync(functools.partial(_at_least_ready, node, 2),
                             what="a second ready predictor pod", timeout=600, interval=1)  # fmt: skip
        MEASUREMENTS["scaling_load_to_second_ready_pod_seconds"] = round(time.monotonic() - loaded, 1)
        # Every replica answers, each asked directly at its pod IP (the host routes to the bridge).
        for pod in pods:
            status, answer = _post(pod["status"]["podIP"], 8080, parts.hostname, path, body)
            assert (status, json.loads(answer)) == (200, {"predictions": trained.expected}), pod["metadata"]["name"]
        wait_for_sync(functools.partial(_components_say, node, 2), what="status.components with 2+ ready pods",
                      timeout=300, interval=1)  # fmt: skip
    assert load.answered > 0 and not load.failures, f"{load.answered} answered; failures: {load.failures[:5]}"
    MEASUREMENTS["scaling_requests_answered"] = load.answered
    events = get_json(node, "events", "-n", NAMESPACE, "--field-selector", f"involvedObject.name={INSTANCE}")
    assert any(e["reason"] == "Scaled" for e in events["items"]), [e["reason"] for e in events["items"]]
    unloaded = time.monotonic()
    wait_for_sync(functools.partial(_back_at_one, node), what="the predictor back at one replica",
                  timeout=900, interval=2)  # fmt: skip
    MEASUREMENTS["scaling_unload_to_one_replica_seconds"] = round(time.monotonic() - unloaded, 1)


def test_suspend_and_resume_keep_working_with_a_range(node: NodeCluster, served: dict[str, Any]) -> None:
    _apply(node, _instance(replicas=0, **SCALING))
    wait_for_sync(functools.partial(_suspended, node), what="the Instance Suspended without pods",
                  timeout=300, interval=1)  # fmt: skip
    _apply(node, _instance(**SCALING))
    wait_for_sync(functools.partial(_ready, node), what="the Instance Ready again", timeout=600, interval=1)
    assert len(_ready_pods(node)) >= 1


def _phase(node: NodeCluster) -> str | None:
    return (get_json(node, "instance", "-n", NAMESPACE, INSTANCE).get("status") or {}).get("phase")
