"""Kubernetes resource quantities (``"4"``, ``"4k"``, ``"1Ki"``, ``"500m"``, ``"1e3"``) as integer counts.

The grammar is apimachinery's: an optional sign, a decimal number (``1``, ``1.5``, ``1.``, ``.5``) and one
suffix: binary SI (``Ki Mi Gi Ti Pi Ei``), decimal SI (``n u m k M G T P E`` or none) or a decimal exponent
(``e3``, ``E-2``). :func:`quantity_value` rounds a fraction up, away from zero, as Go's
``Quantity.Value()`` does, so ``"500m"`` counts as 1 and ``"-500m"`` as -1.
"""

from __future__ import annotations

import re
from fractions import Fraction

from hami_core.protocol.errors import shorten

__all__ = ["QuantityError", "canonical_quantity", "parse_quantity", "quantity_count", "quantity_value"]

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
        exponent = _EXPONENT.fullmatch(suffix)
        if exponent is None:
            raise QuantityError(f"not a quantity: {shorten(text)} (unknown suffix {shorten(suffix)})")
        power = int(exponent.group(1))
        if abs(power) > _MAX_EXPONENT:
            raise QuantityError(f"quantity {shorten(text)}: exponent {power} is out of range")
        value *= Fraction(10) ** power
    return -value if sign == "-" else value


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


_NANO = Fraction(1, 10**9)
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIX = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def canonical_quantity(text: str) -> str:
    """The form the API server stores ``text`` in (apimachinery's canonical quantity).

    The suffix family (decimal SI, binary SI, exponent) is kept; magnitudes are rounded up to a multiple of
    1n and capped at 2^63-1; the mantissa is an integer and the exponent as large as it can be, so
    ``"1000m"`` becomes ``"1"``, ``"0.5"`` becomes ``"500m"``, ``"2048Ki"`` becomes ``"2Mi"`` and
    ``"1.5k"`` becomes ``"1500"``. Raises ``QuantityError`` when ``text`` is not a quantity.
    """
    value = parse_quantity(text)
    suffix = _NUMBER.fullmatch(text).group(3)  # type: ignore[union-attr]  # parse_quantity matched it
    family = "binary" if suffix in _BINARY_SUFFIX[1:] else "decimal" if suffix in _SUFFIX else "exponent"
    sign = -1 if value < 0 else 1
    magnitude = abs(value)
    if magnitude.denominator != 1:
        nanos = -((-magnitude.numerator * 10**9) // magnitude.denominator)  # ceil to a whole 1n
        magnitude = Fraction(nanos, 10**9)
    magnitude = min(magnitude, Fraction(_INT64_MAX))
    if magnitude == 0:
        return "0"
    if family == "binary" and (magnitude < 1024 or magnitude.denominator != 1):
        family = "decimal"
    if family == "binary":
        mantissa, power = int(magnitude), 0
        while power < len(_BINARY_SUFFIX) - 1 and mantissa % 1024 == 0:
            mantissa, power = mantissa // 1024, power + 1
        return f"{sign * mantissa}{_BINARY_SUFFIX[power]}"
    exponent, nanos = -9, int(magnitude / _NANO)
    while nanos % 1000 == 0:
        nanos, exponent = nanos // 1000, exponent + 3
    if family == "exponent":
        return f"{sign * nanos}" + (f"e{exponent}" if exponent else "")
    while exponent > 18:
        nanos, exponent = nanos * 1000, exponent - 3
    return f"{sign * nanos}{_DECIMAL_SUFFIX[exponent]}"
