"""Parse a YAML document that a user wrote into an Instance, within bounds, before building anything.

A few hundred bytes of YAML can describe gigabytes (anchors and aliases: the "billion laughs"), and
a few kilobytes of brackets nest deep enough to exhaust the recursion of any loader. So the event
stream is read first (PyYAML's parser does not recurse): the document's size, its nesting and its
expanded size (every alias counted as what it stands for, in nodes and in bytes) are checked, and
only a document within all bounds is loaded. Each failure is a `YamlBoundError` whose message names
the bound, for the caller to prefix with the field.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

MAX_BYTES: Final = 32 * 1024
MAX_DEPTH: Final = 32
MAX_NODES: Final = 10_000
MAX_EXPANDED_BYTES: Final = 128 * 1024

# The pure-Python loader: its messages are the ones users have seen, and within these bounds its
# speed does not matter (results are cached per document).
_LOADER: Any = yaml.SafeLoader


class YamlBoundError(ValueError):
    """The document is not YAML, or breaks a bound (the message says which)."""


@dataclass
class _Open:
    """A collection being read: where it started, and for an anchored one what it expands to."""

    anchor: str | None
    depth: int
    nodes_before: int
    bytes_before: int
    deepest: int = 0


@dataclass
class _Expansion:
    nodes: int = 0
    size: int = 0
    depth: int = 0
    anchors: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # nodes, bytes, depth
    open: list[_Open] = field(default_factory=list)

    def add(self, nodes: int, size: int, depth: int) -> None:
        self.nodes += nodes
        self.size += size
        reached = self.depth + depth
        if self.open:
            self.open[-1].deepest = max(self.open[-1].deepest, reached)
        if reached > MAX_DEPTH:
            raise YamlBoundError(f"the document nests deeper than {MAX_DEPTH} levels")
        if self.nodes > MAX_NODES:
            raise YamlBoundError(
                f"the document expands to more than {MAX_NODES} nodes (YAML aliases count as what they repeat)"
            )
        if self.size > MAX_EXPANDED_BYTES:
            raise YamlBoundError(
                f"the document expands to more than {MAX_EXPANDED_BYTES} bytes (YAML aliases count as what they repeat)"
            )


def _check_events(text: str) -> None:
    state = _Expansion()
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            state.add(1, 0, 1)
            state.depth += 1
            state.open.append(_Open(event.anchor, state.depth, state.nodes - 1, state.size, state.depth))
        elif isinstance(event, yaml.CollectionEndEvent):
            done = state.open.pop()
            state.depth -= 1
            if state.open:
                state.open[-1].deepest = max(state.open[-1].deepest, done.deepest)
            if done.anchor:
                state.anchors[done.anchor] = (
                    state.nodes - done.nodes_before,
                    state.size - done.bytes_before,
                    done.deepest - done.depth + 1,
                )
        elif isinstance(event, yaml.ScalarEvent):
            size = len(event.value.encode())
            state.add(1, size, 0)
            if event.anchor:
                state.anchors[event.anchor] = (1, size, 0)
        elif isinstance(event, yaml.AliasEvent):
            nodes, size, depth = state.anchors.get(event.anchor or "", (1, 0, 0))
            state.add(nodes, size, depth)


@functools.lru_cache(maxsize=256)
def _load_checked(text: str) -> str:
    """The document as JSON text (cached: one parse however often a reconcile asks)."""
    size = len(text.encode())
    if size > MAX_BYTES:
        raise YamlBoundError(f"the document is {size} bytes, over the limit of {MAX_BYTES}")
    try:
        _check_events(text)
        return json.dumps(yaml.load(text, Loader=_LOADER))
    except yaml.YAMLError as exc:
        raise YamlBoundError(_describe(exc)) from None
    except YamlBoundError:
        raise
    except (TypeError, ValueError) as exc:
        # Keys or values JSON cannot hold (a mapping as a key, a YAML timestamp).
        raise YamlBoundError(f"the document holds something JSON cannot represent: {exc}") from None


def load(text: str) -> Any:
    """The document, as plain JSON-compatible data (a fresh copy each call). Raises YamlBoundError."""
    return json.loads(_load_checked(text))


def _describe(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {exc}"
