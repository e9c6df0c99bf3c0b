"""The PodMonitor `<instance>-metrics` scraping vLLM's `/metrics` (monitoring.coreos.com/v1).

Wanted when the chart enables PodMonitors and the Instance does not turn `enableMetrics` off. The
handler skips it while the Prometheus Operator's CRD is not served, and status reports that as a
condition instead of an error. vLLM's port in KServe's presets is unnamed, hence `portNumber`
(`targetPort` is deprecated in the Prometheus Operator, §10.25).
"""

from __future__ import annotations

from typing import Final

from actors import KubeObject
from provider.model import kinds, names
from provider.model.settings import ProviderSettings
from provider.topologies.llm.exposure import SERVING_PORT, workload_selector
from provider.topologies.llm.inputs import LlmInputs

METRICS_PATH: Final = "/metrics"


def metrics_wanted(inputs: LlmInputs, settings: ProviderSettings) -> bool:
    return settings.enable_pod_monitor and inputs.topology.metrics_enabled()


def pod_monitor(inputs: LlmInputs, settings: ProviderSettings) -> KubeObject | None:
    if not metrics_wanted(inputs, settings):
        return None
    return {
        "apiVersion": kinds.POD_MONITOR.api_version,
        "kind": kinds.POD_MONITOR.kind,
        "metadata": {"name": names.metrics_name(inputs.name)},
        "spec": {
            "selector": {"matchLabels": workload_selector(inputs.name)},
            "podMetricsEndpoints": [
                {"portNumber": SERVING_PORT, "path": METRICS_PATH, "interval": settings.pod_monitor_interval}
            ],
        },
    }
