"""KServeProvider: parsing, dispatch, the async Provider protocol and the shared render path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

import anyio
import pytest

from actors.client import ApiError, KubeClient
from actors.interface import KubeObject, Phase, ReconcileContext, Release, Resource, StatusReport, ValidationFailed
from actors.manager.options import ManagerOptions
from actors.manager.shared import SharedContext, informer_watch, wake_nobody
from provider.kserve import KServeProvider, build_provider, node_addresses
from provider.model import kinds
from provider.model.catalog import Catalogs, LoraAdapter
from provider.model.instance import Instance
from provider.model.settings import ProviderSettings
from provider.rules.pod_security import PodPolicy
from provider.shared_actors.ai_gateway import AIGatewayActor
from provider.shared_actors.catalog_actors import LoraCatalogActor, ModelCatalogActor
from provider.topologies.llm.config import KSERVE_CONFIG_FINALIZER, RELEASE_ANNOTATION
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.protocol import Live, Observed, StatusInputs, TopologyHandler, nothing_live
from tests.support.fake_kube import FakeKube
from tests.support.instances import llm_instance, predictor_instance
from tests.support.llm_topology import CATALOG, GATEWAY_SETTINGS

SETTINGS = ProviderSettings()
GATEWAY_ENV = {"AI_GATEWAY_ENABLED": "true", "AI_GATEWAY_NAME": "gw", "AI_GATEWAY_NAMESPACE": "kserve"}
OTHER = Resource("example.com", "v1", "widgets", "Widget")


class FakeTopology:
    name = "predictor"
    components: tuple[str, ...] = ("predictor",)

    def __init__(self) -> None:
        self.seen: list[StatusInputs] = []

    def resources(self) -> Sequence[Resource]:
        return (kinds.SERVICE, OTHER)

    def derived_names(self, instance_name: str) -> frozenset[tuple[Resource, str]]:
        return frozenset({(OTHER, instance_name)})

    def validate(self, instance: Instance, catalogs: Catalogs, policy: PodPolicy | None = None) -> None:
        if not catalogs.lora_adapters:
            raise ValidationFailed("fake: no catalog")

    def desired(
        self, instance: Instance, inputs: None, available: frozenset[Resource], live: Live = nothing_live
    ) -> list[KubeObject]:
        return [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": instance.metadata.name}}]

    def status(self, instance: Instance, inputs: None, observed: Observed, context: StatusInputs) -> StatusReport:
        self.seen.append(context)
        return StatusReport(Phase.READY)

    def releases(self, instance_name: str, live: Live) -> Sequence[Release]:
        return ()


def with_nodes(*nodes: KubeObject) -> FakeKube:
    """An API server holding `nodes` (named n0, n1, ... in order)."""
    kube = FakeKube()
    for i, obj in enumerate(nodes):
        kube.put(kinds.NODE, {"metadata": {"name": f"n{i}"}, **obj})
    return kube


def requested(kube: FakeKube) -> list[Resource]:
    return [call.resource for call in kube.calls]


def provider(**kwargs: Any) -> KServeProvider:
    topologies: dict[str, TopologyHandler[Any]] = {"llm": LlmTopology(SETTINGS), "predictor": FakeTopology()}
    return KServeProvider(SETTINGS, topologies=topologies, **kwargs)


def ctx(
    obj: KubeObject,
    *,
    client: Any = None,
    available: frozenset[Resource] | None = None,
    observed: dict[tuple[Resource, str], KubeObject] | None = None,
) -> ReconcileContext:
    return ReconcileContext(
        instance=obj,
        client=cast(KubeClient, client or FakeKube()),  # the provider only lists Nodes
        available=frozenset(kinds.OWNED) if available is None else available,
        observed=observed or {},
    )


async def desired(kserve: KServeProvider, context: ReconcileContext) -> list[KubeObject]:
    """What a pass applies: validated once, then desired from what validation read."""
    return await kserve.desired(context, await kserve.validate(context))


async def status(kserve: KServeProvider, context: ReconcileContext) -> StatusReport:
    """What a pass reports: validated once (against the test catalog), then the status mapping of
    what validation read."""
    return await kserve.status(context, kserve.check(context.instance, CATALOG))


def node(*addresses: tuple[str, str]) -> KubeObject:
    return {"status": {"addresses": [{"type": t, "address": a} for t, a in addresses]}}


# -- identity and dispatch ------------------------------------------------------------------------


def test_name() -> None:
    assert provider().name == "provider-kserve"


def test_owned_resources_are_the_union_without_duplicates() -> None:
    owned = provider().owned_resources()
    assert owned == (*kinds.OWNED, OTHER)


def test_required_resources_leave_out_optional_integrations() -> None:
    required = provider().required_resources()
    assert kinds.POD_MONITOR not in required
    assert kinds.AI_GATEWAY_ROUTE not in required
    assert {kinds.LLM_INFERENCE_SERVICE, kinds.SERVICE, OTHER} <= required


def test_default_registry_has_llm() -> None:
    assert isinstance(KServeProvider(SETTINGS).topologies["llm"], LlmTopology)


def test_invalid_instance_shape() -> None:
    obj = llm_instance()
    del obj["spec"]["providerRef"]
    with pytest.raises(ValidationFailed) as info:
        provider().parse(obj)
    assert info.value.message == "spec.providerRef: Field required"


@pytest.mark.parametrize(
    ("field", "message"), [("name", "metadata.name is required"), ("namespace", "metadata.namespace must not be empty")]
)
def test_empty_name_or_namespace(field: str, message: str) -> None:
    obj = llm_instance()
    obj["metadata"][field] = ""
    with pytest.raises(ValidationFailed) as info:
        provider().check(obj, CATALOG)
    assert info.value.message == message


def test_other_provider() -> None:
    obj = llm_instance()
    obj["spec"]["providerRef"]["name"] = "provider-mariadb"
    with pytest.raises(ValidationFailed) as info:
        provider().parse(obj)
    assert info.value.message == 'spec.providerRef.name is "provider-mariadb", but this provider is "provider-kserve"'


@pytest.mark.parametrize("topology_type", [None, ""])
def test_topology_type_required(topology_type: str | None) -> None:
    with pytest.raises(ValidationFailed) as info:
        provider().check(llm_instance(topology_type=topology_type), CATALOG)
    assert info.value.message == "spec.topology.type is required (one of: llm, predictor)"


def test_unsupported_topology() -> None:
    with pytest.raises(ValidationFailed) as info:
        provider().check(llm_instance(topology_type="batch"), CATALOG)
    assert info.value.message == 'unsupported topology "batch" (one of: llm, predictor)'


def test_messages_stay_on_one_line() -> None:
    with pytest.raises(ValidationFailed) as info:
        provider().check(llm_instance(engine={"odd\nkey": 1}), CATALOG)
    assert info.value.message == "llmEngine.parameters.odd\\nkey: Extra inputs are not permitted"
    with pytest.raises(ValidationFailed) as info:
        provider().render(llm_instance(topology_type="llm\tv2"), catalogs=CATALOG)
    assert info.value.message == 'unsupported topology "llm\\tv2" (one of: llm, predictor)'


def test_dispatch_to_the_named_topology() -> None:
    objs = provider().render(llm_instance(topology_type="predictor"), catalogs=CATALOG)
    assert objs == [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "chat"}}]


def test_render_is_unstamped_and_respects_available() -> None:
    objs = provider().render(llm_instance(), catalogs=CATALOG, available=provider().required_resources())
    assert [o["kind"] for o in objs] == ["LLMInferenceService"]
    assert "ownerReferences" not in objs[0]["metadata"]


def test_render_assumes_everything_served_by_default() -> None:
    kinds_ = [o["kind"] for o in provider().render(llm_instance(), catalogs=CATALOG)]
    assert kinds_ == ["LLMInferenceService", "PodMonitor"]


# -- the async Provider protocol ------------------------------------------------------------------


async def test_validate_uses_the_catalog_source() -> None:
    obj = llm_instance(engine={"loraDeployment": "enabled", "loraSlot1": "sql"})
    calls: list[int] = []

    def source() -> Catalogs:
        calls.append(1)
        return Catalogs(lora_adapters=(LoraAdapter("SQL", "sql", "hf://o/sql"),))

    await provider(catalogs=source).validate(ctx(obj))
    assert calls == [1]
    with pytest.raises(ValidationFailed) as info:
        await provider().validate(ctx(obj))
    assert info.value.message == (
        'llmEngine.parameters.loraSlot1 references unknown adapter "sql" (add it to chart loraAdapters)'
    )


async def test_a_catalog_snapshot_is_read_as_it_is() -> None:
    """`catalogs` may be a snapshot (render's, the validation endpoint's tests) instead of a shared
    actor's source: validation reads that very snapshot (the fake topology refuses an empty one)."""
    obj = llm_instance(topology_type="predictor")
    await provider(catalogs=Catalogs(lora_adapters=(LoraAdapter("x", "x", "hf://o/x"),))).validate(ctx(obj))
    with pytest.raises(ValidationFailed) as info:
        await provider(catalogs=Catalogs()).validate(ctx(obj))
    assert info.value.message == "fake: no catalog"


async def test_desired_uses_available_kinds() -> None:
    objs = await desired(provider(), ctx(llm_instance(), available=frozenset({kinds.LLM_INFERENCE_SERVICE})))
    assert [o["kind"] for o in objs] == ["LLMInferenceService"]


async def test_desired_equals_render() -> None:
    obj = llm_instance(engine={"config": "replicas: 2"}, topology={"externalAccess": "LoadBalancer"})
    assert await desired(provider(catalogs=CATALOG), ctx(obj)) == provider().render(obj, catalogs=CATALOG)


async def test_an_unparseable_instance_fails_validation_before_any_status() -> None:
    obj = llm_instance(topology_type="batch")
    with pytest.raises(ValidationFailed) as info:  # the runtime writes Failed with this message
        await status(provider(), ctx(obj))
    assert info.value.message == 'unsupported topology "batch" (one of: llm, predictor)'


async def test_status_reports_missing_optional_kinds() -> None:
    fake = FakeTopology()
    kserve = KServeProvider(SETTINGS, topologies={"predictor": fake})
    await status(kserve, ctx(llm_instance(topology_type="predictor"), available=frozenset({kinds.SERVICE})))
    assert fake.seen[0].missing == frozenset({OTHER})
    assert fake.seen[0].node_addresses == ()


async def test_status_lists_nodes_only_for_node_ports() -> None:
    client = with_nodes(node(("InternalIP", "10.0.0.1")), node(("InternalIP", "10.0.0.2"), ("ExternalIP", "1.2.3.4")))
    fake = FakeTopology()
    kserve = KServeProvider(SETTINGS, topologies={"predictor": fake})
    obj = llm_instance(topology_type="predictor")
    await status(kserve, ctx(obj, client=client))
    assert requested(client) == []
    node_port = {(kinds.SERVICE, "chat-external"): {"kind": "Service", "spec": {"type": "NodePort"}}}
    await status(kserve, ctx(obj, client=client, observed=node_port))
    assert requested(client) == [kinds.NODE]
    assert fake.seen[1].node_addresses == ["1.2.3.4", "10.0.0.1", "10.0.0.2"]


async def test_node_listing_errors_leave_no_addresses() -> None:
    client = FakeKube()
    client.fail("list", ApiError(403, "Forbidden", "nodes is forbidden", {}), resource=kinds.NODE)
    fake = FakeTopology()
    kserve = KServeProvider(SETTINGS, topologies={"predictor": fake})
    observed = {(kinds.SERVICE, "x"): {"kind": "Service", "spec": {"type": "NodePort"}}}
    await status(kserve, ctx(llm_instance(topology_type="predictor"), client=client, observed=observed))
    assert fake.seen[0].node_addresses == []


async def test_status_passes_the_gateway_address() -> None:
    def address() -> str | None:
        return "http://203.0.113.50"

    fake = FakeTopology()
    kserve = KServeProvider(SETTINGS, topologies={"predictor": fake}, gateway_base_url=address)
    await status(kserve, ctx(llm_instance(topology_type="predictor")))
    assert fake.seen[0].gateway_base_url == "http://203.0.113.50"


async def test_status_of_an_llm_instance() -> None:
    report = await status(provider(), ctx(llm_instance()))
    assert (report.phase, report.message) == (Phase.PROVISIONING, "Waiting for LLMInferenceService")


async def test_cleanup_leaves_deletion_to_the_runtime() -> None:
    client = FakeKube()
    await provider().cleanup(ctx(llm_instance(), client=client))
    assert requested(client) == []


async def test_what_kserve_holds_is_released_as_data_and_desired_writes_nothing() -> None:
    """The Instance's config on its way out, held by KServe's finalizer, no service using it: the
    release is a touch of the config, returned for the runtime to send; desired() sends nothing."""
    obj = llm_instance()
    name = obj["metadata"]["name"]
    held = {
        "metadata": {
            "name": f"{name}-config",
            "namespace": obj["metadata"]["namespace"],
            "deletionTimestamp": "2026-12-07T00:00:00Z",
            "finalizers": [KSERVE_CONFIG_FINALIZER],
        }
    }

    def live(resource: Resource, wanted: str) -> KubeObject | None:
        return held if (resource, wanted) == (kinds.LLM_INFERENCE_SERVICE_CONFIG, f"{name}-config") else None

    client = FakeKube()
    context = replace(ctx(obj, client=client), live=live)
    kserve = provider(catalogs=CATALOG)
    await desired(kserve, context)
    assert requested(client) == []
    (release,) = kserve.releases(context)
    assert (release.resource, release.namespace, release.name) == (
        kinds.LLM_INFERENCE_SERVICE_CONFIG,
        obj["metadata"]["namespace"],
        f"{name}-config",
    )
    assert list(release.patch["metadata"]["annotations"]) == [RELEASE_ANNOTATION]
    assert kserve.releases(ctx(obj)) == []  # nothing held: nothing to release


def test_node_addresses_external_first() -> None:
    nodes = [node(("Hostname", "n1"), ("InternalIP", "10.0.0.1")), node(("ExternalIP", "2001:db8::1"))]
    assert node_addresses(nodes) == ["2001:db8::1", "10.0.0.1"]


def test_build_provider_from_environment() -> None:
    kserve, shared = build_provider({"HF_TOKEN_SECRET_NAME": "hf"})
    assert kserve.settings.hf_token_secret_name == "hf"
    assert shared.find(LoraCatalogActor) is not None
    assert shared.find(AIGatewayActor) is None
    objs = kserve.render(llm_instance(), catalogs=CATALOG)
    assert objs[0]["kind"] == "ServiceAccount"


async def test_build_provider_asks_the_shared_actors() -> None:
    kserve, shared = build_provider(
        {"LORA_ADAPTER_CATALOG": '[{"name": "sql", "uri": "hf://o/sql"}]', **GATEWAY_ENV},
        client=cast(KubeClient, FakeKube()),
    )
    assert shared.find(AIGatewayActor) is not None
    options = ManagerOptions()
    watch = informer_watch(cast(KubeClient, FakeKube()), options.watch_settings(), options.shared_sync_timeout)
    context = SharedContext(wake=wake_nobody, watch=watch)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for actor in (shared.get(ModelCatalogActor), shared.get(LoraCatalogActor), shared.get(AIGatewayActor)):
                tg.start_soon(actor.run, context)
            assert kserve.catalogs().adapter("sql") is not None
            assert kserve._gateway_base_url is not None
            assert kserve._gateway_base_url() is None  # no Gateway address seen yet
            tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("engine", "topology", "settings"),
    [
        ({"config": "replicas: 2"}, {"externalAccess": "LoadBalancer", "enableMetrics": True}, {}),
        ({}, {"externalAccess": "NodePort"}, {}),
        (
            {},
            {"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 100},
            {**GATEWAY_SETTINGS, "ai_gateway_rate_limit_redis_url": "redis://r:6379"},
        ),
    ],
)
def test_every_rendered_object_is_under_a_name_the_provider_derives(
    engine: dict[str, Any], topology: dict[str, Any], settings: dict[str, Any]
) -> None:
    # The runtime indexes, prunes and deletes only objects under a derived name: an object the
    # provider renders under any other name would be re-created on every pass and never pruned.
    kserve = KServeProvider(ProviderSettings(hf_token_secret_name="hf", **settings))
    for obj in (llm_instance(engine=engine, topology=topology), predictor_instance(name="chat")):
        rendered = kserve.render(obj, catalogs=CATALOG)
        assert rendered
        for desired in rendered:
            resource = next(r for r in kserve.owned_resources() if r.kind == desired["kind"])
            assert kserve.derives("chat", resource, desired["metadata"]["name"]), desired["metadata"]["name"]
    assert not kserve.derives("chat", kinds.SERVICE, "chat-other")
    assert not kserve.derives("other", kinds.LLM_INFERENCE_SERVICE, "chat")
