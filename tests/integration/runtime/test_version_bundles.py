"""Version bundles through the real runtime and a real Provider resource: `spec.version` checked
with the OpenEverest runtime's message (reconciler and validation endpoint), the effective bundle
written to `status.version`, and a Provider change rechecking the Instances it concerns."""

from __future__ import annotations

from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, PROVIDERS
from actors.interface import KubeObject
from tests.support.instances import null_instance
from tests.support.null_provider import NullProvider
from tests.support.runtime import running_manager, wait_quiet
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration


def provider_resource(name: str, *bundles: str) -> KubeObject:
    return {
        "apiVersion": PROVIDERS.api_version,
        "kind": PROVIDERS.kind,
        "metadata": {"name": name},
        "spec": {"versions": [{"name": b, "default": i == 0, "components": {}} for i, b in enumerate(bundles)]},
    }


async def status_of(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    obj = await kube.get(INSTANCES, namespace, name) or {}
    status: dict[str, Any] = obj.get("status") or {}
    return status


async def test_versions_checked_resolved_and_rechecked_on_provider_change(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    name = f"vb-{namespace}"[:63]
    try:
        async with running_manager(controlplane, NullProvider(name=name), namespace) as (manager, _):
            # No Provider resource yet: a chosen version cannot be checked (the Go runtime's error).
            await kube.create(INSTANCES, null_instance("early", namespace, provider=name, version="1.0"))
            missing = f'fetching provider for version validation: providers.core.openeverest.io "{name}" not found'

            async def failed_missing() -> bool:
                return (await status_of(kube, namespace, "early")).get("message") == missing

            await wait_for(failed_missing)
            assert (await status_of(kube, namespace, "early"))["phase"] == "Failed"
            assert await manager.validate(null_instance("x", namespace, provider=name, version="1.0")) == missing

            # The Provider appears: the Instance is rechecked and takes its bundle.
            await kube.create(PROVIDERS, provider_resource(name, "1.0"))

            async def ready(obj_name: str, bundle: str) -> bool:
                status = await status_of(kube, namespace, obj_name)
                return status.get("phase") == "Ready" and status.get("version") == bundle

            await wait_for(lambda: ready("early", "1.0"))

            # No version: the default bundle is resolved and frozen in status.version.
            await kube.create(INSTANCES, null_instance("defaulted", namespace, provider=name))
            await wait_for(lambda: ready("defaulted", "1.0"))

            # A version the Provider does not define: Failed with the runtime's exact message, and
            # the validation endpoint says the same.
            await kube.create(INSTANCES, null_instance("newer", namespace, provider=name, version="2.0"))
            undefined = f'version "2.0" is not defined by provider "{name}"'

            async def failed_undefined() -> bool:
                status = await status_of(kube, namespace, "newer")
                return status.get("phase") == "Failed" and status.get("message") == undefined

            await wait_for(failed_undefined)
            assert await manager.validate(null_instance("x", namespace, provider=name, version="2.0")) == undefined
            assert await manager.validate(null_instance("x", namespace, provider=name, version="1.0")) is None
            # Bad input is not retried hot: the manager settles (a hot retry would fail this wait),
            # and then this Instance does not run again by itself...
            await wait_quiet(manager)
            assert manager.actors.next_run(f"{namespace}/newer") is None, "a run is scheduled without an event"
            # ...but a Provider upgrade that defines the bundle reruns it (no spec edit, no resync).
            provider = await kube.get(PROVIDERS, None, name)
            assert provider is not None
            provider["spec"] = provider_resource(name, "1.0", "2.0")["spec"]
            await kube.replace(PROVIDERS, provider)
            await wait_for(lambda: ready("newer", "2.0"))
            # The frozen bundle of the defaulted Instance stays.
            assert (await status_of(kube, namespace, "defaulted"))["version"] == "1.0"
    finally:
        await kube.delete(PROVIDERS, None, name)
