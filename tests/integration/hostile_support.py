"""Helpers of the hostile-input tests (test_hostile_*.py): objects the API server accepts but
json.dumps cannot write, raw requests, and a look at the provider process from outside."""

from __future__ import annotations

import base64
import json
import re
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio

from actors.interface import KubeObject

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


def vm_hwm_mib(pid: int) -> float:
    """Peak resident memory of a process (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def vm_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def http_get(url: str, token: str | None = None, insecure: bool = False) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    context = None
    if url.startswith("https"):
        context = ssl.create_default_context()
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


async def fetch(url: str, token: str | None = None, insecure: bool = False) -> tuple[int, str]:
    """http_get off the event loop: the provider under test may serve from this very loop."""
    return await anyio.to_thread.run_sync(lambda: http_get(url, token, insecure))


async def hostile_status(kube: Any, namespace: str, name: str, status: dict[str, Any]) -> None:
    """Write an LLMInferenceService's status as a hostile or broken writer could (anyone allowed to
    update that subresource): what KServe itself would never write, to see the provider hold."""
    from provider.model.kinds import LLM_INFERENCE_SERVICE

    await kube.patch(LLM_INFERENCE_SERVICE, namespace, name, {"status": status}, subresource="status")


def secret_text(secret: KubeObject, key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()
