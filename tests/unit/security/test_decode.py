"""actors.client.decode: what the API server stores, however deep, never takes the process down."""

from __future__ import annotations

import json

import pytest

from actors.cache.limits import InstanceLimits, stub
from actors.client.decode import MAX_DEPTH, TOO_DEEP, cut_deep, depth_problem, loads


def nested(depth: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def test_normal_objects_decode_as_json() -> None:
    text = json.dumps({"metadata": {"name": "x"}, "spec": {"a": [1, "b", {"c": None}]}})
    assert loads(text) == json.loads(text)


def test_a_list_with_one_object_nested_1000_deep_keeps_every_other_item() -> None:
    bad = {"metadata": {"name": "bad"}, "spec": nested(1000)}
    good = {"metadata": {"name": "good"}, "spec": {"x": 1}}
    text = '{"items":[' + json.dumps(good) + "," + "[" * 0 + _deep_json(bad) + "," + json.dumps(good) + "]}"
    with pytest.raises(RecursionError):
        json.loads(text)
    decoded = loads(text)
    assert [item["metadata"]["name"] for item in decoded["items"]] == ["good", "bad", "good"]
    assert decoded["items"][0] == good
    assert depth_problem(decoded["items"][1]["spec"], "spec", 32) == "spec" + ".a" * 33 + " nests deeper than 32 levels"
    # Cut, not decoded whole (as orjson, good for 1024 levels, would): what walks it later is safe.
    node = decoded["items"][1]["spec"]
    while isinstance(node, dict):
        node = node["a"]
    assert node == TOO_DEEP


def test_the_cut_replaces_exactly_the_subtrees_below_the_bound() -> None:
    value = {"keep": nested(5), "deep": nested(MAX_DEPTH + 10), "text": 'a "[{" string ]}'}
    cut = json.loads(cut_deep(json.dumps(value).encode(), MAX_DEPTH))
    assert cut["keep"] == value["keep"] and cut["text"] == value["text"]
    node = cut["deep"]
    for _ in range(MAX_DEPTH - 2):  # the root object and "deep"'s own object are levels 1 and 2
        node = node["a"]
    assert node == {"a": TOO_DEEP}


def test_brackets_inside_strings_and_escaped_quotes_do_not_count() -> None:
    value = {"s": '\\"[[[[{{{{' * 50, "n": nested(3)}
    assert json.loads(cut_deep(json.dumps(value).encode(), 4)) == value


def test_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        loads(b"{not json")


def test_depth_problem_walks_any_depth_without_recursion() -> None:
    deep: list[object] = []
    node = deep
    for _ in range(100_000):
        child: list[object] = []
        node.append(child)
        node = child
    assert depth_problem(deep, "x", 32) == "x" + "[0]" * 33 + " nests deeper than 32 levels"
    assert depth_problem({"a": [1, {"b": 2}]}, "spec", 32) is None


def test_limits_name_size_then_depth() -> None:
    limits = InstanceLimits(max_spec_bytes=100, max_spec_depth=3)
    assert limits.problem({"spec": {"a": "x" * 200}}) == (
        "spec is 208 bytes as JSON, over this provider's limit of 100 bytes per Instance; "
        "move large content (configs, adapter lists) out of the Instance"
    )
    assert limits.problem({"spec": nested(4)}) == "spec.a.a.a.a nests deeper than 3 levels"
    assert limits.problem({"spec": nested(3)}) is None


def test_a_stub_keeps_what_the_finalizer_and_status_need() -> None:
    obj = {
        "apiVersion": "core.openeverest.io/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": "big", "namespace": "ns", "finalizers": ["f"], "managedFields": [{}]},
        "spec": {"providerRef": {"name": "p"}, "components": {"x": "y" * 10_000}},
        "status": {"phase": "Ready"},
    }
    kept = stub(obj)
    assert kept["spec"] == {"providerRef": {"name": "p"}}
    assert kept["metadata"] == {"name": "big", "namespace": "ns", "finalizers": ["f"]}
    assert kept["status"] == {"phase": "Ready"}


def _deep_json(obj: dict[str, object]) -> str:
    """json.dumps cannot write what json.loads cannot read: build the text by hand."""
    spec = '{"a":' * 1000 + "1" + "}" * 1000
    return json.dumps({k: v for k, v in obj.items() if k != "spec"})[:-1] + ',"spec":' + spec + "}"
