"""Decoding what the API server sends, defensively: nothing it stores may take the process down.

The API server accepts objects nested up to 10 000 levels deep (Go's encoding/json limit) wherever a
schema preserves unknown fields, such as an Instance's `parameters`. CPython's json decoder recurses
once per level and raises `RecursionError` near a thousand, and most code that walks an object
(deepcopy, json.dumps, pydantic) has a similar limit. So every object the runtime reads is bounded to
`MAX_DEPTH` levels: the fast C decoder handles the normal case; when it gives up, the subtrees
deeper than the bound are cut out of the text (a bracket scan that does not recurse) and replaced
by `TOO_DEEP`, and the rest of the object, its metadata included, decodes as usual. The provider
then reports the cut on the object's status instead of crashing on it, and one such object in a
list or a watch stream costs nothing to the others.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

# Deeper than any Kubernetes object the runtime reads needs (a pod template inside an
# LLMInferenceService is about 15 levels), and well inside what the C decoder survives.
MAX_DEPTH: Final = 64
# What stands in for a subtree that was cut; a string, so it survives packing and hashing.
TOO_DEEP: Final = f"<nested deeper than {MAX_DEPTH} levels: not read>"

# A JSON string (escapes included) or a bracket. Bytes: UTF-8 never puts a '"' or '\\' inside a
# multi-byte character, so this cannot split one.
_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_OPEN: Final = frozenset(b"[{")


def loads(raw: bytes | str) -> Any:
    """JSON decoded, with every subtree deeper than MAX_DEPTH replaced by TOO_DEEP. Raises
    ValueError (json.JSONDecodeError) for text that is not JSON, never RecursionError."""
    try:
        # The standard library's decoder, not orjson: its RecursionError near a thousand levels
        # is what triggers the cut, and orjson decodes up to 1024 levels, deeper than the code
        # after it (the encoders, deepcopy, pydantic) can walk.
        return json.loads(raw)
    except RecursionError:
        data = raw.encode() if isinstance(raw, str) else raw
        return json.loads(cut_deep(data, MAX_DEPTH))


def cut_deep(data: bytes, max_depth: int) -> bytes:
    """`data` with each container that opens below `max_depth` levels replaced by TOO_DEEP."""
    out: list[bytes] = []
    kept_from = 0
    depth = 0
    cut_start = -1
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token[0] in _OPEN:
            depth += 1
            if depth == max_depth + 1 and cut_start < 0:
                cut_start = match.start()
        elif token[0] != ord('"'):
            depth -= 1
            if depth == max_depth and cut_start >= 0:
                out.append(data[kept_from:cut_start])
                out.append(json.dumps(TOO_DEEP).encode())
                kept_from = match.end()
                cut_start = -1
    out.append(data[kept_from:])
    return b"".join(out)


def depth_problem(value: Any, where: str, limit: int) -> str | None:
    """`<where>.<path> nests deeper than <limit> levels` for the first path that does (or holds a
    cut subtree), else None. Iterative, so any depth is safe to inspect."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        node, path, depth = stack.pop()
        if node == TOO_DEEP or depth > limit:
            return f"{path} nests deeper than {limit} levels"
        if isinstance(node, dict):
            stack.extend((child, f"{path}.{key}", depth + 1) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(node))
    return None
