"""What the API server stored, compared with what was sent."""

from __future__ import annotations

import json
from typing import Any


def first_difference(sent: Any, got: Any, path: str = "") -> str | None:
    """None when every field of `sent` is in `got` with the same value (the server may add
    defaults), else the first path that differs and how. Lists must keep length and order."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return f"{path or '.'}: sent a mapping, read back {json.dumps(got)}"
        for key, value in sent.items():
            where = f"{path}.{key}"
            if key not in got:
                return f"{where}: pruned (sent {json.dumps(value)})"
            problem = first_difference(value, got[key], where)
            if problem is not None:
                return problem
        return None
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            return f"{path}: sent {json.dumps(sent)}, read back {json.dumps(got)}"
        for i, (a, b) in enumerate(zip(sent, got, strict=True)):
            problem = first_difference(a, b, f"{path}[{i}]")
            if problem is not None:
                return problem
        return None
    if type(sent) is not type(got) or sent != got:
        return f"{path}: sent {json.dumps(sent)}, read back {json.dumps(got)}"
    return None
