"""What a hostile or careless writer sends the API server, which the provider must survive: JSON
nested deeper than json.dumps writes, requests with a body written by hand (what KubeClient cannot
send), and a KServe object's status that KServe itself would never write."""

from __future__ import annotations

import json
import re
import ssl
import urllib.error
import urllib.request
from typing import Any

import anyio

from actors.interface import KubeObject
from provider.model.kinds import LLM_INFERENCE_SERVICE

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def nested_json(depth: int, leaf: str = "1") -> str:
    """`{"a":{"a":...leaf...}}`, `depth` objects deep, as text (json.dumps would recurse)."""
    return '{"a":' * depth + leaf + "}" * depth


def with_deep_value(obj: KubeObject, path: tuple[str, ...], depth: int) -> str:
    """`obj` as JSON text with the value at `path` replaced by an object nested `depth` deep."""
    marker = "__deep_value__"
    node = obj
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = marker
    return json.dumps(obj).replace(json.dumps(marker), nested_json(depth), 1)


def json_depth(data: bytes) -> int:
    """How deep the containers of a JSON text nest (brackets inside strings do not count)."""
    depth = deepest = 0
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


class RawApi:
    """Requests with a body written by hand, as the admin, for what KubeClient cannot send."""

    def __init__(self, controlplane: Any) -> None:
        self.server = controlplane.server
        self.token = controlplane.admin_token
        self.context = ssl.create_default_context(cafile=str(controlplane.ca_file))

    async def send(self, method: str, path: str, body: str | None = None) -> tuple[int, bytes]:
        return await anyio.to_thread.run_sync(self._send, method, path, body)

    def _send(self, method: str, path: str, body: str | None) -> tuple[int, bytes]:
        request = urllib.request.Request(
            self.server + path,
            data=body.encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60, context=self.context) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()


async def hostile_status(kube: Any, namespace: str, name: str, status: dict[str, Any]) -> None:
    """Write an LLMInferenceService's status as a hostile or broken writer could (anyone allowed to
    update that subresource): what KServe itself would never write, to see the provider hold."""
    await kube.patch(LLM_INFERENCE_SERVICE, namespace, name, {"status": status}, subresource="status")
