"""KServe's own configuration, read from the `config/` directory of the KServe module the
controllers were built from (dev/build-controlplane.sh copies it beside the binaries), turned into
the objects the local stack installs:

- the `inferenceservice-config` ConfigMap: KServe's defaults with the test overlay's values, in
  Standard (raw Deployment) mode and without the Istio virtual host (no Istio here);
- the ClusterServingRuntimes for the predictor formats, with the images kustomize would set;
- the admission webhook configurations, pointed at the controllers on 127.0.0.1;
- the CPU compute profile preset (`kserve-config-llm-cpu`) as the provider chart renders it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Final

import yaml

from actors.interface import KubeObject

CONFIG_MAP_NAME: Final = "inferenceservice-config"
CPU_PRESET_NAME: Final = "kserve-config-llm-cpu"

_REPO_ROOT: Final = Path(__file__).resolve().parents[2]
_CHART_VALUES: Final = _REPO_ROOT / "charts" / "provider-kserve" / "values.yaml"


def _documents(path: Path) -> list[KubeObject]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(path.read_text(), Loader=loader) if isinstance(d, dict)]


def inferenceservice_config(config_dir: Path, namespace: str) -> KubeObject:
    """KServe's ConfigMap as its test overlay patches it, switched to Standard mode.

    `disableIstioVirtualHost`: in Standard mode KServe otherwise waits for an Istio
    VirtualService to report the ingress ready, and no Istio runs here."""
    (base,) = _documents(config_dir / "configmap" / "inferenceservice.yaml")
    (overlay,) = _documents(config_dir / "overlays" / "test" / "configmap" / "inferenceservice.yaml")
    data: dict[str, str] = {**base["data"], **overlay["data"]}
    data.pop("_example", None)
    data["deploy"] = json.dumps({"defaultDeploymentMode": "Standard"})
    ingress = json.loads(data["ingress"])
    ingress["disableIstioVirtualHost"] = True
    data["ingress"] = json.dumps(ingress)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP_NAME, "namespace": namespace},
        "data": data,
    }


def _kustomize_images(obj: KubeObject, images: list[dict[str, str]]) -> KubeObject:
    """Kustomize's `images:` transformer for the containers of a ServingRuntime spec."""
    by_name = {i["name"]: i for i in images}
    out = copy.deepcopy(obj)
    for container in out["spec"].get("containers") or []:
        name, _, tag = str(container.get("image", "")).partition(":")
        image = by_name.get(name)
        if image is not None:
            container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag)}"
    return out


def cluster_serving_runtimes(config_dir: Path) -> list[KubeObject]:
    """Every ClusterServingRuntime of KServe's config/runtimes (sklearn, xgboost, onnx via triton,
    tensorflow, pytorch, huggingface, ...), as `kubectl apply -k config/runtimes` creates them."""
    runtimes = config_dir / "runtimes"
    (kustomization,) = _documents(runtimes / "kustomization.yaml")
    images = kustomization.get("images") or []
    out: list[KubeObject] = []
    for resource in kustomization["resources"]:
        out.extend(
            _kustomize_images(doc, images)
            for doc in _documents(runtimes / resource)
            if doc.get("kind") == "ClusterServingRuntime"
        )
    return out


def webhook_configurations(manifests: Path, port: int, ca_bundle: str) -> list[KubeObject]:
    """KServe's webhook configurations with each webhook's Service reference replaced by the
    controller's address on 127.0.0.1 (the same path), trusting `ca_bundle` (base64 PEM)."""
    out: list[KubeObject] = []
    for doc in _documents(manifests):
        if not str(doc.get("kind", "")).endswith("WebhookConfiguration"):
            continue
        doc = copy.deepcopy(doc)
        doc["metadata"] = {"name": doc["metadata"]["name"]}
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
        out.append(doc)
    return out


def cpu_preset(namespace: str, values_file: Path = _CHART_VALUES) -> KubeObject:
    """The chart's `kserve-config-llm-cpu` (templates/llmisvcconfig-cpu.yaml) from its default
    values: the llm topology's computeProfile cpu names it in baseRefs."""
    values = yaml.safe_load(values_file.read_text())["cpuProfile"]
    container: dict[str, Any] = {
        "name": "main",
        "image": values["image"],
        "securityContext": {"runAsNonRoot": False, "runAsUser": 0},
    }
    if values.get("defaultArgs"):
        container["args"] = list(values["defaultArgs"])
    return {
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceServiceConfig",
        "metadata": {"name": CPU_PRESET_NAME, "namespace": namespace},
        "spec": {"template": {"containers": [container]}},
    }
