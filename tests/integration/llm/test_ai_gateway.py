"""The Envoy AI Gateway integration through the real runtime, with the real Gateway API, Envoy AI
Gateway and Envoy Gateway CRDs.

KServe's real controllers run (the `kserve` fixture); no Envoy controller does: the test writes what
Envoy would (the AIGatewayRoute's Accepted condition, the Gateway's address) through the status
subresources.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio
import pytest

from actors import Wake
from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from actors.contract import stamp
from actors.interface import KubeObject, ReconcileContext, Resource, StatusReport
from actors.manager.manager import Manager
from provider.kserve import Checked, KServeProvider, build_provider
from provider.model import kinds
from provider.model.catalog import Catalogs
from provider.model.kinds import GATEWAYS
from provider.model.names import PROVIDER_NAME
from provider.shared_actors.ai_gateway import AIGatewayActor
from provider.topologies.llm import own_conditions, status as llm_status
from tests.support.instance_status import conditions_of, connection_secret, wait_phase, wait_status, workload_url
from tests.support.instances import llm_instance
from tests.support.kserve import KServeCluster
from tests.support.llm_runtime import READY_TIMEOUT, WakeSpy, Woken
from tests.support.read_back import first_difference
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]

NOW = "2026-01-01T00:00:00Z"

GATEWAY = "gw"
ADDRESS = "203.0.113.10"
ROUTE = kinds.AI_GATEWAY_ROUTE
POLICY = kinds.BACKEND_TRAFFIC_POLICY


def gateway_env(namespace: str) -> dict[str, str]:
    return {
        "AI_GATEWAY_ENABLED": "true",
        "AI_GATEWAY_NAME": GATEWAY,
        "AI_GATEWAY_NAMESPACE": namespace,
        "AI_GATEWAY_RATE_LIMIT_REDIS_URL": "redis://redis:6379",
    }


def gateway(namespace: str) -> KubeObject:
    return {
        "apiVersion": GATEWAYS.api_version,
        "kind": GATEWAYS.kind,
        "metadata": {"name": GATEWAY, "namespace": namespace},
        "spec": {
            "gatewayClassName": "envoy-ai-gateway",
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        },
    }


async def give_gateway_address(kube: KubeClient, namespace: str) -> None:
    """Play Envoy Gateway: the Gateway gets its address."""
    await kube.patch(
        GATEWAYS,
        namespace,
        GATEWAY,
        {"status": {"addresses": [{"type": "IPAddress", "value": ADDRESS}]}},
        subresource="status",
    )


async def accept_route(kube: KubeClient, namespace: str, name: str) -> None:
    """Play the Envoy AI Gateway controller: the route is Accepted (for its current generation)."""
    route = await kube.get(ROUTE, namespace, name)
    assert route is not None
    condition = {
        "type": "Accepted",
        "status": "True",
        "reason": "Accepted",
        "message": "Route accepted",
        "lastTransitionTime": NOW,
        "observedGeneration": route["metadata"]["generation"],
    }
    await kube.patch(ROUTE, namespace, name, {"status": {"conditions": [condition]}}, subresource="status")


async def test_gateway_address_reaches_opted_in_instances_within_one_reconcile(
    kserve: KServeCluster, kserve_namespace: str
) -> None:
    """Route and quota policy for the opted-in Instances only, read back as sent; the Gateway's new
    address reaches their `<name>-conn` in one reconcile each, the ClusterIP Instance untouched;
    leaving the AI Gateway deletes the route and policy; a restart without the rate-limit Redis
    deletes the policy, and does not flip Ready Instances while the Gateway is first listed."""
    kube, namespace, controlplane = kserve.kube, kserve_namespace, kserve.plane
    env = gateway_env(namespace)
    await kube.create(GATEWAYS, gateway(namespace))
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    provider, shared = build_provider(env, client)
    opted_in = {
        "alpha": llm_instance(
            "alpha",
            namespace,
            on_cluster=True,
            topology={"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 5000},
        ),
        "beta": llm_instance("beta", namespace, on_cluster=True, topology={"externalAccess": "EnvoyAIGateway"}),
    }
    plain = llm_instance("gamma", namespace, on_cluster=True, topology={"externalAccess": "ClusterIP"})

    async def get(resource: Resource, name: str) -> KubeObject | None:
        return await kube.get(resource, namespace, name)

    def present(resource: Resource, name: str) -> Callable[[], Awaitable[KubeObject | None]]:
        return lambda: get(resource, name)

    async with running_manager(controlplane, provider, namespace, shared=shared, client=client) as (manager, _):
        created = {name: await kube.create(INSTANCES, body) for name, body in {**opted_in, "gamma": plain}.items()}

        # Route and quota policy for the opted-in Instances only, as rendered.
        for name in opted_in:
            instance = created[name]
            wanted = {
                o["kind"]: stamp(o, instance, PROVIDER_NAME)
                for o in provider.render(instance, catalogs=Catalogs())
                if o["kind"] in (ROUTE.kind, POLICY.kind)
            }
            for resource, obj_name in ((ROUTE, f"{name}-ai-gateway"), (POLICY, f"{name}-token-limit")):
                # The first passes of three Instances on a loaded machine: a generous timeout.
                got = await wait_for(present(resource, obj_name), timeout=READY_TIMEOUT)
                sent = {k: v for k, v in wanted[resource.kind].items() if k not in ("apiVersion", "kind")}
                problem = first_difference(sent, got)
                assert problem is None, f"{resource.kind}/{obj_name}: {problem}"
        await wait_for(present(kinds.LLM_INFERENCE_SERVICE, "gamma"), timeout=READY_TIMEOUT)
        assert await get(ROUTE, "gamma-ai-gateway") is None
        assert await get(POLICY, "gamma-token-limit") is None
        alpha_policy = await get(POLICY, "alpha-token-limit")
        beta_policy = await get(POLICY, "beta-token-limit")
        assert alpha_policy is not None and beta_policy is not None
        assert alpha_policy["spec"]["rateLimit"]["global"]["rules"][0]["limit"] == {"requests": 5000, "unit": "Hour"}
        assert beta_policy["spec"]["rateLimit"]["global"]["rules"][0]["limit"] == {"requests": 1000, "unit": "Hour"}
        route = await get(ROUTE, "alpha-ai-gateway")
        assert route is not None
        assert route["spec"]["parentRefs"][0]["name"] == GATEWAY
        assert route["spec"]["rules"][0]["backendRefs"][0]["name"] == "alpha-inference-pool"

        # KServe serves all three; Envoy accepts both routes. The Gateway has no address yet.
        for name in created:
            await wait_for(present(kinds.LLM_INFERENCE_SERVICE, name), timeout=READY_TIMEOUT)
        for name in opted_in:
            await accept_route(kube, namespace, name + "-ai-gateway")
        # Each waits for KServe to run its workload (a full KServe round trip, three at a time).
        for name in opted_in:
            status = await wait_phase(
                kube, namespace, name, "Provisioning", llm_status.WAITING_GATEWAY_ADDRESS, timeout=READY_TIMEOUT
            )
            assert conditions_of(status)[own_conditions.AI_GATEWAY_ROUTE]["status"] == "True"
        await wait_phase(kube, namespace, "gamma", "Ready", timeout=READY_TIMEOUT)
        gamma_secret = await connection_secret(kube, namespace, "gamma")
        assert gamma_secret["uri"] == f"{workload_url('gamma', namespace)}:8000"

        # Whom the Gateway's change wakes, and what each reconcile from then on publishes. (Not a
        # count of reconciles: KServe's late status writes, the not-yet-Ready poll and the resync
        # may reconcile any of the three at any time.)
        wakes = spy_wakes(shared.get(AIGatewayActor))
        passes = connection_per_pass(manager, provider, created, since=wakes)

        await give_gateway_address(kube, namespace)

        async def published() -> bool | NotYet:
            # The Secrets, and the first pass of each since the change done (a pass under way at
            # the change may write the Secret first).
            uris = {name: (await connection_secret(kube, namespace, name)).get("uri") for name in opted_in}
            first_done = all(passes[name][:1] not in ([], [UNDER_WAY]) for name in opted_in)
            done = set(uris.values()) == {f"http://{ADDRESS}"} and first_done
            return done or NotYet({"secrets": uris, "passes": passes})

        await wait_for(published, what="the gateway URL in the opted-in Instances' Secrets")
        print(f"after the Gateway address write: woken {wakes.calls}; connection per pass {passes}")
        # The address change woke exactly the opted-in Instances, once; the ClusterIP one not at all.
        assert wakes.calls == [Woken(frozenset(f"{namespace}/{name}" for name in opted_in), len(opted_in))]
        # Within one reconcile: the first pass of each that began after the change carried it.
        for name in opted_in:
            assert passes[name][:1] == [f"http://{ADDRESS}"], (name, passes[name])
        assert await connection_secret(kube, namespace, "gamma") == gamma_secret

        for name in opted_in:
            status = await wait_phase(kube, namespace, name, "Ready")
            assert (await connection_secret(kube, namespace, name)) == {
                "type": "kserve-ai-gateway",
                "provider": PROVIDER_NAME,
                "host": ADDRESS,
                "port": "80",
                "uri": f"http://{ADDRESS}",
            }
        token = conditions_of(await wait_phase(kube, namespace, "alpha", "Ready"))[own_conditions.TOKEN_LIMIT]
        assert (token["status"], token["reason"]) == ("True", "Enforced")

        # beta leaves the AI Gateway: its route and quota go, its details fall back in-cluster.
        await kube.patch(
            INSTANCES, namespace, "beta", {"spec": {"topology": {"parameters": {"externalAccess": "ClusterIP"}}}}
        )

        async def beta_left() -> bool:
            return await get(ROUTE, "beta-ai-gateway") is None and await get(POLICY, "beta-token-limit") is None

        await wait_for(beta_left)

        async def beta_in_cluster() -> bool | NotYet:
            uri = (await connection_secret(kube, namespace, "beta")).get("uri")
            return uri == f"{workload_url('beta', namespace)}:8000" or NotYet(uri)

        # Leaving the AI Gateway changes beta's LLMInferenceService (its scheduler config goes):
        # beta is Updating until KServe has reconciled that, a KServe round trip.
        await wait_for(beta_in_cluster, what="beta's in-cluster URL in its Secret", timeout=READY_TIMEOUT)

        # The status is written after the connection Secret in the same pass: wait for it, not just
        # for Ready (which beta already was).
        await wait_status(
            kube,
            namespace,
            "beta",
            lambda s: s.get("phase") == "Ready" and own_conditions.AI_GATEWAY_ROUTE not in conditions_of(s),
            "Ready without its AI Gateway route",
            timeout=READY_TIMEOUT,
        )
        llmisvc = await get(kinds.LLM_INFERENCE_SERVICE, "beta")
        assert llmisvc is not None
        assert {"name": "kserve-config-llm-scheduler"} not in (llmisvc["spec"].get("baseRefs") or [])
        # alpha keeps its route.
        assert await get(ROUTE, "alpha-ai-gateway") is not None
        assert await get(POLICY, "alpha-token-limit") is not None

    # The chart drops the rate-limit Redis (a restarted provider): the quota policy goes, since it
    # would not be enforced; the route stays and the Instance says why the quota is gone.
    env = {k: v for k, v in gateway_env(namespace).items() if k != "AI_GATEWAY_RATE_LIMIT_REDIS_URL"}
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    provider, shared = build_provider(env, client)
    # A restart must not flip a Ready Instance to "Waiting for Envoy AI Gateway address" while the
    # Gateway's first list is still on its way (made slow here to show it).
    reports = spy_status(provider, "alpha")
    slow_gateway_list(client, seconds=2.0)
    async with running_manager(controlplane, provider, namespace, shared=shared, client=client):

        async def policy_dropped() -> bool:
            return await get(POLICY, "alpha-token-limit") is None

        await wait_for(policy_dropped)
        assert await get(ROUTE, "alpha-ai-gateway") is not None

        def quota_unenforced(status: dict[str, Any]) -> bool:
            token = conditions_of(status).get(own_conditions.TOKEN_LIMIT) or {}
            return status.get("phase") == "Ready" and token.get("reason") == "RateLimitBackendNotConfigured"

        status = await wait_status(kube, namespace, "alpha", quota_unenforced, "Ready, its quota not enforced")
        token = conditions_of(status)[own_conditions.TOKEN_LIMIT]
        assert token["status"] == "False"
        assert (await connection_secret(kube, namespace, "alpha"))["uri"] == f"http://{ADDRESS}"
        assert reports and all(report == "Ready: " for report in reports), reports


def spy_wakes(gateway: AIGatewayActor) -> WakeSpy:
    """Whom the actor's address changes wake (wraps the `wake` it hands `publish`)."""
    wakes = WakeSpy()
    inner = gateway.publish

    def publish(addresses: tuple[str, ...], wake: Wake) -> None:
        inner(addresses, wakes.wrap(wake))

    gateway.publish = publish  # type: ignore[method-assign]
    return wakes


UNDER_WAY = "(under way)"
NO_STATUS_PASS = "(no status pass)"
NO_DETAILS = "(no connection details)"


def connection_per_pass(
    manager: Manager, provider: KServeProvider, names: Iterable[str], *, since: WakeSpy
) -> dict[str, list[str]]:
    """Per Instance in `names`, the connection URI of each reconcile that began after the first
    wake `since` saw, in order: what that pass's status step reported (and so wrote to
    `<name>-conn`), UNDER_WAY until then, NO_STATUS_PASS for a pass that ended without one. A pass
    under way at the wake is not listed: it may have read the old address, and the wake runs the
    Instance again after it. (Wraps the manager's reconciler and the provider's status.)"""
    passes: dict[str, list[str]] = {name: [] for name in names}
    current: set[str] = set()  # Instances in a listed pass now (one pass per Instance at a time)
    inner_reconcile = manager.actors.reconcile

    async def reconcile(key: str) -> Any:
        name = key.partition("/")[2]
        if not since.calls or name not in passes:
            return await inner_reconcile(key)
        passes[name].append(UNDER_WAY)
        current.add(name)
        try:
            return await inner_reconcile(key)
        finally:
            current.discard(name)
            if passes[name][-1] == UNDER_WAY:
                passes[name][-1] = NO_STATUS_PASS

    inner_status = provider.status

    async def status(ctx: ReconcileContext, valid: Checked) -> StatusReport:
        report = await inner_status(ctx, valid)
        name = ctx.instance["metadata"]["name"]
        if name in current:
            passes[name][-1] = report.connection.uri if report.connection is not None else NO_DETAILS
        return report

    manager.actors.reconcile = reconcile
    provider.status = status  # type: ignore[method-assign]
    return passes


def spy_status(provider: KServeProvider, name: str) -> list[str]:
    """Every status report of Instance `name`, as "phase: message" (wraps the provider's status)."""
    reports: list[str] = []
    inner = provider.status

    async def status(ctx: ReconcileContext, valid: Checked) -> StatusReport:
        report = await inner(ctx, valid)
        if ctx.instance["metadata"]["name"] == name:
            reports.append(f"{report.phase}: {report.message}")
        return report

    provider.status = status  # type: ignore[method-assign]
    return reports


def slow_gateway_list(client: KubeClient, seconds: float) -> None:
    """Delay the client's lists of Gateways (the AI Gateway actor's informer) by `seconds`."""
    inner = client.list_all

    async def list_all(res: Resource, namespace: str | None = None, **kwargs: Any) -> tuple[list[KubeObject], str]:
        if res == GATEWAYS:
            await anyio.sleep(seconds)
        return await inner(res, namespace, **kwargs)

    client.list_all = list_all  # type: ignore[method-assign]


INFERENCE_POOLS = Resource("inference.networking.k8s.io", "v1", "inferencepools", "InferencePool")


async def test_a_suspended_instance_keeps_its_route_and_quota_and_says_so(
    kserve: KServeCluster, kserve_namespace: str
) -> None:
    """replicas 0 on an AI Gateway Instance: KServe deletes the InferencePool the route sends to; the
    route and the quota policy stay exactly as they were (not written), and their conditions say the
    Instance is suspended; the gateway's address stays in `<name>-conn`. Resumed, both are as before."""
    kube, namespace, controlplane = kserve.kube, kserve_namespace, kserve.plane
    await kube.create(GATEWAYS, gateway(namespace))
    await give_gateway_address(kube, namespace)
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    provider, shared = build_provider(gateway_env(namespace), client)
    topology = {"externalAccess": "EnvoyAIGateway", "tokenLimitPerHour": 5000}
    body = llm_instance("alpha", namespace, on_cluster=True, topology=topology)
    async with running_manager(controlplane, provider, namespace, shared=shared, client=client):
        await kube.create(INSTANCES, body)

        async def route() -> KubeObject | None:
            return await kube.get(ROUTE, namespace, "alpha-ai-gateway")

        await wait_for(route, timeout=READY_TIMEOUT)  # the first pass, on a loaded machine
        await accept_route(kube, namespace, "alpha-ai-gateway")
        await wait_phase(kube, namespace, "alpha", "Ready", timeout=READY_TIMEOUT)
        secret = await connection_secret(kube, namespace, "alpha")
        kept: dict[Resource, KubeObject] = {}
        for resource, name in ((ROUTE, "alpha-ai-gateway"), (POLICY, "alpha-token-limit")):
            obj = await kube.get(resource, namespace, name)
            assert obj is not None, name
            kept[resource] = obj
        assert await kube.get(INFERENCE_POOLS, namespace, "alpha-inference-pool") is not None

        await kube.patch(INSTANCES, namespace, "alpha", {"spec": {"components": {"llmEngine": {"replicas": 0}}}})
        status = await wait_phase(kube, namespace, "alpha", "Suspended", timeout=READY_TIMEOUT)

        async def pool_gone() -> bool:
            return await kube.get(INFERENCE_POOLS, namespace, "alpha-inference-pool") is None

        await wait_for(pool_gone, what="KServe to delete the InferencePool", timeout=READY_TIMEOUT)
        conditions = conditions_of(status)
        for type_ in (own_conditions.AI_GATEWAY_ROUTE, own_conditions.TOKEN_LIMIT):
            assert (conditions[type_]["status"], conditions[type_]["reason"]) == ("False", "InstanceSuspended"), type_
        assert (
            "KServe deleted InferencePool alpha-inference-pool"
            in conditions[own_conditions.AI_GATEWAY_ROUTE]["message"]
        )
        for resource, obj in kept.items():
            now = await kube.get(resource, namespace, obj["metadata"]["name"])
            assert now is not None and now["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
        assert await connection_secret(kube, namespace, "alpha") == secret

        await kube.patch(INSTANCES, namespace, "alpha", {"spec": {"components": {"llmEngine": {"replicas": 1}}}})
        status = await wait_phase(kube, namespace, "alpha", "Ready", timeout=READY_TIMEOUT)
        conditions = conditions_of(status)
        assert conditions[own_conditions.AI_GATEWAY_ROUTE]["reason"] == "Accepted"
        assert conditions[own_conditions.TOKEN_LIMIT]["reason"] == "Enforced"
        assert await connection_secret(kube, namespace, "alpha") == secret
