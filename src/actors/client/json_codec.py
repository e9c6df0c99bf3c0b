"""JSON the runtime writes: orjson, with the standard library behind it.

orjson, because the runtime encodes JSON on its hot paths (request bodies, packing the local
stores, hashing applied intent, reading the packed stores back), where it is several times faster
than `json`. It refuses a few things `json` takes: integers beyond 64
bits, lone surrogates, nesting past 255 levels (encoding) or 1024 (decoding), keys that are not
strings. The API server does not send these, but nothing it accepts may take the process down, so
each refusal falls back to the standard library.

What the API server sends is decoded by `actors.client.decode`, with the standard library: its depth
bound depends on that decoder's limit.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson


def dumps(obj: Any, *, sort_keys: bool = False) -> bytes:
    """Compact JSON as UTF-8 bytes; with `sort_keys`, a canonical form (for content hashes)."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(obj, sort_keys=sort_keys, separators=(",", ":")).encode()


def loads(raw: bytes | str) -> Any:
    """JSON this process wrote (the packed stores: already bounded by `actors.client.decode`). Raises
    ValueError for text that is not JSON; RecursionError (from the standard library) for nesting it
    cannot follow."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def content_hash(obj: Any) -> bytes:
    """A 128-bit digest of `obj`'s canonical JSON: collision-safe for telling whether something
    changed, 16 bytes per cached object."""
    return hashlib.blake2b(dumps(obj, sort_keys=True), digest_size=16).digest()
