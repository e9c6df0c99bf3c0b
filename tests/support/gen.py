"""Seeded random generators for fuzz tests, in the shape of hypothesis strategies.

hypothesis spent ~85 % of the 10,000-case validation fuzz run drawing examples (its engine records,
mutates and replays every draw so it can shrink). The fuzz test needs none of that: a fixed seed gives
CI the same inputs every run, and a failure prints the input itself. These combinators keep the
strategies readable one-to-one (`sampled_from`, `one_of`, `recursive`, ...) at a fraction of the cost.
"""

from __future__ import annotations

import random
import string
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Gen(Generic[T]):
    """A generator of values: `gen(rng)` draws one; `a | b` draws from either, as with strategies."""

    def __init__(self, draw: Callable[[random.Random], T]) -> None:
        self._draw = draw

    def __call__(self, rng: random.Random) -> T:
        return self._draw(rng)

    def __or__(self, other: Gen[Any]) -> Gen[Any]:
        return one_of(self, other)


# Characters a user can type or paste: ASCII (control characters included), Latin-1, other scripts,
# emoji, and the line and paragraph separators that break a message over lines.
_ALPHABET: tuple[str, ...] = (
    *string.printable,
    *(chr(c) for c in range(0, 32)),
    "\u00a0", "ü", "ø", "é", "ß", "名", "前", "🦙", "💥", "\u2028", "\u2029", "\u200b", "\ufeff", "\U0001f600",
)  # fmt: skip


def just(value: T) -> Gen[T]:
    return Gen(lambda rng: value)


def sampled_from(values: Sequence[T]) -> Gen[T]:
    return Gen(lambda rng: rng.choice(values))


def one_of(*gens: Gen[Any]) -> Gen[Any]:
    return Gen(lambda rng: rng.choice(gens)(rng))


def none() -> Gen[None]:
    return just(None)


def booleans() -> Gen[bool]:
    return Gen(lambda rng: rng.random() < 0.5)


def integers(min_value: int | None = None, max_value: int | None = None) -> Gen[int]:
    def draw(rng: random.Random) -> int:
        if min_value is not None and max_value is not None:
            return rng.randint(min_value, max_value)
        magnitude = rng.choice((2**7, 2**16, 2**31, 2**64, 2**100))
        return rng.randint(-magnitude if min_value is None else min_value, magnitude)

    return Gen(draw)


def floats(*, allow_nan: bool = True, allow_infinity: bool = True) -> Gen[float]:
    specials = [0.0, -0.0, sys.float_info.max, 5e-324, 0.5, 1.5]
    specials += [float("nan")] if allow_nan else []
    specials += [float("inf"), float("-inf")] if allow_infinity else []
    return Gen(lambda rng: rng.choice(specials) if rng.random() < 0.4 else rng.uniform(-1e12, 1e12))


def text(min_size: int = 0, max_size: int = 20) -> Gen[str]:
    return Gen(lambda rng: "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(min_size, max_size))))


def lists(element: Gen[T], max_size: int = 4) -> Gen[list[T]]:
    return Gen(lambda rng: [element(rng) for _ in range(rng.randint(0, max_size))])


def dictionaries(keys: Gen[Any], values: Gen[Any], max_size: int = 4) -> Gen[dict[Any, Any]]:
    return Gen(lambda rng: {keys(rng): values(rng) for _ in range(rng.randint(0, max_size))})


def fixed_dictionaries(required: Mapping[str, Gen[Any]], *, optional: Mapping[str, Gen[Any]]) -> Gen[dict[str, Any]]:
    """`required`'s keys, and each of `optional`'s present or not."""

    def draw(rng: random.Random) -> dict[str, Any]:
        out = {key: gen(rng) for key, gen in required.items()}
        out.update({key: gen(rng) for key, gen in optional.items() if rng.random() < 0.5})
        return out

    return Gen(draw)


def recursive(base: Gen[Any], extend: Callable[[Gen[Any]], Gen[Any]], max_depth: int = 3) -> Gen[Any]:
    """Leaves from `base`, or containers of smaller values, `max_depth` levels at most."""

    def at(depth: int) -> Gen[Any]:
        if depth == 0:
            return base
        inner = extend(at(depth - 1))
        return Gen(lambda rng: base(rng) if rng.random() < 0.5 else inner(rng))

    return at(max_depth)
