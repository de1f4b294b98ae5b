"""``PackedStrings`` (``kube/packed.py``): long values kept compressed, read back byte for byte."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hami_core.kube.packed import PACK_OVER, PackedStrings, kept_form

#: What the cold-start benchmark's nodes carry: 8 NVIDIA GPUs in JSON (about 1.4 KiB).
NVIDIA = json.dumps(
    [
        {
            "id": f"GPU-{i:08x}-1c2d-4e5f-8a9b-{i * 7919:012x}",
            "index": i,
            "count": 10,
            "devmem": 81920,
            "devcore": 100,
            "type": "NVIDIA-NVIDIA A100-SXM4-80GB",
            "numa": i // 4,
            "mode": "hami-core",
            "health": True,
        }
        for i in range(8)
    ],
    separators=(",", ":"),
)
_RANDOM = random.Random(18)
VALUES = {
    "ascii": NVIDIA,
    "non-ascii": "GPU-é-中文-🚀-" * 20 + "\u0000\u00ff\uffff\U0010ffff",
    "lone surrogates": "\ud800x" * 40 + "\udfff",  # json.loads gives these for "\\ud800"
    "empty": "",
    "short": "x" * PACK_OVER,
    "just long": "y" * (PACK_OVER + 1),
    "huge": "".join(_RANDOM.choice("0123456789abcdef,;:[]{}") for _ in range(256 * 1024)),
    "incompressible": "".join(chr(_RANDOM.randrange(0x20, 0xD7FF)) for _ in range(5000)),
}


def _wire(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("name", list(VALUES))
def test_every_value_reads_back_byte_for_byte(name: str) -> None:
    value = VALUES[name]
    packed = PackedStrings({"k": value, "other": "Requesting_2026-12-01 09:00:00"})
    assert type(packed["k"]) is str and _wire(packed["k"]) == _wire(value)
    assert _wire(packed.get("k", "")) == _wire(value)
    assert dict(packed) == {"k": value, "other": "Requesting_2026-12-01 09:00:00"}
    assert "k" in packed and "absent" not in packed and packed.get("absent") is None
    assert len(packed) == 2 and list(packed) == ["k", "other"]


@given(st.dictionaries(st.text(max_size=8), st.text(max_size=400)))
def test_any_text_reads_back_as_it_was(values: dict[str, str]) -> None:
    packed = PackedStrings(values)
    assert {key: _wire(v) for key, v in packed.items()} == {key: _wire(v) for key, v in values.items()}
    assert packed == values and packed == PackedStrings(values)


def _held_bytes(packed: PackedStrings) -> int:
    """The bytes its values take as kept: compressed, or as UTF-8."""
    return sum(len(v) if isinstance(v, bytes) else len(_wire(v)) for v in packed._items.values())


def test_a_long_value_takes_a_fraction_of_its_size_a_short_one_stays_as_it_is() -> None:
    assert _held_bytes(PackedStrings({"k": NVIDIA})) < len(NVIDIA) / 4
    short = "Requesting_2026-12-01 09:00:00"
    assert _held_bytes(PackedStrings({"k": short})) == len(short)
    assert PackedStrings({"k": short})._items["k"] is short  # kept as it is: the trim interns it


def test_equal_items_are_equal_mappings_a_changed_value_is_not() -> None:
    one, same = PackedStrings(VALUES), PackedStrings({k: "".join(list(v)) for k, v in VALUES.items()})
    assert one == same
    assert one == VALUES and dict(VALUES) == dict(one)  # against any mapping: by items
    changed = dict(VALUES, ascii=NVIDIA.replace('"count":10', '"count":11', 1))
    assert one != PackedStrings(changed) and one != changed
    assert one != PackedStrings({k: v for k, v in VALUES.items() if k != "empty"})
    assert PackedStrings({}) == {} and PackedStrings({"k": "v"}) != ["k"]


def test_sharing_holds_the_older_mappings_objects_for_the_unchanged_values_only() -> None:
    old = PackedStrings({"register": NVIDIA, "pair": "p" * 200, "stamp": "Requesting_x"})
    new = PackedStrings({"register": NVIDIA, "pair": "q" * 200, "stamp": "Requesting_x", "more": "z" * 99})
    shared = new.sharing(old)
    assert shared == new and dict(shared) == dict(new)
    assert shared._items["register"] is old._items["register"]  # one compressed object for both
    assert shared._items["pair"] is new._items["pair"]
    assert shared._items["more"] is new._items["more"]
    assert new.sharing({"register": NVIDIA}) is new  # a plain mapping: nothing to share


def test_read_only() -> None:
    packed = PackedStrings({"k": NVIDIA})
    with pytest.raises(TypeError):
        packed["k"] = "x"  # type: ignore[index]
    with pytest.raises(KeyError):
        packed["absent"]
    assert repr(PackedStrings({"k": "v"})) == "PackedStrings({'k': 'v'})"


def test_kept_form_tells_values_apart_without_reading_them_back() -> None:
    long_value, other = "x" * (PACK_OVER + 1), "y" * (PACK_OVER + 1)
    first, again = PackedStrings({"a": long_value}), PackedStrings({"a": long_value})
    changed = PackedStrings({"a": other})
    assert isinstance(kept_form(first, "a"), bytes)  # the compressed form, not the text
    assert kept_form(first, "a") == kept_form(again, "a")
    assert kept_form(first, "a") != kept_form(changed, "a")
    assert kept_form(first, "b") is None
    assert kept_form({"a": long_value}, "a") == long_value  # any other mapping: the value itself
    # A plain mapping's value never equals a packed one's form: the caller decides again (safe side).
    assert kept_form({"a": long_value}, "a") != kept_form(first, "a")
