"""Kubernetes resource quantities (``"4"``, ``"4k"``, ``"1Ki"``, ``"500m"``, ``"1e3"``), read and stored
as apimachinery does, quirks included (``"Ki"`` and ``"."`` are stored as ``"0"``)."""

from __future__ import annotations

import re
from fractions import Fraction

from hami_core.protocol.errors import shorten

__all__ = [
    "QuantityError",
    "canonical_quantity",
    "parse_quantity",
    "quantity_count",
    "quantity_int64",
    "quantity_value",
]

_INT64_MAX = 2**63 - 1

#: apimachinery's scanner: sign, leading zeros, whole digits, ``.`` and fraction digits, then a suffix.
_GO_QUANTITY = re.compile(r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)", re.ASCII)
_EXPONENT = re.compile(r"[eE]([+-]?\d+)", re.ASCII)
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_DECIMAL_POWER = {suffix: power for power, suffix in _DECIMAL_SUFFIX.items()}
_BINARY_POWER = {suffix: 10 * index for index, suffix in enumerate(_BINARY_SUFFIX) if suffix}

#: Exponents beyond this cannot describe any int64 count and would only cost memory to compute.
_MAX_EXPONENT = 64


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _go_parse(text: str, *, strict: bool = False) -> tuple[Fraction, str, str | None, bool]:
    """apimachinery's ``ParseQuantity``: the value, its format, ``text`` when kept as the quantity's string,
    and whether it is held as an int64 mantissa of scale >= 0 (what ``AsInt64`` reads). ``strict``: refuse
    a quantity without digits (``"Ki"``, ``"."``), which apimachinery reads as 0."""
    match = _GO_QUANTITY.fullmatch(text)
    if not text or match is None:
        raise QuantityError(f"not a quantity: {shorten(text)} (expected a number with an optional suffix)")
    num, denom, suffix = match[2] or "0", match[3] or "", match[4]
    if suffix in _DECIMAL_POWER:
        family, base, power = "decimal", 10, _DECIMAL_POWER[suffix]
    elif suffix in _BINARY_POWER:
        family, base, power = "binary", 2, _BINARY_POWER[suffix]
    elif (exponent := _EXPONENT.fullmatch(suffix)) is None:
        raise QuantityError(f"not a quantity: {shorten(text)} (unknown suffix {shorten(suffix)})")
    elif abs(power := int(exponent[1])) > _MAX_EXPONENT:
        raise QuantityError(f"quantity {shorten(text)}: exponent {power} is out of range")
    else:
        family, base = "exponent", 10
    digits = re.search("[0-9]", text[: match.start(4)]) is not None  # any digit before the suffix
    if strict and not digits:
        raise QuantityError(f"quantity {shorten(text)}: no digits before the suffix")
    sign = -1 if match[1] == "-" else 1
    # The fast path: small enough for an int64 mantissa, kept as written when already canonical.
    if base == 10 and len(num) + len(denom) <= 18 and power - len(denom) >= -9:
        mantissa, scale = num + denom, power - len(denom)
        canonical = scale % 3 == 0 and not mantissa.endswith("000") and mantissa[0] != "0"
        value = sign * Fraction(int(mantissa)) * Fraction(10) ** scale
        return value, family, text if canonical else None, scale >= 0
    if base == 2 and not denom and 15 - len(num) - power * 3 // 10 - 1 >= 0:
        return Fraction(sign * (int(num) << power)), family, text if int(num) & 7 else None, True
    # The general path: exact decimal arithmetic, rounded up to 1n; only binary quantities are capped.
    if not digits:
        raise QuantityError(f"quantity {shorten(text)}: no digits before the suffix")
    value = Fraction(int(num + denom), 10 ** len(denom)) * Fraction(base) ** power
    value = Fraction(-((-value.numerator * 10**9) // value.denominator), 10**9)  # ceil to a whole 1n
    if family == "binary":
        value = min(value, Fraction(_INT64_MAX))
        if 0 < value < 1:
            family = "decimal"
    return sign * value, family, None, False


def parse_quantity(text: str) -> Fraction:
    """The value as the API server reads it (exact to 1n, a binary one capped at 2^63-1)."""
    return _go_parse(text, strict=True)[0]


def quantity_value(text: str) -> int:
    """Go's ``Value()``: rounded up away from zero (``"500m"``: 1), the magnitude capped at 2^63-1."""
    value = parse_quantity(text)
    magnitude = min(-((-abs(value.numerator)) // value.denominator), _INT64_MAX)  # ceil(|value|), capped
    return -magnitude if value < 0 else magnitude


def quantity_count(text: str | None) -> int:
    """A count resource's allocatable value: absent counts as zero, like HAMi."""
    return 0 if text is None else quantity_value(text)


def quantity_int64(text: str) -> int | None:
    """Go's ``ParseQuantity(text).AsInt64()``, as HAMi reads capacities: ``"16"`` and ``"1k"`` read;
    ``"500m"``, ``"1e30"``, ``"8Ei"`` and ``"9223372036854775807"`` (held as a decimal) are ``None``."""
    value, _, _, whole = _go_parse(text)
    return int(value) if whole and abs(value) <= _INT64_MAX else None


def _go_string(value: Fraction, family: str) -> str:
    """apimachinery's ``Quantity.String()`` of a quantity that kept no string of its own."""
    if value == 0:
        return "0"
    if family == "binary" and abs(value) >= 1024 and value.denominator == 1:
        mantissa, power = int(value), 0
        while abs(mantissa) >= 1024 and mantissa % 1024 == 0:
            mantissa, power = mantissa // 1024, power + 1
        return f"{mantissa}{_BINARY_SUFFIX[power]}"
    mantissa, exponent = int(value * 10**9), -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if family == "exponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    # Beyond "E" Go finds no suffix and writes none: "1000E" is stored as "1". Reproduced on purpose.
    return f"{mantissa}{_DECIMAL_SUFFIX.get(exponent, '')}"


def canonical_quantity(text: str) -> str:
    """The string the API server stores: canonical text is kept (``"+4"``, ``"007"``, ``"1E3"``), the rest
    rewritten (``"1000m"``: ``"1"``, ``"2048Ki"``: ``"2Mi"``); applied twice, as the server reads its
    storage back. Spaces around are trimmed, as the server trims them in the JSON text."""
    stored = text.strip(" ")
    for _ in range(2):
        value, family, kept, _ = _go_parse(stored)
        stored = kept if kept is not None else _go_string(value, family)
    return stored
