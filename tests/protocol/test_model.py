import copy
import pickle
import weakref
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hami_core import DeviceInfo, MigPlacement, MigProfile
from hami_core.protocol import model
from hami_core.protocol.model import IntRange


def device_with(field: str, value: object) -> DeviceInfo:
    """A device with one field, named at run time, set to any value: the constructor's checks are what
    these tests exercise, so the value's type is not the type checker's business."""
    changes: dict[str, Any] = {field: value}
    return DeviceInfo(**changes)


def test_defaults_are_go_zero_values() -> None:
    d = DeviceInfo()
    assert (d.id, d.index, d.count, d.numa, d.mode, d.health, d.mig_profiles) == ("", 0, 0, 0, "", False, ())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("count", 2**31),
        ("devmem", -(2**31) - 1),
        ("devcore", 2**31),
        ("index", -1),
        ("index", 2**64),
        ("numa", 2**63),
    ],
)
def test_out_of_go_range_is_refused(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=field):
        device_with(field, value)


def test_go_range_limits_are_accepted() -> None:
    d = DeviceInfo(count=2**31 - 1, devmem=-(2**31), index=2**64 - 1, numa=-(2**63))
    assert d.index == 2**64 - 1


def test_bool_is_not_an_int() -> None:
    with pytest.raises(TypeError, match="count"):
        DeviceInfo(count=True)


def test_mig_profile_ranges() -> None:
    with pytest.raises(ValueError, match="slice_count"):
        MigProfile(slice_count=-1)
    with pytest.raises(ValueError, match="start"):
        MigPlacement(start=2**32)
    placement = MigPlacement(start=1, size=2)
    assert MigProfile(placements=[placement]).placements == (placement,)


def test_mig_lists_hold_only_their_own_type() -> None:
    with pytest.raises(TypeError, match=r"^mig_profiles\[0\]: expected MigProfile, got str$"):
        DeviceInfo(mig_profiles=["not-a-profile"])
    with pytest.raises(TypeError, match=r"^placements\[1\]: expected MigPlacement, got tuple$"):
        MigProfile(placements=[MigPlacement(), (1, 2)])


# ---------------------------------------------------------------------------------------------------
# The field table: every field once, and the checks it drives
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [DeviceInfo, MigProfile, MigPlacement])
def test_the_table_has_one_row_per_field(cls: type) -> None:
    table = model.fields_of(cls)
    assert [row.name for row in table] == [field.name for field in attrs.fields(cls)]
    assert len({row.key.lower() for row in table}) == len(table)  # no two keys fold together


def test_the_table_says_hamis_key_order_and_the_legacy_columns() -> None:
    table = model.fields_of(DeviceInfo)
    written = [row.key for row in table if row.written]
    assert written == [
        "id",
        "index",
        "count",
        "devmem",
        "devcore",
        "type",
        "numa",
        "mode",
        "migProfiles",
        "health",
    ]
    columns = sorted((row.legacy, row.key) for row in table if row.legacy is not None)
    keys = ["id", "count", "devmem", "devcore", "type", "numa", "health", "index", "mode"]
    assert columns == list(enumerate(keys))


class _Str(str):
    pass


class _Int(int):
    pass


_ANY_VALUE = st.one_of(
    st.integers(-(2**65), 2**65),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64]),
    st.booleans(),
    st.text(max_size=3),
    st.builds(_Str, st.text(max_size=3)),
    st.builds(_Int, st.integers(-(2**33), 2**33)),
    st.none(),
    st.floats(allow_nan=False),
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(
        [f.name for f in model.fields_of(DeviceInfo) if f.kind in (str, bool) or isinstance(f.kind, IntRange)]
    ),
    value=_ANY_VALUE,
)
def test_a_field_takes_exactly_the_values_of_its_kind(name: str, value: object) -> None:
    """The one-pass check and the field-by-field one agree: a value is taken iff it is of the field's
    kind (a subclass included, a bool never an int) and inside its Go range; a subclass's value is kept
    as the exact str or int it holds."""
    (row,) = [f for f in model.fields_of(DeviceInfo) if f.name == name]
    kind = row.kind
    expected = value in kind if isinstance(kind, IntRange) else isinstance(value, kind)
    try:
        device = device_with(name, value)
    except (TypeError, ValueError) as exc:
        assert not expected, exc
        assert name in str(exc) and "\n" not in str(exc)
    else:
        assert expected
        kept = getattr(device, name)
        assert kept == value and type(kept) is (int if isinstance(kind, IntRange) else kind)


def test_a_device_pickles_copies_and_evolves_as_a_device() -> None:
    device = DeviceInfo(
        id="a", index=1, count=2, devmem=3, devcore=4, type="t", numa=5, mode="m", health=True
    )
    assert pickle.loads(pickle.dumps(device)) == device
    assert copy.deepcopy(device) == device
    assert type(attrs.evolve(device, id="b")) is DeviceInfo
    assert weakref.ref(device)() is device


def test_a_device_takes_its_fields_by_keyword_or_in_declaration_order() -> None:
    assert DeviceInfo("a", 1, 2) == DeviceInfo(id="a", index=1, count=2)
    with pytest.raises(TypeError):
        DeviceInfo(*range(13))
    with pytest.raises(ValueError, match=r"^index=-1 is out of range for uint64"):
        DeviceInfo("a", -1)
    assert MigProfile("1g.5gb", 4864, placements=[MigPlacement(0, 1)]).placements == (
        MigPlacement(start=0, size=1),
    )
