"""The topology registry: `spec.topology.type` → the handler that translates such Instances.

Handlers are pure (provider.topology.TopologyHandler) and get the chart settings at construction,
so the registry holds factories taking `ProviderSettings`. A topology registers with one line.
"""

from __future__ import annotations

from collections.abc import Callable

from provider.llm.handler import LlmTopology
from provider.predictor.handler import PredictorTopology
from provider.settings import ProviderSettings
from provider.topology import TopologyHandler

TopologyFactory = Callable[[ProviderSettings], TopologyHandler]

TOPOLOGIES: dict[str, TopologyFactory] = {
    "llm": LlmTopology,
    "predictor": PredictorTopology,
}


def build_topologies(settings: ProviderSettings) -> dict[str, TopologyHandler]:
    return {name: factory(settings) for name, factory in TOPOLOGIES.items()}
