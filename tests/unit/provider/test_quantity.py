"""provider.rules.quantity against Kubernetes' own cases (k8s.io/apimachinery resource quantity tests,
restated) and against properties any canonical form must have: it is a fixed point, it keeps the
value (up to Kubernetes' rounding), it keeps the suffix family and uses the largest suffix."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import given, strategies as st

from provider.rules.quantity import MAX_LENGTH, QUANTITY_PATTERN, QuantityError, canonical_quantity

# (input, what Kubernetes serialises it as)
KUBERNETES_CASES = [
    # zero, whatever the suffix
    *((zero, "0") for zero in ("0", "0n", "0u", "0m", "0Ki", "0k", "0Mi", "0M", "0Gi", "0G", "0Ti", "0T", "00")),
    # plain and decimal SI
    ("1", "1"),
    ("9", "9"),
    ("10", "10"),
    ("1000", "1k"),
    ("1000m", "1"),
    ("1500m", "1500m"),
    ("0.5", "500m"),
    ("1.08", "1080m"),
    ("1080000000n", "1080m"),
    ("1000u", "1m"),
    ("5n", "5n"),
    ("50k", "50k"),
    ("1000M", "1G"),
    ("0.001T", "1G"),
    ("100.035k", "100035"),
    ("0.0005k", "500m"),
    ("10.035M", "10035k"),
    ("8.1k", "8100"),
    ("7.123456M", "7123456"),
    ("6.987654321G", "6987654321"),
    ("2.5P", "2500T"),
    ("1.01E", "1010P"),
    ("12E", "12E"),
    (".001", "1m"),
    (".0001k", "100m"),
    ("1.", "1"),
    ("1.G", "1G"),
    ("+1", "1"),
    ("-1080m", "-1080m"),
    # exponents
    ("1e3", "1e3"),
    ("1E6", "1e6"),
    ("1E-3", "1e-3"),
    (".001e12", "1e9"),
    ("0.001e0", "1e-3"),
    ("1000e-12", "1e-9"),
    ("1.2e3", "1200"),
    ("1.3E+6", "1300e3"),
    ("0.5e-1", "50e-3"),
    # binary SI
    ("1Ki", "1Ki"),
    ("1024Mi", "1Gi"),
    ("307200Ki", "300Mi"),
    ("1025024Mi", "1001Gi"),
    ("1024Gi", "1Ti"),
    ("1.5Gi", "1536Mi"),
    ("0.5Mi", "512Ki"),
    ("1025", "1025"),
    ("-80Ki", "-80Ki"),
    # binary SI below 1024 or fractional falls back to decimal SI
    ("0.5Ki", "512"),
    ("1.5Ki", "1536"),
    ("100.035Ki", "102435840m"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    # rounding up to 1n, and the binary cap at 2^63-1
    ("3.001n", "4n"),
    ("0.0000000001", "1n"),
    ("0.9n", "1n"),
    ("1.1E-9", "2e-9"),
    ("0.00000012345", "124n"),
    (".000000000001Ki", "2n"),
    ("-.000000000001Ki", "-2n"),
    ("9Ei", "9223372036854775807"),
    ("9223372036854775807Ki", "9223372036854775807"),
]


@pytest.mark.parametrize(("text", "expected"), KUBERNETES_CASES)
def test_kubernetes_cases(text: str, expected: str) -> None:
    assert canonical_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", " 1", "1 ", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01e-", "1K", ".", "1e2.5"],
)
def test_not_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        canonical_quantity(text)


def test_length_is_bounded() -> None:
    assert canonical_quantity("1" * MAX_LENGTH)
    with pytest.raises(QuantityError, match="longer than 64"):
        canonical_quantity("1" * (MAX_LENGTH + 1))


def test_huge_exponents_cost_nothing() -> None:
    """The exponent is never expanded into a number: 10^(10^12) would not fit in memory."""
    assert canonical_quantity("1e999999999999") == "1e999999999999"
    assert canonical_quantity("15e-999999999999") == "1e-9"
    assert canonical_quantity("1000E") == "1000E"


# -- properties -----------------------------------------------------------------------------------

DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}

numbers = st.builds(
    lambda whole, fraction, dot: whole + (("." + fraction) if dot else ""),
    st.text("0123456789", min_size=1, max_size=12),
    st.text("0123456789", max_size=12),
    st.booleans(),
)
suffixes = st.one_of(
    st.sampled_from(sorted(DECIMAL_SI)),
    st.sampled_from(sorted(BINARY_SI)),
    st.builds(lambda e, sign: f"e{sign}{e}", st.integers(0, 30), st.sampled_from(["", "+", "-"])),
)
quantities = st.builds(
    lambda sign, number, suffix: sign + number + suffix, st.sampled_from(["", "+", "-"]), numbers, suffixes
)


def family(text: str) -> str:
    """The suffix family a quantity is written in: decimal SI, binary SI or exponent."""
    suffix = re.sub(r"^[+-]?[0-9.]*", "", text)
    if suffix in BINARY_SI:
        return "binary"
    return "exponent" if re.fullmatch(r"[eE][+-]?[0-9]+", suffix) else "decimal"


def value(text: str) -> Fraction:
    """The exact value a quantity string denotes (bounded exponents only), independently of the
    module under test."""
    match = re.fullmatch(r"([+-]?)([0-9]*\.?[0-9]*)(.*)", text)
    assert match is not None
    sign, number, suffix = match.groups()
    magnitude = Fraction(number if number not in ("", ".") else "0")
    if suffix in BINARY_SI:
        magnitude *= 2 ** BINARY_SI[suffix]
    elif suffix in DECIMAL_SI:
        magnitude *= Fraction(10) ** DECIMAL_SI[suffix]
    else:
        magnitude *= Fraction(10) ** int(suffix[1:])
    return -magnitude if sign == "-" else magnitude


def kubernetes_value(text: str) -> Fraction:
    """value(text) as Kubernetes keeps it: magnitude rounded up to 1n, binary SI capped at 2^63-1."""
    exact = value(text)
    nanos = -(-abs(exact) * 10**9 // 1)
    magnitude = Fraction(nanos, 10**9)
    if family(text) == "binary":
        magnitude = min(magnitude, Fraction(2**63 - 1))
    return -magnitude if exact < 0 else magnitude


@given(quantities)
def test_canonical_form_is_a_fixed_point(text: str) -> None:
    canonical = canonical_quantity(text)
    assert canonical_quantity(canonical) == canonical


@given(quantities)
def test_canonical_form_keeps_the_value(text: str) -> None:
    assert value(canonical_quantity(text)) == kubernetes_value(text)


@given(quantities)
def test_canonical_form_has_no_fraction_plus_or_leading_zero(text: str) -> None:
    canonical = canonical_quantity(text)
    assert re.fullmatch(QUANTITY_PATTERN, canonical)
    assert "." not in canonical and "+" not in canonical
    assert canonical == "0" or not canonical.lstrip("-").startswith("0")  # no leading zeros


@given(quantities)
def test_canonical_form_keeps_the_family_and_uses_the_largest_suffix(text: str) -> None:
    canonical = canonical_quantity(text)
    if canonical == "0":
        return
    digits = int(re.sub(r"[^0-9]", "", re.sub(r"(e-?[0-9]+|[A-Za-z]+)$", "", canonical)))
    suffix = re.sub(r"^-?[0-9]+", "", canonical)
    if family(canonical) == "binary":
        assert family(text) == "binary"
        assert digits % 1024 != 0 or suffix == "Ei"
    elif family(canonical) == "exponent":
        assert family(text) == "exponent"
        assert digits % 1000 != 0
    else:
        # Decimal SI (a binary value below 1024 or fractional falls back to it); plain digits are
        # also the exponent form with exponent 0.
        assert family(text) in ("decimal", "binary") or suffix == ""
        assert digits % 1000 != 0 or suffix == "E"


@given(st.integers(0, 2**70))
def test_integers_become_strings(number: int) -> None:
    assert value(canonical_quantity(str(number))) == number
