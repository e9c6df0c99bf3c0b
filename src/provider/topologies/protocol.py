"""What one topology (llm, predictor) must provide: pure functions of their inputs.

`provider.kserve.KServeProvider` adapts these to the runtime's async `actors.Provider`, gathering
the inputs that need API reads (node addresses, the AI Gateway address) first and sending the
releases a topology asks for, so that validation, translation and status mapping stay testable
without a cluster. `validate` returns what the topology read (its inputs), which `desired` and
`status` take: an Instance is parsed and validated once per pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from actors import KubeObject, Release, Resource, StatusReport
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.rules.pod_security import PodPolicy


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
    # The derived objects this pass changed, by (resource, name): a change just sent to KServe.
    written: frozenset[tuple[Resource, str]] = frozenset()


# Observed derived objects by (resource, name).
Observed = Mapping[tuple[Resource, str], KubeObject]
# A derived object of the Instance as the runtime's watch last saw it (None when there is none).
Live = Callable[[Resource, str], KubeObject | None]
# What a topology read of an Instance while validating it.
InputsT = TypeVar("InputsT")


def nothing_live(resource: Resource, name: str) -> KubeObject | None:
    """`Live` outside a cluster (render): no object exists yet."""
    return None


class TopologyHandler(Protocol[InputsT]):
    name: str
    # The Instance's components this topology runs pods for (status.components).
    components: tuple[str, ...]

    def resources(self) -> Sequence[Resource]:
        """Every kind this topology may create (watched, inventoried, pruned)."""
        ...

    def derived_names(self, instance_name: str) -> frozenset[tuple[Resource, str]]:
        """Every (kind, name) this topology may create for the Instance `instance_name`: the only
        objects the runtime ever prunes or deletes for it."""
        ...

    def validate(self, instance: Instance, catalogs: Catalogs, policy: PodPolicy | None = None) -> InputsT:
        """What the topology reads of `instance`, or actors.ValidationFailed with a specific,
        field-named message. `policy` bounds what pod settings the Instance may pass through (its
        namespace's Pod Security)."""
        ...

    def desired(
        self, instance: Instance, inputs: InputsT, available: frozenset[Resource], live: Live = nothing_live
    ) -> list[KubeObject]:
        """Desired objects (no ownership metadata; the runtime stamps it). `available` lists the
        optional kinds the API server serves, so e.g. a PodMonitor is skipped without its CRD;
        `live` shows what exists, for an object that must outlive its last use."""
        ...

    def status(
        self, instance: Instance, inputs: InputsT, observed: Observed, context: StatusInputs
    ) -> StatusReport: ...

    def releases(self, instance_name: str, live: Live) -> Sequence[Release]:
        """What of this topology's kinds another controller holds that it should let go of (on
        every pass and on deletion, whichever topology the Instance has now)."""
        ...
