"""What one topology (llm, predictor) must provide: pure functions of their inputs.

`provider.kserve.KServeProvider` adapts these to the runtime's async `actors.interface.Provider`,
gathering the inputs that need API reads (node addresses, the AI Gateway address) first, so that
validation, translation and status mapping stay testable without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from actors import KubeObject, Resource, StatusReport
from provider.model.instance import Instance
from provider.rules.pod_security import PodPolicy


@dataclass(frozen=True)
class LoraAdapter:
    label: str
    name: str
    uri: str


@dataclass(frozen=True)
class CatalogModel:
    label: str
    uri: str
    gated: bool = False


@dataclass(frozen=True)
class Catalogs:
    """The chart's model and LoRA catalogs as last loaded by their shared actors."""

    models: Sequence[CatalogModel] = ()
    lora_adapters: Sequence[LoraAdapter] = ()

    def adapter(self, name: str) -> LoraAdapter | None:
        return next((a for a in self.lora_adapters if a.name == name), None)


@dataclass(frozen=True)
class StatusInputs:
    """Facts outside the Instance's own objects that status mapping needs."""

    # Node addresses for NodePort connection details, ExternalIP ones first.
    node_addresses: Sequence[str] = ()
    # Base URL of the shared AI Gateway once it has an address (from the AI Gateway actor).
    gateway_base_url: str | None = None
    # Optional kinds not served by the API server (CRD absent), e.g. monitoring.coreos.com.
    missing: frozenset[Resource] = field(default_factory=frozenset)
    # The chart's catalogs, for facts about the chosen model (is it gated?).
    catalogs: Catalogs = field(default_factory=lambda: Catalogs())


# Observed derived objects by (resource, name).
Observed = Mapping[tuple[Resource, str], KubeObject]


class TopologyHandler(Protocol):
    name: str

    def resources(self) -> Sequence[Resource]:
        """Every kind this topology may create (watched, inventoried, pruned)."""
        ...

    def validate(self, instance: Instance, catalogs: Catalogs, policy: PodPolicy | None = None) -> None:
        """Raise actors.interface.ValidationFailed with a specific, field-named message. `policy`
        bounds what pod settings the Instance may pass through (its namespace's Pod Security)."""
        ...

    def desired(
        self,
        instance: Instance,
        catalogs: Catalogs,
        available: frozenset[Resource],
        policy: PodPolicy | None = None,
    ) -> list[KubeObject]:
        """Desired objects (no ownership metadata; the runtime stamps it). `available` lists the
        optional kinds the API server serves, so e.g. a PodMonitor is skipped without its CRD.
        `policy` as for validate: the rules are checked again, under the same policy."""
        ...

    def status(self, instance: Instance, observed: Observed, inputs: StatusInputs) -> StatusReport:
        ...
