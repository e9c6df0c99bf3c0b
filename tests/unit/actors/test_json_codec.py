"""actors.client.json_codec: orjson's output, and the standard library's for what orjson refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.client import decode, json_codec


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [1.5, None, True, "é\u202e"], "c": {"z": {}, "y": []}},
        {"big": 2**70},  # beyond orjson's 64 bits
        {"lone": "\ud800"},  # a lone surrogate: not UTF-8
        {1: "int key"},
    ],
)
def test_dumps_reads_back_as_the_standard_library_would(value: Any) -> None:
    encoded = json_codec.dumps(value)
    assert json.loads(encoded) == json.loads(json.dumps(value))


def test_sorted_form_is_canonical() -> None:
    first = json_codec.dumps({"b": {"y": 1, "x": 2}, "a": 0}, sort_keys=True)
    second = json_codec.dumps({"a": 0, "b": {"x": 2, "y": 1}}, sort_keys=True)
    assert first == second == b'{"a":0,"b":{"x":2,"y":1}}'


def test_nesting_past_orjsons_limits_falls_back() -> None:
    deep: Any = "leaf"
    for _ in range(300):  # past orjson's 255 levels for encoding, within the standard library's
        deep = {"d": deep}
    encoded = json_codec.dumps(deep)
    assert json_codec.loads(encoded) == deep
    too_deep = b'{"spec":' + b"[" * 5000 + b"]" * 5000 + b', "kind": "Instance"}'
    with pytest.raises(RecursionError):
        json_codec.loads(too_deep)  # orjson refuses, the standard library recurses...
    assert decode.loads(too_deep)["kind"] == "Instance"  # ...and decode cuts it


def test_lone_surrogate_escapes_decode_as_before() -> None:
    assert json_codec.loads(b'{"s": "\\ud800"}') == {"s": "\ud800"}


@pytest.mark.parametrize("text", [b"", b"{", b'{"a": }', b"\xff\xfe"])
def test_text_that_is_not_json_raises_value_error(text: bytes) -> None:
    with pytest.raises(ValueError):
        json_codec.loads(text)
