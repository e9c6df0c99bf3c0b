"""`LlmInputs`: one llm Instance after validation, everything translation and status need.

Built only by `provider.topologies.llm.validation`; the builders take it instead of the raw Instance so they
never re-check or re-default anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from provider.topologies.llm.params import LlmEngineParameters
from provider.topologies.llm.topology_params import LlmTopologyParameters

COMPONENT: Final = "llmEngine"


@dataclass(frozen=True)
class Adapter:
    """A LoRA adapter to serve, and the field the user chose it with (for messages)."""

    name: str
    uri: str
    field: str
    from_catalog: bool = False


@dataclass(frozen=True)
class LlmInputs:
    name: str
    namespace: str
    engine: LlmEngineParameters
    topology: LlmTopologyParameters
    # Component `replicas`, None when unset; 0 suspends the Instance.
    replicas: int | None = None
    # `main` container resources, limits mirrored into requests; {} when unset.
    resources: dict[str, Any] | None = None
    # Component `image` override for the `main` container.
    image: str | None = None
    # `llmEngine.service.serviceType` (ClusterIP when unset), annotations and source ranges.
    service_type: str = "ClusterIP"
    service_annotations: dict[str, str] | None = None
    source_ranges: tuple[str, ...] = ()
    # The version bundle (`spec.version`) and the llmEngine version it resolved to, when known.
    version_bundle: str | None = None
    component_version: str | None = None
    adapters: tuple[Adapter, ...] = ()

    @property
    def suspended(self) -> bool:
        """replicas 0: the user's gesture to stop the model (provider.topologies.suspension)."""
        return self.replicas == 0

    @property
    def served_model_name(self) -> str:
        return self.engine.served_model_name(self.name)

    @property
    def uses_ai_gateway(self) -> bool:
        return self.topology.uses_ai_gateway()

    @property
    def effective_service_type(self) -> str:
        """externalAccess when it names a type, else the component's serviceType, else ClusterIP."""
        return self.topology.resolved_service_type() or self.service_type

    @property
    def external_service_type(self) -> str | None:
        """LoadBalancer or NodePort when the provider must put its own Service in front of the pods."""
        if self.uses_ai_gateway:
            return None
        kind = self.effective_service_type
        return kind if kind in ("LoadBalancer", "NodePort") else None
