"""The topology registry: `spec.topology.type` → the handler that translates such Instances.

Handlers are pure (provider.topologies.protocol.TopologyHandler) and get the chart settings at construction,
so the registry holds factories taking `ProviderSettings`. A topology registers with one line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provider.model.settings import ProviderSettings
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.predictor.handler import PredictorTopology
from provider.topologies.protocol import TopologyHandler

TopologyFactory = Callable[[ProviderSettings], TopologyHandler[Any]]

TOPOLOGIES: dict[str, TopologyFactory] = {
    "llm": LlmTopology,
    "predictor": PredictorTopology,
}


def build_topologies(settings: ProviderSettings) -> dict[str, TopologyHandler[Any]]:
    return {name: factory(settings) for name, factory in TOPOLOGIES.items()}
