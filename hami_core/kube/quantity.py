"""Kubernetes resource quantities (``"4"``, ``"4k"``, ``"1Ki"``, ``"500m"``, ``"1e3"``) as integer counts.

The grammar is apimachinery's: an optional sign, a decimal number (``1``, ``1.5``, ``1.``, ``.5``) and one
suffix: binary SI (``Ki Mi Gi Ti Pi Ei``), decimal SI (``n u m k M G T P E`` or none) or a decimal exponent
(``e3``, ``E-2``). :func:`quantity_value` rounds a fraction up, away from zero, as Go's
``Quantity.Value()`` does, so ``"500m"`` counts as 1 and ``"-500m"`` as -1.

:func:`canonical_quantity` is the string the API server stores, ported from apimachinery's parser with its
quirks: it also takes a few strings that :func:`parse_quantity` refuses (``"Ki"`` and ``"."`` are stored as
``"0"``), and what it returns always parses.
"""

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

_NUMBER = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)(.*)", re.ASCII | re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?\d+)", re.ASCII)

_SUFFIX: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}

#: Exponents beyond this cannot describe any int64 count and would only cost memory to compute.
_MAX_EXPONENT = 64


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str) -> Fraction:
    """The exact value of the quantity ``text``; ``QuantityError`` when it is not one."""
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise QuantityError(f"not a quantity: {shorten(text)} (expected a number with an optional suffix)")
    sign, number, suffix = match.groups()
    value = Fraction(number)
    if suffix in _SUFFIX:
        value *= _SUFFIX[suffix]
    else:
        value *= Fraction(10) ** _exponent(suffix, text)
    return -value if sign == "-" else value


def _exponent(suffix: str, text: str) -> int:
    """The power of ten of an exponent suffix (``e3``, ``E-2``); ``QuantityError`` for any other suffix."""
    exponent = _EXPONENT.fullmatch(suffix)
    if exponent is None:
        raise QuantityError(f"not a quantity: {shorten(text)} (unknown suffix {shorten(suffix)})")
    power = int(exponent.group(1))
    if abs(power) > _MAX_EXPONENT:
        raise QuantityError(f"quantity {shorten(text)}: exponent {power} is out of range")
    return power


def quantity_value(text: str) -> int:
    """The quantity ``text`` as an integer, a fraction rounded up away from zero (Go's ``Value()``).

    Like the API server, a magnitude beyond 2^63-1 is capped there. Raises ``QuantityError`` when ``text``
    is not a quantity.
    """
    value = parse_quantity(text)
    magnitude = min(-((-abs(value.numerator)) // value.denominator), _INT64_MAX)  # ceil(|value|), capped
    return -magnitude if value < 0 else magnitude


def quantity_count(text: str | None) -> int:
    """A count resource's allocatable value: absent counts as zero, like HAMi.

    Raises ``QuantityError`` when ``text`` is present but not a quantity.
    """
    return 0 if text is None else quantity_value(text)


#: apimachinery's scanner: sign, leading zeros, whole digits, ``.`` and fraction digits, then a suffix.
_GO_QUANTITY = re.compile(r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)", re.ASCII)
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_DECIMAL_POWER = {suffix: power for power, suffix in _DECIMAL_SUFFIX.items()}
_BINARY_POWER = {suffix: 10 * index for index, suffix in enumerate(_BINARY_SUFFIX) if suffix}


def _interpret(suffix: str, text: str) -> tuple[str, int, int]:
    """A suffix's family, base and power: ``"k"`` is ``("decimal", 10, 3)``, ``"Ki"`` ``("binary", 2, 10)``
    and ``"e3"`` ``("exponent", 10, 3)``."""
    if suffix in _DECIMAL_POWER:
        return "decimal", 10, _DECIMAL_POWER[suffix]
    if suffix in _BINARY_POWER:
        return "binary", 2, _BINARY_POWER[suffix]
    return "exponent", 10, _exponent(suffix, text)


def _go_parse(text: str) -> tuple[Fraction, str, str | None]:
    """apimachinery's ``ParseQuantity``: the value, its format (``decimal``, ``binary`` or ``exponent``)
    and ``text`` itself when the parser keeps it as the quantity's string (its "canonical" fast path)."""
    if text == "0":
        return Fraction(0), "decimal", text
    match = _GO_QUANTITY.fullmatch(text)
    if not text or match is None:
        raise QuantityError(f"not a quantity: {shorten(text)} (expected a number with an optional suffix)")
    sign, whole, fraction, suffix = match.groups()
    num, denom = whole or "0", fraction or ""
    family, base, power = _interpret(suffix, text)
    negative = sign == "-"
    # The fast path: small enough for an int64 mantissa, kept as written when already canonical.
    if base == 10 and len(num) + len(denom) <= 18 and power - len(denom) >= -9:
        digits, scale = num + denom, power - len(denom)
        value = Fraction(int(digits)) * Fraction(10) ** scale
        canonical = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
        return (-value if negative else value), family, text if canonical else None
    if base == 2 and not denom and 15 - len(num) - power * 3 // 10 - 1 >= 0:
        value = Fraction(int(num) << power)
        return (-value if negative else value), family, text if int(num) & 7 else None
    # The general path: exact decimal arithmetic, rounded up to 1n; only binary quantities are capped.
    if not re.search("[0-9]", text[: match.start(4)]):
        raise QuantityError(f"quantity {shorten(text)}: no digits before the suffix")
    value = Fraction(int(num + denom), 10 ** len(denom)) * Fraction(base) ** power
    value = Fraction(-((-value.numerator * 10**9) // value.denominator), 10**9)  # ceil to a whole 1n
    if family == "binary":
        value = min(value, Fraction(_INT64_MAX))
        if 0 < value < 1:
            family = "decimal"
    return (-value if negative else value), family, None


def quantity_int64(text: str) -> int | None:
    """Go's ``resource.ParseQuantity(text).AsInt64()``: the value when the parser holds it as an int64
    amount of scale >= 0 that fits int64, else ``None``. HAMi reads every capacity it derives devices or
    liveness from this way, on the string the API server stores (``canonical_quantity``).

    So ``"16"`` and ``"1k"`` read, and ``"500m"`` (a negative scale), ``"1e30"`` (beyond int64), ``"8Ei"``
    and ``"9223372036854775807"`` (past the parser's int64 fast path: 19 digits, or a large binary
    exponent, are held as a decimal, which ``AsInt64`` refuses) do not. Raises ``QuantityError`` when
    ``text`` is not a quantity.
    """
    if text == "0":
        return 0
    match = _GO_QUANTITY.fullmatch(text)
    if not text or match is None:
        raise QuantityError(f"not a quantity: {shorten(text)} (expected a number with an optional suffix)")
    sign, whole, fraction, suffix = match.groups()
    num, denom = whole or "0", fraction or ""
    _, base, power = _interpret(suffix, text)
    value: int | None = None
    if base == 10 and len(num) + len(denom) <= 18 and power - len(denom) >= -9:
        scale = power - len(denom)
        value = int(num + denom) * 10**scale if scale >= 0 else None  # AsInt64 refuses a negative scale
    elif base == 2 and not denom and 15 - len(num) - power * 3 // 10 - 1 >= 0:
        value = int(num) << power
    if value is None or value > _INT64_MAX:
        return None
    return -value if sign == "-" else value


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
    """The string the API server stores for the quantity ``text``, as apimachinery computes it.

    A quantity already in canonical form (an integer mantissa without three trailing zeros and a decimal
    exponent that is a multiple of 3, or a binary mantissa not a multiple of 8) keeps its own text, so
    ``"+4"``, ``"4."``, ``"007"`` and ``"1E3"`` stay as written.
    Anything else is rewritten: rounded up to a whole 1n, the exponent a multiple of 3 and as large as
    it can be, in its suffix family, so ``"1000m"`` becomes ``"1"``, ``"0.5"`` ``"500m"``, ``"2048Ki"``
    ``"2Mi"`` and ``"1e19"`` ``"10e18"``. Only binary quantities are capped at 2^63-1. The server reads
    the string back from storage before answering, so this is applied twice. Surrounding spaces are
    trimmed (the server trims the white space it finds in the JSON text; the port's JSON escapes every
    other white space character, and escaped it is not trimmed). Raises ``QuantityError`` when ``text``
    is not a quantity.
    """
    stored = text.strip(" ")
    for _ in range(2):
        value, family, kept = _go_parse(stored)
        stored = kept if kept is not None else _go_string(value, family)
    return stored
