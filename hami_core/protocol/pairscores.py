"""Device pair scores: HAMi's topology hints (``hami.io/node-nvidia-score``), kept beside the devices.

HAMi's ``DecodePairScores`` (``pkg/device/devices.go``) is Go's ``json.Unmarshal`` into
``[]DevicePairScore{ID string `json:"uuid"`; Scores map[string]int `json:"score"`}``, and each device of the
vendor takes the first entry whose ``uuid`` is its id (``nvidia/device.go``). HAMi keeps it inside its
``DeviceInfo`` but never on the wire (``json:"-"``); here it is kept beside the device list.

Read with ``gojson``'s reading of Go's decoder, so what Go accepts is accepted: ``null`` (no scores), a
``null`` element (an empty entry), unknown fields skipped. Per entry, as Go decodes into one struct: the
last ``uuid`` wins but ``null`` leaves it, a repeated ``score`` adds to the map already there and
``null`` resets it, a ``null`` score is 0, and a score not an integer literal within Go's int refuses
the whole value, even when a later key fits. A refusal is a ``DecodeError``; spec 1b: the devices then
stay registered without scores, and a Warning says why (HAMi refuses the vendor).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from hami_core.protocol.gojson import JsonObject, fold_key, parse_json, read_int, type_error
from hami_core.protocol.model import INT64, DeviceInfo


@attrs.frozen
class PairScore:
    """One entry: the device ``uuid`` and its score towards each other device id."""

    id: str = ""
    scores: Mapping[str, int] = attrs.field(factory=lambda: MappingProxyType({}))


def _entry(item: Any, path: str) -> PairScore:
    if item is None:
        return PairScore()
    if type(item) is not JsonObject:
        raise type_error(path, item, "DevicePairScore")
    uuid = ""
    scores: dict[str, int] = {}  # Go's nil map (the zero DevicePairScore's) reads as an empty one
    for key, value in item:
        field = fold_key(key)
        if field == "UUID" and value is not None:
            if type(value) is not str:
                raise type_error(f"{path}.uuid", value, "string")
            uuid = value
        elif field == "SCORE":
            if value is not None and type(value) is not JsonObject:
                raise type_error(f"{path}.score", value, "map[string]int")
            scores = {} if value is None else scores  # null resets the map, an object adds to it
            for name, score in value or ():
                scores[name] = 0 if score is None else read_int(score, INT64, f"{path}.score", name)
    return PairScore(uuid, MappingProxyType(scores))


def decode_pair_scores(value: str) -> tuple[PairScore, ...]:
    """The entries of a pair-score annotation value; ``DecodeError`` (one line) when Go's decoder would
    refuse it."""
    tree = parse_json(value, "the")
    if tree is None:
        return ()
    if type(tree) is not list:
        raise type_error("top level", tree, "[]DevicePairScore")
    return tuple(_entry(item, f"[{i}]") for i, item in enumerate(tree))


def scores_for(
    devices: Sequence[DeviceInfo], entries: Sequence[PairScore]
) -> tuple[Mapping[str, int] | None, ...]:
    """Each device's scores: those of the first entry whose ``uuid`` is its id (``None``: no entry)."""
    first = {entry.id: entry.scores for entry in reversed(entries)}
    return tuple(first.get(device.id) for device in devices)
