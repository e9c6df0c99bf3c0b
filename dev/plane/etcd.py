"""etcd's v3 HTTP gateway: its revision, and compaction (to make watches from older versions 410)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any


def _post(etcd_url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{etcd_url}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


def revision(etcd_url: str) -> int:
    """etcd's current revision, which is also the newest resourceVersion the apiserver hands out."""
    status = _post(etcd_url, "/v3/maintenance/status", {})
    return int(status["header"]["revision"])


def compact(etcd_url: str, target: int | None = None) -> int:
    """Compact etcd up to `target` (default: current); returns the revision compacted to."""
    target = revision(etcd_url) if target is None else target
    _post(etcd_url, "/v3/kv/compaction", {"revision": str(target), "physical": True})
    return target
