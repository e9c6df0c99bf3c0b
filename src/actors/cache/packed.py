"""Objects kept as zlib-compressed JSON: the local stores' compact form.

A watched object as Python dicts costs several times its JSON size, compressed JSON a fraction of
it, and unpacking one is cheap next to the API requests a reconcile makes. Every unpack returns a
fresh copy, so a reconcile may modify what it reads.
"""

from __future__ import annotations

import zlib

from actors.client import json_codec
from actors.interface import KubeObject


def without_managed_fields(obj: KubeObject) -> KubeObject:
    """`obj` without managedFields: the largest part of a stored object, never read."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def compress(raw: bytes) -> bytes:
    # Level 1: nearly the ratio of the default level at a fraction of its CPU.
    return zlib.compress(raw, 1)


def pack(obj: KubeObject) -> bytes:
    """`obj` without managedFields, compressed."""
    return compress(json_codec.dumps(without_managed_fields(obj)))


def unpack(data: bytes) -> KubeObject:
    obj: KubeObject = json_codec.loads(zlib.decompress(data))
    return obj
