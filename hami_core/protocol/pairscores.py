"""Device pair scores: HAMi's topology hints (``hami.io/node-nvidia-score``), kept beside the devices.

HAMi's ``DecodePairScores`` (``pkg/device/devices.go``) is Go's ``json.Unmarshal`` into
``[]DevicePairScore{ID string `json:"uuid"`; Scores map[string]int `json:"score"`}``, and each device of the
vendor takes the first entry whose ``uuid`` is its id (``nvidia/device.go``). HAMi keeps it inside its
``DeviceInfo`` but never on the wire (``json:"-"``); here it is kept beside the device list.

What Go's decoder accepts is accepted here: ``null`` (no scores), field names in any case (the last of
equal names wins), unknown fields ignored, a ``null`` element as an empty entry; a score must be a JSON
integer within int64 (``1.0``, ``1e2``, a string: refused). Anything else is a ``DecodeError``; spec 1b:
the devices then stay registered without scores, and a Warning says why (HAMi refuses the vendor).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from hami_core.protocol.errors import DecodeError, shorten
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.size import check_size

__all__ = ["PairScore", "decode_pair_scores", "scores_for"]

_INT64 = range(-(2**63), 2**63)


@attrs.frozen
class PairScore:
    """One entry: the device ``uuid`` and its score towards each other device id."""

    id: str = ""
    scores: Mapping[str, int] = attrs.field(factory=lambda: MappingProxyType({}))


class _Fraction(str):
    """A JSON number with a fraction or an exponent, as written: fine where Go ignores it, not as a score."""


def _refuse(value: str) -> Any:
    raise DecodeError(f"{value} is not JSON")


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """Go's case-insensitive field match: the last key equal to ``name`` in any case."""
    found = None
    for key, item in obj.items():
        if key.lower() == name:
            found = item
    return found


def _scores(value: Any, where: str) -> Mapping[str, int]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, dict):
        raise DecodeError(f"{where}: score must be an object of integers, got {shorten(json.dumps(value))}")
    scores: dict[str, int] = {}
    for key, score in value.items():
        if score is None:
            score = 0  # Go leaves the zero value
        if isinstance(score, _Fraction):
            raise DecodeError(f"{where}: score {key!r} {score} is not an integer")
        if isinstance(score, bool) or not isinstance(score, int):
            raise DecodeError(f"{where}: score {key!r} must be an integer, got {shorten(json.dumps(score))}")
        if score not in _INT64:
            raise DecodeError(f"{where}: score {key!r} {score} is out of range for Go's int")
        scores[key] = score
    return MappingProxyType(scores)


def decode_pair_scores(value: str) -> tuple[PairScore, ...]:
    """The entries of a pair-score annotation value; ``DecodeError`` (one line) when Go's decoder would
    refuse it."""
    check_size(value, "the")
    try:
        data = json.loads(value, parse_float=_Fraction, parse_constant=_refuse)  # the last equal key wins
    except DecodeError as exc:
        raise DecodeError(f"not JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"not JSON: {str(exc).splitlines()[0]}") from None
    if data is None:
        return ()
    if not isinstance(data, list):
        raise DecodeError(f"expected a JSON array of {{uuid, score}} entries, got {shorten(value)}")
    entries: list[PairScore] = []
    for i, item in enumerate(data):
        where = f"entry {i}"
        if item is None:
            entries.append(PairScore())
            continue
        if not isinstance(item, dict):
            raise DecodeError(f"{where}: expected an object, got {shorten(json.dumps(item))}")
        uuid = _field(item, "uuid")
        if uuid is None:
            uuid = ""
        if not isinstance(uuid, str) or isinstance(uuid, _Fraction):
            shown = uuid if isinstance(uuid, _Fraction) else shorten(json.dumps(uuid))
            raise DecodeError(f"{where}: uuid must be a string, got {shown}")
        entries.append(PairScore(uuid, _scores(_field(item, "score"), where)))
    return tuple(entries)


def scores_for(
    devices: Sequence[DeviceInfo], entries: Sequence[PairScore]
) -> tuple[Mapping[str, int] | None, ...]:
    """Each device's scores: those of the first entry whose ``uuid`` is its id (``None``: no entry)."""
    first: dict[str, Mapping[str, int]] = {}
    for entry in entries:
        first.setdefault(entry.id, entry.scores)
    return tuple(first.get(device.id) for device in devices)
