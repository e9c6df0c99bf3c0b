"""The model-puller ServiceAccount that carries the chart's Hugging Face token Secret.

KServe's storage initializer reads `HF_TOKEN` from the Secrets of the pod's ServiceAccount, so
gated models (Llama, Mistral, Gemma, …) download only when the workload runs under this account.
With `enableGatewayRouting` KServe runs the pods under a ServiceAccount it manages itself, so the
token cannot be attached: that limitation is reported as a condition (see provider.topologies.llm.status)
rather than silently ignored.
"""

from __future__ import annotations

from actors import KubeObject
from provider.model import kinds, names
from provider.model.settings import ProviderSettings
from provider.topologies.llm.inputs import LlmInputs


def hf_token_attached(inputs: LlmInputs, settings: ProviderSettings) -> bool:
    return bool(settings.hf_token_secret_name) and not inputs.topology.enable_gateway_routing


def hf_token_blocked(inputs: LlmInputs, settings: ProviderSettings) -> bool:
    """The chart has a token but this Instance's routing keeps it from the pods."""
    return bool(settings.hf_token_secret_name) and inputs.topology.enable_gateway_routing


def model_puller(inputs: LlmInputs, settings: ProviderSettings) -> KubeObject | None:
    if not hf_token_attached(inputs, settings):
        return None
    return {
        "apiVersion": kinds.SERVICE_ACCOUNT.api_version,
        "kind": kinds.SERVICE_ACCOUNT.kind,
        "metadata": {"name": names.model_puller_name(inputs.name)},
        "secrets": [{"name": settings.hf_token_secret_name}],
    }
