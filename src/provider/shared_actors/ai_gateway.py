"""The shared AI Gateway actor: follows the chart's shared Gateway and publishes its base URL.

One watch for the whole provider instead of a Gateway read in every Instance's status pass. When
the Gateway gets (or changes) an external address, every Instance that opted into the AI Gateway
is woken, so its connection details switch to the gateway URL within one reconcile.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio
import structlog
from anyio.abc import TaskStatus
from pydantic import ValidationError

from actors import KubeClient, KubeObject, SharedActor, SharedContext, Wake, wake_nobody
from provider.model.kinds import GATEWAYS
from provider.model.settings import ProviderSettings
from provider.topologies.llm.topology_params import LlmTopologyParameters
from provider.topologies.urls import default_port, origin

log = structlog.get_logger(__name__)


def uses_ai_gateway(obj: KubeObject) -> bool:
    topology = (obj.get("spec") or {}).get("topology") or {}
    if topology.get("type") != "llm":
        return False
    try:
        return LlmTopologyParameters.model_validate(topology.get("parameters") or {}).uses_ai_gateway()
    except ValidationError:
        return False


def gateway_base_url(address: str, settings: ProviderSettings) -> str | None:
    """The base URL clients use, from a Gateway `status.addresses[].value` (kserve-behavior §4.3):
    the chart's scheme and port, unless the address carries its own; the chart's hostname (TLS
    certificate name) replaces the host when set."""
    address = address.strip()
    if not address:
        return None
    scheme: str = settings.ai_gateway_scheme
    host, port = address, settings.ai_gateway_port
    parsed = urlsplit(address)
    if parsed.scheme and parsed.hostname:
        scheme, host = parsed.scheme, parsed.hostname
        port = parsed.port or default_port(scheme)
    else:
        split = urlsplit(f"//{address}")
        try:
            if split.hostname and split.port:
                host, port = split.hostname, split.port
        except ValueError:  # not host:port after all (e.g. a bare IPv6 literal)
            pass
    if settings.ai_gateway_hostname:
        host = settings.ai_gateway_hostname
    return origin(scheme, host, port)


class AIGatewayActor(SharedActor):
    """Publishes `base_url` (None until the Gateway has an address), read by every status pass."""

    name = "ai-gateway"

    def __init__(self, client: KubeClient, settings: ProviderSettings) -> None:
        self._client = client
        self._settings = settings
        self.base_url: str | None = None
        self._key = f"{settings.ai_gateway_namespace}/{settings.ai_gateway_name}"
        self._wake: Wake = wake_nobody

    @property
    def configured(self) -> bool:
        s = self._settings
        return s.ai_gateway_enabled and bool(s.ai_gateway_name and s.ai_gateway_namespace)

    async def run(self, ctx: SharedContext, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self._wake = ctx.wake
        if not self.configured:
            task_status.started()
            return
        async with anyio.create_task_group() as tg:
            # Know the address before the first Instance reads it: otherwise every Ready AI Gateway
            # Instance shows "Waiting for Envoy AI Gateway address" for a moment after each
            # restart. The manager's wait is bounded, so a missing Gateway CRD only delays start-up.
            await ctx.watch(
                tg,
                GATEWAYS,
                namespace=self._settings.ai_gateway_namespace,
                transform=_addresses,
                on_change=self._gateway_changed,
            )
            task_status.started()

    def _gateway_changed(self, key: str, old: tuple[str, ...] | None, new: tuple[str, ...] | None) -> None:
        if key == self._key:
            self.publish(new or (), self._wake)

    def publish(self, addresses: tuple[str, ...], wake: Wake) -> None:
        """The Gateway's addresses changed: publish its base URL, waking the opted-in Instances if
        the URL changed."""
        url = next((u for u in (gateway_base_url(a, self._settings) for a in addresses) if u), None)
        if url != self.base_url:
            self.base_url = url
            woken = wake(uses_ai_gateway)
            log.info("AI Gateway address changed", base_url=url, instances=woken)


def _addresses(obj: KubeObject) -> tuple[str, ...]:
    addresses = (obj.get("status") or {}).get("addresses") or []
    return tuple(str(a.get("value", "")) for a in addresses if isinstance(a, dict))
