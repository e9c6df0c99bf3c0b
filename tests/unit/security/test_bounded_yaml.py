"""provider.rules.bounded_yaml: a user's YAML is read within bounds, every failure a specific message."""

from __future__ import annotations

import time

import pytest

from provider.rules import bounded_yaml
from provider.rules.bounded_yaml import MAX_BYTES, MAX_DEPTH, MAX_EXPANDED_BYTES, MAX_NODES, YamlBoundError, load

LAUGHS = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
)


def fails(text: str) -> str:
    with pytest.raises(YamlBoundError) as caught:
        load(text)
    return str(caught.value)


def test_a_billion_laughs_is_refused_before_it_expands() -> None:
    assert len(LAUGHS) < 400
    started = time.process_time()
    assert fails(LAUGHS) == (
        f"the document expands to more than {MAX_NODES} nodes (YAML aliases count as what they repeat)"
    )
    assert time.process_time() - started < 5  # a bound that keeps the check meaningful, not a benchmark


def test_aliases_of_one_long_string_count_in_bytes() -> None:
    text = 'x: &x "' + "A" * 20_000 + '"\ny: [' + ",".join(["*x"] * 8) + "]"
    assert fails(text) == (
        f"the document expands to more than {MAX_EXPANDED_BYTES} bytes (YAML aliases count as what they repeat)"
    )


def test_nested_brackets_are_a_depth_error_not_a_recursion_error() -> None:
    assert fails("[" * 3000 + "]" * 3000) == f"the document nests deeper than {MAX_DEPTH} levels"
    assert fails("[" * 6000) == f"the document nests deeper than {MAX_DEPTH} levels"


def test_block_nesting_counts_too() -> None:
    text = "a:\n" + "".join("  " * i + "b:\n" for i in range(1, MAX_DEPTH + 2))
    assert fails(text) == f"the document nests deeper than {MAX_DEPTH} levels"


def test_an_alias_placed_deep_adds_its_anchor_depth() -> None:
    anchor = "[" * 20 + "1" + "]" * 20
    ok = f"x: &x {anchor}\ny: *x\n"
    assert load(ok)["y"] == load(ok)["x"]
    deep = f"x: &x {anchor}\ny: " + "[" * 15 + "*x" + "]" * 15 + "\n"
    assert fails(deep) == f"the document nests deeper than {MAX_DEPTH} levels"


def test_size_is_checked_first() -> None:
    assert fails("a: " + "x" * MAX_BYTES) == f"the document is {MAX_BYTES + 3} bytes, over the limit of {MAX_BYTES}"


def test_syntax_errors_keep_their_line_and_column() -> None:
    assert fails("template: [1") == "invalid YAML at line 1, column 13: expected ',' or ']', but got '<stream end>'"


def test_values_json_cannot_hold_are_refused() -> None:
    assert fails("when: 2024-01-01").startswith("the document holds something JSON cannot represent")


def test_each_load_is_a_fresh_copy() -> None:
    first = load("a: {b: 1}")
    first["a"]["b"] = 2
    assert load("a: {b: 1}") == {"a": {"b": 1}}
    assert bounded_yaml.MAX_NODES == MAX_NODES
