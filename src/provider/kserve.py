"""`KServeProvider`: the runtime's `actors.interface.Provider` for KServe.

It parses the Instance, checks it is ours, dispatches on `spec.topology.type` to a pure topology
handler (provider.topologies.registry) and gathers the few inputs that need an API read or a shared actor
(catalogs, node addresses, the AI Gateway's address) before calling it. `render` is the one code
path from an Instance to its desired objects: the runtime's `desired()` and the `provider-kserve
render` command both use it, so what render prints is what the controller applies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import structlog
from pydantic import ValidationError

from actors import (
    ApiError,
    KubeClient,
    KubeObject,
    Provider,
    ReconcileContext,
    Release,
    Resource,
    SharedActors,
    StatusReport,
    ValidationFailed,
)
from provider.component_status import autoscaling_condition, component_statuses, held_back, scaled_events
from provider.model.catalog import Catalogs
from provider.model.instance import Instance
from provider.model.kinds import NODE, OPTIONAL, SERVICE
from provider.model.names import ANNOTATION_DOMAIN, PROVIDER_NAME
from provider.model.settings import ProviderSettings
from provider.rules.error_messages import error_messages
from provider.rules.fields import check_object_name
from provider.rules.pod_security import Level, PodPolicy
from provider.rules.problems import Problems
from provider.rules.quote import quote
from provider.shared_actors.ai_gateway import AIGatewayActor
from provider.shared_actors.catalog_actors import register_catalogs
from provider.shared_actors.namespace_levels import NamespaceLevels
from provider.shared_actors.workload_pods import ComponentPods, WorkloadPods
from provider.shared_actors.workload_scaling import ScalingFacts, WorkloadScaling
from provider.topologies.protocol import StatusInputs, TopologyHandler
from provider.topologies.registry import build_topologies

log = structlog.get_logger(__name__)

# Where catalogs come from: fixed ones, or the catalog actors' current snapshot.
CatalogSource = Catalogs | Callable[[], Catalogs]
# The shared AI Gateway's published base URL, None until it has an address.
GatewayAddressSource = Callable[[], str | None]
# A namespace's enforced Pod Security level, None when it has no label.
NamespaceLevelSource = Callable[[str], Level | None]
# The pods KServe runs for an Instance (namespace, name), by component.
WorkloadPodsSource = Callable[[str, str], Mapping[str, ComponentPods]]
# KServe's autoscalers for an Instance (namespace, name), by component.
WorkloadScalingSource = Callable[[str, str], Mapping[str, ScalingFacts]]


def node_addresses(nodes: Iterable[KubeObject]) -> list[str]:
    """Node addresses for NodePort endpoints: every ExternalIP first, then every InternalIP."""
    external: list[str] = []
    internal: list[str] = []
    for node in nodes:
        for address in (node.get("status") or {}).get("addresses") or []:
            kind, value = address.get("type"), str(address.get("address") or "")
            if value and kind == "ExternalIP":
                external.append(value)
            elif value and kind == "InternalIP":
                internal.append(value)
    return external + internal


def _uses_node_port(observed: Mapping[tuple[Resource, str], KubeObject]) -> bool:
    return any(
        resource == SERVICE and (obj.get("spec") or {}).get("type") == "NodePort"
        for (resource, _), obj in observed.items()
    )


@contextmanager
def _one_line_messages() -> Iterator[None]:
    """Messages end up in `kubectl get` and in conditions: escape any control characters (a key or
    value the user wrote with a newline, say) that a rule echoed without quoting."""
    try:
        yield
    except ValidationFailed as exc:
        text = exc.message
        if not text.isprintable():
            text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
            raise ValidationFailed(text) from None
        raise


@dataclass(frozen=True)
class Checked:
    """An Instance that passed validation: the parsed model, its topology and what that topology
    read (its inputs), handed from `validate` to `desired` and `status` of the same pass."""

    instance: Instance
    topology: TopologyHandler[Any]
    inputs: Any


class KServeProvider:
    def __init__(
        self,
        settings: ProviderSettings,
        *,
        catalogs: CatalogSource | None = None,
        topologies: Mapping[str, TopologyHandler[Any]] | None = None,
        gateway_base_url: GatewayAddressSource | None = None,
        namespace_level: NamespaceLevelSource | None = None,
        workload_pods: WorkloadPodsSource | None = None,
        workload_scaling: WorkloadScalingSource | None = None,
    ) -> None:
        self.settings = settings
        self._workload_pods = workload_pods
        self._workload_scaling = workload_scaling
        self._namespace_level = namespace_level
        self._catalogs: CatalogSource = catalogs if catalogs is not None else Catalogs()
        self.topologies: Mapping[str, TopologyHandler[Any]] = (
            topologies if topologies is not None else build_topologies(settings)
        )
        self._gateway_base_url = gateway_base_url

    @property
    def name(self) -> str:
        return PROVIDER_NAME

    @property
    def annotation_domain(self) -> str:
        return ANNOTATION_DOMAIN

    def owned_resources(self) -> Sequence[Resource]:
        """The union of the topologies' kinds: pruning then also removes a previous topology's objects."""
        seen: dict[Resource, None] = {}
        for handler in self.topologies.values():
            seen.update(dict.fromkeys(handler.resources()))
        return tuple(seen)

    def derives(self, instance_name: str, resource: Resource, name: str) -> bool:
        """Whether any topology derives `name` for the Instance: an Instance that switched topology
        still owns the previous one's objects until they are pruned."""
        return any((resource, name) in handler.derived_names(instance_name) for handler in self.topologies.values())

    def required_resources(self) -> frozenset[Resource]:
        """Our kinds minus the optional integrations (PodMonitor, Envoy AI Gateway)."""
        return frozenset(self.owned_resources()) - OPTIONAL

    # -- synchronous core (shared by the runtime and `render`) ----------------------------------

    def parse(self, obj: KubeObject) -> Instance:
        """The Instance model, or ValidationFailed naming each problem and the field it is in."""
        try:
            instance = Instance.model_validate(obj)
        except ValidationError as exc:
            problems = Problems()
            problems.extend(error_messages("", exc))
            problems.raise_any()
            raise
        # Every derived name starts with the Instance name; the API server never hands us an empty
        # one, but render and the validation endpoint take documents as written.
        if not instance.metadata.name:
            raise ValidationFailed("metadata.name is required")
        if not instance.metadata.namespace:
            raise ValidationFailed("metadata.namespace must not be empty")
        check_object_name(instance.metadata.name, "metadata.name")
        ref = instance.spec.provider_ref.name
        if ref != PROVIDER_NAME:
            raise ValidationFailed(f'spec.providerRef.name is {quote(ref)}, but this provider is "{PROVIDER_NAME}"')
        return instance

    def topology_for(self, instance: Instance) -> TopologyHandler[Any]:
        known = ", ".join(sorted(self.topologies))
        kind = instance.spec.topology.type if instance.spec.topology is not None else None
        if not kind:
            raise ValidationFailed(f"spec.topology.type is required (one of: {known})")
        handler = self.topologies.get(kind)
        if handler is None:
            raise ValidationFailed(f"unsupported topology {quote(kind)} (one of: {known})")
        return handler

    def pod_policy(self, namespace: str) -> PodPolicy:
        """The Pod Security policy for an Instance in `namespace` (its label, else the chart's default)."""
        level = self._namespace_level(namespace) if self._namespace_level is not None else None
        return self.settings.pod_policy(level)

    def check(self, obj: KubeObject, catalogs: Catalogs, policy: PodPolicy | None = None) -> Checked:
        """Every validation rule; what they read when the Instance passes. `policy` defaults to the
        one of the Instance's namespace."""
        with _one_line_messages():
            instance = self.parse(obj)
            topology = self.topology_for(instance)
            inputs = topology.validate(instance, catalogs, policy or self.pod_policy(instance.metadata.namespace))
        return Checked(instance, topology, inputs)

    def render(
        self, obj: KubeObject, *, catalogs: Catalogs, available: frozenset[Resource] | None = None
    ) -> list[KubeObject]:
        """The desired objects of one Instance, without ownership metadata, as a first pass would
        apply them. `available` lists the served kinds (optional ones are skipped when absent); None
        means all of ours."""
        served = frozenset(self.owned_resources()) if available is None else available
        checked = self.check(obj, catalogs)
        return checked.topology.desired(checked.instance, checked.inputs, served)

    # -- the runtime's Provider protocol ----------------------------------------------------------

    def catalogs(self) -> Catalogs:
        """The catalogs as published now (an immutable snapshot: no round-trip)."""
        return self._catalogs if isinstance(self._catalogs, Catalogs) else self._catalogs()

    async def validate(self, ctx: ReconcileContext) -> Checked:
        return self.check(ctx.instance, self.catalogs())

    async def desired(self, ctx: ReconcileContext, valid: Checked) -> list[KubeObject]:
        return valid.topology.desired(valid.instance, valid.inputs, ctx.available, ctx.live)

    async def status(self, ctx: ReconcileContext, valid: Checked) -> StatusReport:
        inputs = StatusInputs(
            node_addresses=await self._node_addresses(ctx) if _uses_node_port(ctx.observed) else (),
            gateway_base_url=self._gateway_base_url() if self._gateway_base_url is not None else None,
            missing=frozenset(r for r in valid.topology.resources() if r not in ctx.available),
            catalogs=self.catalogs(),
            written=ctx.written,
        )
        report = valid.topology.status(valid.instance, valid.inputs, ctx.observed, inputs)
        if self._workload_pods is None:
            return report
        meta, components = valid.instance.metadata, valid.topology.components
        pods = self._workload_pods(meta.namespace, meta.name)
        scaling = self._workload_scaling(meta.namespace, meta.name) if self._workload_scaling is not None else {}
        report = held_back(report, components, pods)
        autoscaling = autoscaling_condition(components, scaling)
        return replace(
            report,
            components=component_statuses(components, pods, report.phase),
            conditions=[*report.conditions, *([autoscaling] if autoscaling is not None else [])],
            events=[*report.events, *scaled_events(ctx.instance, components, scaling, report.phase)],
        )

    def releases(self, ctx: ReconcileContext) -> list[Release]:
        """Every topology's releases, whatever the Instance's topology is now: it may hold objects of
        the topology it had before."""
        name = ctx.instance["metadata"]["name"]
        return [release for topology in self.topologies.values() for release in topology.releases(name, ctx.live)]

    async def cleanup(self, ctx: ReconcileContext) -> None:
        """Nothing beyond what the runtime does: it deletes every object we own (all carry the
        Instance's controller reference) and sends the releases on every retry."""

    async def _node_addresses(self, ctx: ReconcileContext) -> list[str]:
        try:
            nodes, _ = await ctx.client.list_all(NODE)
        except ApiError as err:
            # Only the NodePort details depend on it; status says it is still waiting for them.
            log.warning("cannot list nodes for NodePort connection details", error=str(err))
            return []
        return node_addresses(nodes)


# The runtime's interface, checked by the type checker here rather than only where a Manager is built.
_IMPLEMENTS: type[Provider[Checked]] = KServeProvider


def build_provider(environ: Mapping[str, str], client: KubeClient | None = None) -> tuple[KServeProvider, SharedActors]:
    """The provider as `provider-kserve run` starts it, configured from the chart's environment.

    Registers the shared actors it asks: the model and LoRA catalogs (provider.shared_actors.catalog_actors) and,
    given a client to watch the shared Gateway with, the AI Gateway actor (provider.shared_actors.ai_gateway),
    the namespaces' Pod Security levels, and the pods KServe runs for our Instances and its autoscalers for them
    (status.components).
    Without a client AI Gateway Instances stay Provisioning (`Waiting for Envoy AI Gateway address`).
    """
    settings = ProviderSettings.from_env(environ)
    shared = SharedActors()
    catalogs = register_catalogs(shared, environ)
    base_url: GatewayAddressSource | None = None
    namespace_level: NamespaceLevelSource | None = None
    workload_pods: WorkloadPodsSource | None = None
    workload_scaling: WorkloadScalingSource | None = None
    if client is not None:
        gateway = AIGatewayActor(client, settings)
        shared.register(gateway)
        namespaces = NamespaceLevels(client)
        shared.register(namespaces)
        namespace_level = namespaces.level
        pods = WorkloadPods()
        shared.register(pods)
        workload_pods = pods.components
        autoscalers = WorkloadScaling()
        shared.register(autoscalers)
        workload_scaling = autoscalers.components
        base_url = lambda: gateway.base_url  # noqa: E731 - the published snapshot, read per status pass
    provider = KServeProvider(
        settings,
        catalogs=catalogs,
        gateway_base_url=base_url,
        namespace_level=namespace_level,
        workload_pods=workload_pods,
        workload_scaling=workload_scaling,
    )
    return provider, shared
