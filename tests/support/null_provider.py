"""A provider with no KServe knowledge: one ConfigMap per Instance, Ready at once (its Instances:
`tests.support.instances.null_instance`).

It exercises the runtime alone (finalizer, apply, prune, status, connection Secret, cleanup) in
integration tests, and gives benchmarks the apply floor per Instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from actors.interface import (
    ConnectionDetails,
    KubeObject,
    Phase,
    ReconcileContext,
    Release,
    Resource,
    StatusReport,
    ValidationFailed,
)

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
NAME = "provider-kserve"


@dataclass
class NullProvider:
    name: str = NAME
    cleanups: list[str] = field(default_factory=list)
    ready: bool = True

    @property
    def annotation_domain(self) -> str:
        return f"{self.name}.openeverest.io"

    def owned_resources(self) -> Sequence[Resource]:
        return (CONFIGMAPS,)

    def derives(self, instance_name: str, resource: Resource, name: str) -> bool:
        return resource == CONFIGMAPS and name in (f"{instance_name}-cm", f"{instance_name}-extra")

    async def validate(self, ctx: ReconcileContext) -> None:
        params = (ctx.instance["spec"].get("topology") or {}).get("parameters") or {}
        if "size" in params and not isinstance(params["size"], int):
            raise ValidationFailed("topology.parameters.size: Input should be a valid integer")

    async def desired(self, ctx: ReconcileContext, valid: None) -> list[KubeObject]:
        meta = ctx.instance["metadata"]
        params = (ctx.instance["spec"].get("topology") or {}).get("parameters") or {}
        objects: list[KubeObject] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{meta['name']}-cm"},
                "data": {"size": str(params.get("size", 1))},
            }
        ]
        if params.get("extra"):
            objects.append(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{meta['name']}-extra"}, "data": {}}
            )
        return objects

    async def status(self, ctx: ReconcileContext, valid: None) -> StatusReport:
        meta = ctx.instance["metadata"]
        host = f"{meta['name']}.{meta['namespace']}.svc.cluster.local"
        if not self.ready:
            return StatusReport(Phase.PROVISIONING, "waiting", requeue_after=3600)
        return StatusReport(
            Phase.READY,
            connection=ConnectionDetails(type="null", provider=self.name, host=host, port="80", uri=f"http://{host}"),
        )

    def releases(self, ctx: ReconcileContext) -> Sequence[Release]:
        return ()  # nothing of a null Instance's is held by another controller

    async def cleanup(self, ctx: ReconcileContext) -> None:
        self.cleanups.append(ctx.key.name)


class RefusedConfigMap(NullProvider):
    """The null provider, but an Instance with `refused` asks for a ConfigMap the API server rejects."""

    async def desired(self, ctx: ReconcileContext, valid: None) -> list[KubeObject]:
        objects = await super().desired(ctx, valid)
        if (ctx.instance["spec"]["topology"].get("parameters") or {}).get("refused"):
            objects[0]["data"] = {"not a key!": "x"}
        return objects


@dataclass
class StalledProvider(NullProvider):
    """The null provider whose desired state never comes: each pass waits in Sync until it is
    cancelled; `syncing` is set once a pass is there."""

    syncing: anyio.Event = field(default_factory=anyio.Event)

    async def desired(self, ctx: ReconcileContext, valid: None) -> list[KubeObject]:
        self.syncing.set()
        await anyio.sleep_forever()
        raise AssertionError("sleep_forever returned")
