"""Kubernetes quantities: exact values, Go's rounding of Value(), and the API server's canonical form."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hami_core.kube.quantity import (
    QuantityError,
    canonical_quantity,
    parse_quantity,
    quantity_count,
    quantity_int64,
    quantity_value,
)

INT64_MAX = 2**63 - 1


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        ("0", 0),
        ("+7", 7),
        ("4k", 4000),
        ("1Ki", 1024),
        ("1Mi", 1024**2),
        ("2Gi", 2 * 1024**3),
        ("1Ei", 1024**6),
        ("500m", 1),  # rounded up
        ("1500m", 2),
        ("1001m", 2),
        ("-500m", -1),  # away from zero
        ("-1500m", -2),
        ("1n", 1),
        ("0.1", 1),
        ("1.", 1),
        (".5", 1),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e-3", 1),
        ("5E", 5 * 10**18),
        ("12E", INT64_MAX),  # capped like the API server
        ("1M", 10**6),
        ("1u", 1),
        ("100Ei", INT64_MAX),  # capped like the API server
    ],
)
def test_value(text: str, value: int) -> None:
    assert quantity_value(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 4",
        "4 ",
        "four",
        "4x",
        "4KI",
        "4ki",
        "0x10",
        "1_000",
        "e3",
        "4e",
        "4e1.5",
        "--1",
        ".",
        "1..2",
        "4\n",
    ],
)
def test_not_a_quantity(text: str) -> None:
    with pytest.raises(QuantityError, match="quantity"):
        quantity_value(text)


def test_count_treats_absent_as_zero() -> None:
    assert quantity_count(None) == 0
    assert quantity_count("3") == 3
    with pytest.raises(QuantityError):
        quantity_count("many")


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("4", "4"),
        ("1000m", "1"),
        ("0.5", "500m"),
        ("1.5k", "1500"),
        ("2000", "2k"),
        ("2048Ki", "2Mi"),
        ("1025Ki", "1025Ki"),
        ("0.5Ki", "512"),
        ("1.5Gi", "1536Mi"),
        ("1023", "1023"),
        ("1e3", "1e3"),
        ("12e2", "1200"),
        ("0", "0"),
        ("0Mi", "0"),
        ("0.1n", "1n"),
        ("-1500m", "-1500m"),
        ("5E", "5E"),
        ("1000E", "1"),  # past "E" apimachinery finds no suffix and writes none
        # Already canonical: kept exactly as written.
        ("+4", "+4"),
        ("4.", "4."),
        ("007", "007"),
        ("1E3", "1E3"),
        ("1e0", "1e0"),
        ("1.5e7", "1.5e7"),
        ("1.Ki", "1.Ki"),
        # Not canonical: rewritten; only binary quantities are capped at 2^63-1.
        ("1e19", "10e18"),
        ("9223372036854775808", "9223372036854775808"),
        ("100Ei", "9223372036854775807"),
        ("8Ki", "8Ki"),
        ("1024", "1024"),
        ("0.0001n", "1n"),
        ("Ki", "0"),
        (".", "0"),
        (" 2 ", "2"),
    ],
)
def test_canonical_form(text: str, canonical: str) -> None:
    assert canonical_quantity(text) == canonical


@pytest.mark.parametrize(
    "text", ["", " ", "\t2", "2\n", "\u00a02", "1.5.5", "e-10", "1e", "1kk", "0x10", "4KI"]
)
def test_not_stored_as_a_quantity(text: str) -> None:
    with pytest.raises(QuantityError):
        canonical_quantity(text)


SUFFIXES = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


@settings(max_examples=300)
@given(st.integers(min_value=-(10**6), max_value=10**6), st.sampled_from(sorted(SUFFIXES)))
def test_integer_values_are_exact(number: int, suffix: str) -> None:
    text = f"{number}{suffix}"
    assert quantity_value(text) == number * SUFFIXES[suffix]
    assert parse_quantity(canonical_quantity(text)) == number * SUFFIXES[suffix]


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["m", "u", "n", "", "k"]))
def test_canonical_form_keeps_the_value_and_rounds_up_like_value(number: int, suffix: str) -> None:
    text = f"{number}{suffix}"
    exact = parse_quantity(text)
    canonical = canonical_quantity(text)
    assert parse_quantity(canonical) == exact  # no precision below 1n here, so nothing is lost
    assert quantity_value(canonical) == quantity_value(text)
    assert quantity_value(text) >= exact and quantity_value(text) - exact < 1
    assert "." not in canonical


def test_parse_is_exact() -> None:
    assert parse_quantity("1.5") == Fraction(3, 2)
    assert parse_quantity("-2.5m") == Fraction(-1, 400)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        ("0", 0),
        ("1k", 1000),
        ("1e3", 1000),
        ("1Ki", 1024),
        ("999999999999999999", 10**18 - 1),
        ("-3", -3),
        ("16000m", None),  # a negative scale, though it is 16: the API server stores it as "16"
        ("500m", None),
        ("1.5", None),
        ("8Ei", None),  # a binary exponent past the parser's fast path: held as a decimal
        ("9223372036854775807", None),  # 19 digits: held as a decimal too
        ("1e30", None),  # beyond int64
    ],
)
def test_as_int64_is_gos(text: str, value: int | None) -> None:
    """Go's ``ParseQuantity(text).AsInt64()``, as HAMi reads capacity: nothing rounded, nothing capped."""
    assert quantity_int64(text) == value


def test_as_int64_on_the_stored_forms() -> None:
    """What HAMi's lister sees is the API server's stored string: 16000m arrives as 16, 8Ei as 2^63-1."""
    assert quantity_int64(canonical_quantity("16000m")) == 16
    assert quantity_int64(canonical_quantity("8Ei")) is None
