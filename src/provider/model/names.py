"""Names of the objects the provider derives from an Instance, and of the ones KServe derives.

Two families, kept exactly as the Go provider named them so that objects it created are found and
adopted again (kserve-behavior §2.2):

- knative `kmeta.ChildName` for `-metrics`, `-ai-gateway`, `-token-limit` and `-inference-pool`:
  the same function KServe uses, so `<instance>-inference-pool` is the InferencePool KServe made;
- plain concatenation for `-config`, `-model-puller` and `-external`. These can exceed length
  limits; validation reports that instead of letting the apply fail (see provider.topologies.llm.validation).
"""

from __future__ import annotations

import hashlib
from typing import Final

# knative.dev/pkg/kmeta: DNS-1123 label length, and the room left next to a 32-character md5.
_LONGEST: Final = 63
_MD5_LEN: Final = 32
_HEAD: Final = _LONGEST - _MD5_LEN

METRICS_SUFFIX: Final = "-metrics"
AI_GATEWAY_SUFFIX: Final = "-ai-gateway"
TOKEN_LIMIT_SUFFIX: Final = "-token-limit"
INFERENCE_POOL_SUFFIX: Final = "-inference-pool"
WORKLOAD_SERVICE_SUFFIX: Final = "-kserve-workload-svc"


def child_name(parent: str, suffix: str) -> str:
    """knative `kmeta.ChildName`: `parent+suffix`, or a truncated parent plus an md5 when that
    would exceed 63 characters (so the result is unique per parent and always ≤ 63)."""
    if len(parent) <= _LONGEST - len(suffix):
        return parent + suffix
    if _HEAD - len(suffix) <= 0:
        # A suffix too long to keep whole: hash parent and suffix together and keep what fits.
        digest = hashlib.md5((parent + suffix).encode(), usedforsecurity=False).hexdigest()
        out = parent[:_HEAD] + digest
        if len(out) < _LONGEST:
            out += suffix[: _LONGEST - len(out)]
        return out.rstrip("-")
    digest = hashlib.md5(parent.encode(), usedforsecurity=False).hexdigest()
    return parent[: _HEAD - len(suffix)] + digest + suffix


def metrics_name(instance: str) -> str:
    return child_name(instance, METRICS_SUFFIX)


def ai_gateway_route_name(instance: str) -> str:
    return child_name(instance, AI_GATEWAY_SUFFIX)


def token_limit_name(instance: str) -> str:
    return child_name(instance, TOKEN_LIMIT_SUFFIX)


def inference_pool_name(instance: str) -> str:
    """The InferencePool KServe creates for an LLMInferenceService with a scheduler."""
    return child_name(instance, INFERENCE_POOL_SUFFIX)


def workload_service_name(instance: str) -> str:
    """KServe's ClusterIP Service in front of the model pods (port 8000)."""
    return child_name(instance, WORKLOAD_SERVICE_SUFFIX)


def config_name(instance: str) -> str:
    """The LLMInferenceServiceConfig holding the Instance's inline `config`."""
    return instance + "-config"


def model_puller_name(instance: str) -> str:
    """The ServiceAccount carrying the chart's Hugging Face token Secret."""
    return instance + "-model-puller"


def external_service_name(instance: str) -> str:
    """The LoadBalancer/NodePort Service the provider puts in front of the model pods."""
    return instance + "-external"


# The provider's name: Instance.spec.providerRef.name, the ownership label value, the field manager.
PROVIDER_NAME: Final = "provider-kserve"
# Annotations the runtime reads and writes for this provider (force-ownership, applied-intent).
ANNOTATION_DOMAIN: Final = f"{PROVIDER_NAME}.openeverest.io"
# Set to "true" on an Instance: take the fields another field manager holds (README, docs/ownership.md).
FORCE_OWNERSHIP_ANNOTATION: Final = f"{ANNOTATION_DOMAIN}/force-ownership"
