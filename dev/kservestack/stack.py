"""The real KServe controllers on a local control plane, with kwok playing a Node and its pods.

    plane = ControlPlane(controllers=KSERVE_CONTROLLERS)
    await plane.start_with_crds()
    stack = await KServeStack(plane).start()

What runs beside etcd and kube-apiserver (all on 127.0.0.1, all supervised by the ControlPlane,
so they are stopped with it and counted in its peak RSS):
- kube-controller-manager with the workload controllers (KSERVE_CONTROLLERS), among them
  node-lifecycle (without it the new Node keeps its not-ready taint and nothing schedules) and the
  HPA controller (KServe scales predictors through HPAs);
- kube-scheduler, and kwok with one fake Node (GPUs included) that turns bound pods Running;
- KServe's `manager` (InferenceService) and `llmisvc` (LLMInferenceService) built from KServe's
  module, each with its own TMPDIR holding the webhook serving certificate, and their admission
  webhooks registered at https://127.0.0.1:PORT;
- KServe's `inferenceservice-config` (Standard mode), its ClusterServingRuntimes, its
  LLMInferenceServiceConfig presets and the chart's CPU preset (from its default values), in
  namespace `kserve`.

`KServeStack(plane, namespace=NS, llm_presets=False)` runs the controllers in namespace NS instead
and installs no LLM presets: a provider chart installed into NS (its llmPresets and cpuProfile, as
with the chart's bundled controllers, which run in the release namespace) provides them.

On a cluster with a real node (dev/cluster's node mode, `KServeStack(node.plane, fake_node=False)`)
the node's own kube-scheduler and kubelet run the pods, so neither kube-scheduler nor kwok is added;
KServe's controllers run out-of-cluster the same way, their webhooks reached by the API server on
127.0.0.1 (it runs on this host too).
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from actors.client import KubeClient
from actors.interface import Resource
from kservestack import kwok, manifests
from plane import (
    BUILD_SCRIPT,
    DEFAULT_CONTROLLERS,
    LLM_ISVC_CONFIG,
    ControlPlane,
    ControlPlaneError,
    Process,
    create_or_replace,
    ensure_namespace,
    free_port,
    install_llm_presets,
    openssl,
    require_executables,
    retry_transient,
)

KSERVE_NAMESPACE: Final = "kserve"
KSERVE_CONTROLLERS: Final = (
    *DEFAULT_CONTROLLERS,
    "deployment-controller",
    "replicaset-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "serviceaccount-controller",
    "node-lifecycle-controller",
    # KServe's Standard mode scales a predictor through an HPA: without metrics the controller still
    # keeps the Deployment at the HPA's minReplicas.
    "horizontal-pod-autoscaler-controller",
)
SCHEDULER: Final = "kube-scheduler"
KWOK: Final = "kwok"
MANAGER: Final = "kserve-manager"  # InferenceService, ServingRuntimes, pods' storage initializer
LLMISVC: Final = "kserve-llmisvc"  # LLMInferenceService and its configs

NODE: Final = Resource("", "v1", "nodes", "Node", False)
CONFIG_MAP: Final = Resource("", "v1", "configmaps", "ConfigMap")
CLUSTER_SERVING_RUNTIME: Final = Resource(
    "serving.kserve.io", "v1alpha1", "clusterservingruntimes", "ClusterServingRuntime", False
)
_WEBHOOKS: Final = {
    "MutatingWebhookConfiguration": Resource(
        "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False
    ),
    "ValidatingWebhookConfiguration": Resource(
        "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
    ),
}


def build(target: str, required: tuple[str, ...]) -> Path:
    """dev/build-controlplane.sh `target` (built once, then cached): the directory it prints."""
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), target], stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} {target} failed (exit {proc.returncode}); its log is above. It needs `go` on "
            "PATH and the Go module proxy."
        )
    directory = Path(lines[-1])
    require_executables(directory, required, f"{BUILD_SCRIPT} {target}")
    return directory


@dataclass
class _Controller:
    """How one KServe controller runs: its binary, ports and private TMPDIR."""

    name: str
    binary: Path
    tmpdir: Path
    extra_args: tuple[str, ...] = ()
    webhook_port: int = field(default_factory=free_port)
    probe_port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)

    def args(self) -> list[str]:
        return [
            str(self.binary),
            f"-metrics-addr=127.0.0.1:{self.metrics_port}",
            f"-health-probe-addr=127.0.0.1:{self.probe_port}",
            f"-webhook-port={self.webhook_port}",
            "-leader-elect=false",
            *self.extra_args,
        ]


@dataclass(eq=False)
class KServeStack:
    """KServe's controllers, kube-scheduler and kwok on `plane` (started with KSERVE_CONTROLLERS)."""

    plane: ControlPlane
    gpus: int = 8
    # kube-scheduler and kwok's fake Node; False where a real node runs the pods (dev/cluster).
    fake_node: bool = True
    # The controllers' namespace (POD_NAMESPACE): where they read inferenceservice-config and the
    # LLM presets not found in a service's own namespace.
    namespace: str = KSERVE_NAMESPACE
    # KServe's LLMInferenceServiceConfig presets and the chart's CPU preset; False: a provider chart
    # installed into `namespace` renders them.
    llm_presets: bool = True
    timings: dict[str, float] = field(init=False, default_factory=dict)
    config_dir: Path = field(init=False)
    _controllers: dict[str, _Controller] = field(init=False, default_factory=dict)

    @property
    def node_name(self) -> str:
        return kwok.NODE_NAME

    async def start(self) -> KServeStack:
        """Build (or find) the binaries, start everything, install KServe's configuration; returns
        once both controllers answer and their webhooks are registered. Raises ControlPlaneError."""
        every = "*" in self.plane.controllers
        missing = [c for c in KSERVE_CONTROLLERS if c not in self.plane.controllers and not every]
        if missing or not self.plane.controller_manager:
            raise ControlPlaneError(f"the control plane must run {missing} for workloads (KSERVE_CONTROLLERS)")
        started = time.monotonic()
        kserve_bin = build("kserve", ("manager", "llmisvc"))
        if self.fake_node:
            kwok_dir = build("kwok", ("kwok",))
            node_bin = build("scheduler", (SCHEDULER,))
        self.config_dir = kserve_bin.parent / "config"
        self.timings["binaries"] = time.monotonic() - started
        async with self.plane.client() as kube:
            if self.fake_node:
                await self._start_scheduler(node_bin)
                await self._start_kwok(kube, kwok_dir)
            await ensure_namespace(kube, self.namespace)
            await create_or_replace(
                kube, CONFIG_MAP, manifests.inferenceservice_config(self.config_dir, self.namespace)
            )
            ca_bundle = self._serving_certificate(kserve_bin)
            await asyncio.gather(self.start_controller(MANAGER), self.start_controller(LLMISVC))
            await self._register_webhooks(kube, ca_bundle)
            await self._install_runtimes_and_presets(kube)
        self.timings["total_start"] = time.monotonic() - started
        return self

    # -- processes --------------------------------------------------------------------------

    async def _wait(self, proc: Process, ready: Callable[[], bool], timeout: float = 180.0) -> None:
        """Until `ready()` (run in a thread: the checks block), failing with the log tail when the
        process exits or the deadline passes. Async, so a provider in the same loop keeps running."""
        deadline = time.monotonic() + timeout
        while not await asyncio.to_thread(ready):
            if not proc.running():
                raise ControlPlaneError(f"{proc.name} exited during startup; log tail:\n{proc.log_tail()}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{proc.name} not ready after {timeout:.0f}s; log tail:\n{proc.log_tail()}")
            await asyncio.sleep(0.1)

    async def _start_scheduler(self, node_bin: Path) -> None:
        started = time.monotonic()
        port = free_port()
        kubeconfig = self.plane.kubeconfig
        proc = self.plane.add_process(
            SCHEDULER,
            [
                str(node_bin / SCHEDULER),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                # No front-proxy CA here: nothing to look up (it would log an error every few seconds).
                "--authentication-skip-lookup",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.plane.workdir / 'scheduler-certs'}",
            ],
        )
        await self._wait(proc, lambda: _answers(f"https://127.0.0.1:{port}/healthz", _insecure()))
        self.timings["scheduler_ready"] = time.monotonic() - started

    async def _start_kwok(self, kube: KubeClient, kwok_dir: Path) -> None:
        """kwok, then its Node, until the Node is Ready and untainted: pods bound before that are
        never played."""
        started = time.monotonic()
        home = self.plane.workdir / "kwok-home"  # kwok also reads ~/.kwok/kwok.yaml: not the user's
        home.mkdir()
        proc = self.plane.add_process(
            KWOK, kwok.args(kwok_dir, self.plane.kubeconfig), env={**os.environ, "HOME": str(home)}
        )
        await create_or_replace(kube, NODE, kwok.node(gpus=self.gpus))

        async def ready() -> bool:
            return kwok.node_ready(await retry_transient(kube.get)(NODE, None, kwok.NODE_NAME))

        deadline = time.monotonic() + 120
        while not await ready():
            if not proc.running():
                raise ControlPlaneError(f"kwok exited; log tail:\n{proc.log_tail()}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"Node {kwok.NODE_NAME} not Ready after 120s; kwok log:\n{proc.log_tail()}")
            await asyncio.sleep(0.2)
        self.timings["node_ready"] = time.monotonic() - started

    def _serving_certificate(self, kserve_bin: Path) -> str:
        """One serving certificate for 127.0.0.1 from the control plane's CA, placed where
        controller-runtime looks ($TMPDIR/k8s-webhook-server/serving-certs); returns the CA bundle
        for the webhook configurations. Each controller gets its own TMPDIR."""
        pki = self.plane.workdir / "pki"
        ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
        openssl("req", *ec, "-keyout", "webhook.key", "-out", "webhook.csr", "-subj", "/CN=kserve-webhook", cwd=pki)
        (pki / "webhook.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        )
        openssl("x509", "-req", "-in", "webhook.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "webhook.crt", "-days", "365", "-extfile", "webhook.ext", cwd=pki)  # fmt: skip
        for name, binary, extra in (
            (MANAGER, kserve_bin / "manager", ()),
            (LLMISVC, kserve_bin / "llmisvc", ("-metrics-secure=false",)),
        ):
            tmpdir = self.plane.workdir / f"{name}-tmp"
            certs = tmpdir / "k8s-webhook-server" / "serving-certs"
            certs.mkdir(parents=True)
            shutil.copy(pki / "webhook.crt", certs / "tls.crt")
            shutil.copy(pki / "webhook.key", certs / "tls.key")
            self._controllers[name] = _Controller(name, binary, tmpdir, extra)
        return base64.b64encode(self.plane.ca_file.read_bytes()).decode()

    async def start_controller(self, name: str) -> None:
        """Start KServe controller `name` (MANAGER or LLMISVC) and wait until it is ready and its
        webhook server answers."""
        started = time.monotonic()
        controller = self._controllers[name]
        env = {
            **os.environ,
            "KUBECONFIG": str(self.plane.kubeconfig),
            "POD_NAMESPACE": self.namespace,
            "TMPDIR": str(controller.tmpdir),
        }
        try:
            proc = self.plane.process(name)
            proc.start()
        except KeyError:
            proc = self.plane.add_process(name, controller.args(), env=env)
        context = ssl.create_default_context(cafile=str(self.plane.ca_file))

        def ready() -> bool:
            return _answers(f"http://127.0.0.1:{controller.probe_port}/readyz") and _answers(
                f"https://127.0.0.1:{controller.webhook_port}/", context
            )

        await self._wait(proc, ready)
        self.timings[f"{name}_ready"] = time.monotonic() - started

    def stop_controller(self, name: str) -> None:
        self.plane.process(name).stop(5.0)

    async def restart_controller(self, name: str) -> None:
        """Stop (SIGTERM) and start KServe controller `name` again, e.g. to prove nothing is lost."""
        self.stop_controller(name)
        await self.start_controller(name)

    # -- KServe's configuration -------------------------------------------------------------

    async def _register_webhooks(self, kube: KubeClient, ca_bundle: str) -> None:
        webhook_dir = self.config_dir / "webhook"
        for name, manifest in (
            (MANAGER, webhook_dir / "manifests.yaml"),
            (LLMISVC, webhook_dir / "llmisvc" / "manifests.yaml"),
        ):
            port = self._controllers[name].webhook_port
            for config in manifests.webhook_configurations(manifest, port, ca_bundle):
                await create_or_replace(kube, _WEBHOOKS[config["kind"]], config)

    async def _install_runtimes_and_presets(self, kube: KubeClient) -> None:
        """Through KServe's validating webhooks, as `kubectl apply` would send them."""
        started = time.monotonic()
        for runtime in manifests.cluster_serving_runtimes(self.config_dir):
            await create_or_replace(kube, CLUSTER_SERVING_RUNTIME, runtime)
        if self.llm_presets:
            await install_llm_presets(kube, self.namespace)
            await create_or_replace(kube, LLM_ISVC_CONFIG, manifests.cpu_preset(self.namespace))
        self.timings["configuration"] = time.monotonic() - started


def _insecure() -> ssl.SSLContext:
    # Self-signed serving certificates of kube-scheduler; /healthz needs no authentication.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _answers(url: str, context: ssl.SSLContext | None = None) -> bool:
    """The server answers over HTTP(S) at all: a 200, or an HTTP error such as a webhook server's
    404 for `/` (its TLS handshake with our CA succeeded)."""
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except urllib.error.HTTPError as err:
        return "/readyz" not in url and "/healthz" not in url and err.code < 500
    except (urllib.error.URLError, OSError, ValueError):
        return False
