"""Kubernetes resource quantities in canonical form, as `resource.Quantity` serialises them.

Kubernetes stores a quantity exactly and writes it back in canonical form: the same suffix family
the user chose (decimal SI `m`/`k`/`M`…, binary SI `Ki`/`Mi`…, or an `e` exponent), with no
fractional digits and the largest suffix that loses no precision. `0.5` is written `500m`,
`1024Mi` is `1Gi`, `1.5Gi` is `1536Mi`, `1000` is `1k` and a YAML integer `10` is the string
`"10"`. Typed Go clients (the Go provider among them) and `kubectl` write these forms, so applying
them keeps our objects diffing cleanly against theirs.

The rules, from k8s.io/apimachinery `resource.ParseQuantity` and `CanonicalizeBytes`:

- the value is kept exactly, except that a non-zero magnitude is rounded up to a multiple of
  10^-9 (`0.1n` is `1n`), and a binary-SI magnitude is capped at 2^63-1;
- zero is `0`;
- decimal SI and exponent forms: trailing zeros move into the exponent, which is then lowered to a
  multiple of 3 (`1500` → `1500`, `1.5e3` → `1500`, `12e6` → `12e6`, `100e-3` → `100e-3`);
- binary SI: a magnitude below 1024, or one that is not a whole number, falls back to decimal SI
  (`0.5Ki` → `512`, `1.1Ki` → `1126400m`); otherwise factors of 1024 move into the suffix.

One deliberate difference: Kubernetes has no decimal suffix above `E` (10^18) and drops the
suffix of a larger decimal-SI value (a bug that changes the value); here it stays on `E` with a
longer number.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from typing import Final

# The quantity pattern of the Kubernetes CRD schemas (resources.limits/requests).
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# Longer strings are not quantities anyone means, and their digits would cost unbounded arithmetic.
MAX_LENGTH: Final = 64

_PARTS: Final = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$")
_DECIMAL_SI: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SI_SUFFIX: Final = {exponent: suffix for suffix, exponent in _DECIMAL_SI.items()}
_BINARY_SI: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO: Final = -9
_MAX_BINARY: Final = 2**63 - 1


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


@functools.lru_cache(maxsize=4096)
def canonical_quantity(text: str) -> str:
    """`text` (a quantity as the API server accepts it) in Kubernetes' canonical form.

    Raises QuantityError when `text` is not a quantity.
    """
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"longer than {MAX_LENGTH} characters")
    if not re.fullmatch(QUANTITY_PATTERN, text):
        raise QuantityError("not a quantity")
    parts = _PARTS.fullmatch(text)
    assert parts is not None  # the pattern above is stricter
    sign, whole, fraction, suffix = parts.groups()
    fraction = fraction or ""
    mantissa = int((whole + fraction).lstrip("0") or "0")
    exponent = -len(fraction)
    if mantissa == 0:
        return "0"
    negative = sign == "-"
    if suffix.endswith("i"):
        power = _BINARY_SI.index(suffix) * 10
        return _binary(Fraction(mantissa * 2**power, 10**-exponent), negative)
    if suffix in _DECIMAL_SI:
        return _decimal(mantissa, exponent + _DECIMAL_SI[suffix], negative, exponent_form=False)
    if not re.fullmatch(r"[eE][+-]?[0-9]+", suffix):
        # The CRD pattern allows `1e2.5`; Kubernetes' parser (and so KServe) does not.
        raise QuantityError("not a quantity (the exponent must be a whole number)")
    return _decimal(mantissa, exponent + int(suffix[1:]), negative, exponent_form=True)


def _round_up_to_nano(mantissa: int, exponent: int) -> tuple[int, int]:
    """mantissa * 10^exponent rounded up to a multiple of 10^-9, without building 10^|exponent|."""
    if exponent >= _NANO:
        return mantissa, exponent
    dropped = _NANO - exponent
    if dropped >= len(str(mantissa)):
        return 1, _NANO  # below 1n: the smallest quantity there is
    return -(-mantissa // 10**dropped), _NANO


def _decimal(mantissa: int, exponent: int, negative: bool, *, exponent_form: bool) -> str:
    mantissa, exponent = _round_up_to_nano(mantissa, exponent)
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3  # lower the exponent to a multiple of 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if exponent_form:
        suffix = f"e{exponent}" if exponent else ""
    else:
        if exponent > 18:
            mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
        suffix = _SI_SUFFIX[exponent]
    return f"{'-' if negative else ''}{mantissa}{suffix}"


def _binary(magnitude: Fraction, negative: bool) -> str:
    # Round up to 1n, then cap; magnitudes below 1024 or fractional are shown in decimal SI.
    nanos = -(-magnitude.numerator * 10**9 // magnitude.denominator)
    magnitude = min(Fraction(nanos, 10**9), Fraction(_MAX_BINARY))
    if magnitude < 1024 or magnitude.denominator != 1:
        return _decimal(nanos, _NANO, negative, exponent_form=False)
    value, power = int(magnitude), 0
    while value % 1024 == 0:
        value //= 1024
        power += 1
    return f"{'-' if negative else ''}{value}{_BINARY_SI[power]}"


def quantity_value(text: str) -> Fraction:
    """The exact value of a quantity (bytes, for memory and storage), to compare two of them.

    Raises QuantityError when `text` is not a quantity.
    """
    canonical = canonical_quantity(text)
    parts = re.fullmatch(r"(-?)([0-9]+)(.*)", canonical)
    assert parts is not None  # canonical forms are a sign, digits and a suffix
    sign, digits, suffix = parts.groups()
    value = Fraction(int(digits))
    if suffix in _BINARY_SI and suffix:
        value *= 2 ** (10 * _BINARY_SI.index(suffix))
    elif suffix in _DECIMAL_SI:
        value *= Fraction(10) ** _DECIMAL_SI[suffix]
    else:
        value *= Fraction(10) ** int(suffix[1:])
    return -value if sign else value
