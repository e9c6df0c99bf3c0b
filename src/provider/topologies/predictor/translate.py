"""Pure translation: a validated `predictor` Instance → one InferenceService (v1beta1, Standard).

`replicas: 0` on the component suspends it: KServe's stop annotation, the rest of the object as it
stands (provider.topologies.suspension).

Ownership metadata (our labels, the controller ownerReference, the namespace) is left out: the
runtime stamps it (`actors.contract.stamp`) before the server-side apply.
"""

from __future__ import annotations

from typing import Any, Final

from actors import KubeObject
from provider.model.instance import Instance
from provider.model.kinds import INFERENCE_SERVICE
from provider.topologies.predictor.validation import COMPONENT, PredictorInputs
from provider.topologies.suspension import with_stop

# Standard (formerly RawDeployment): a plain Deployment + Service + HPA, no Knative. Set
# explicitly because KServe's own default (inferenceservice-config) may be Knative, and KServe
# rejects changing the mode of an existing InferenceService, so it must be right from the start.
DEPLOYMENT_MODE_ANNOTATION: Final = "serving.kserve.io/deploymentMode"
DEPLOYMENT_MODE: Final = "Standard"

# OpenEverest counts a component's pods by these labels. KServe copies `spec.predictor.labels`
# (and the InferenceService's own labels, which carry the runtime-stamped provider label) onto the
# predictor Deployment's pod template.
LABEL_INSTANCE: Final = "core.openeverest.io/instance"
LABEL_COMPONENT: Final = "core.openeverest.io/component"


def inference_service(instance: Instance, inputs: PredictorInputs, kept_min_replicas: int | None = None) -> KubeObject:
    """`kept_min_replicas`: the minReplicas the object stands with, which a suspension leaves as it
    is (it stops the model with KServe's stop annotation, never with zero replicas)."""
    name = instance.metadata.name
    params = inputs.params

    model: dict[str, Any] = {
        "modelFormat": {"name": params.model_format},
        "storageUri": params.storage_uri,
    }
    if params.runtime:
        model["runtime"] = params.runtime
    if params.runtime_version:
        model["runtimeVersion"] = params.runtime_version
    if inputs.resources:
        model["resources"] = inputs.resources

    predictor: dict[str, Any] = {
        "labels": {LABEL_INSTANCE: name, LABEL_COMPONENT: COMPONENT},
    }
    min_replicas = inputs.min_replicas
    if inputs.suspended and inputs.params.min_replicas is None:
        min_replicas = kept_min_replicas
    if min_replicas is not None:
        predictor["minReplicas"] = min_replicas
    if inputs.max_replicas is not None:
        predictor["maxReplicas"] = inputs.max_replicas
    # KServe's HPA in Standard mode: the metric and its target utilization (ComponentExtensionSpec).
    if inputs.params.scale_metric is not None:
        predictor["scaleMetric"] = inputs.params.scale_metric
    if inputs.params.scale_target is not None:
        predictor["scaleTarget"] = inputs.params.scale_target
    predictor["model"] = model

    return {
        "apiVersion": INFERENCE_SERVICE.api_version,
        "kind": INFERENCE_SERVICE.kind,
        "metadata": with_stop(
            {"name": name, "annotations": {DEPLOYMENT_MODE_ANNOTATION: DEPLOYMENT_MODE}}, inputs.suspended
        ),
        "spec": {"predictor": predictor},
    }
