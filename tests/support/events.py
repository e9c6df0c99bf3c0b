"""The Events a controller recorded about an object, as a test reads them back."""

from __future__ import annotations

from actors.client import KubeClient
from actors.client.known_resources import EVENTS
from actors.interface import KubeObject


async def events_about(
    kube: KubeClient, namespace: str, name: str, controller: str = "provider-kserve"
) -> list[KubeObject]:
    items, _ = await kube.list_all(EVENTS, namespace)
    return [e for e in items if e["regarding"]["name"] == name and e["reportingController"] == controller]
