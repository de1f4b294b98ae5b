import copy
import pickle
import weakref

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hami_core import DeviceInfo, MigPlacement, MigProfile
from hami_core.protocol import model
from hami_core.protocol.model import INT32, INT64, UINT64, IntRange


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
        DeviceInfo(**{field: value})


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
        DeviceInfo(mig_profiles=["not-a-profile"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^placements\[1\]: expected MigPlacement, got tuple$"):
        MigProfile(placements=[MigPlacement(), (1, 2)])  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------------
# The trusted constructors the fast paths use: the same DeviceInfo as the validating constructor
# ---------------------------------------------------------------------------------------------------

_FIELDS = [field.name for field in attrs.fields(DeviceInfo)]
_PLAIN_PARAMS = ["id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health"]
_PLAIN_CONSTANTS = {"mig_profiles": (), "devicevendor": "", "custominfo": None}


def _go_ints(go_range: IntRange) -> st.SearchStrategy[int]:
    edges = st.sampled_from([go_range.low, go_range.high, 0])
    return st.one_of(edges, st.integers(go_range.low, go_range.high))


_devices = st.builds(
    DeviceInfo,
    id=st.text(max_size=6),
    index=_go_ints(UINT64),
    count=_go_ints(INT32),
    devmem=_go_ints(INT32),
    devcore=_go_ints(INT32),
    type=st.text(max_size=6),
    numa=_go_ints(INT64),
    mode=st.text(max_size=6),
    mig_profiles=st.lists(st.builds(MigProfile, name=st.text(max_size=3)), max_size=2),
    health=st.booleans(),
    devicevendor=st.text(max_size=3),
    custominfo=st.none() | st.dictionaries(st.text(max_size=3), st.floats(allow_nan=False), max_size=2),
)


def _assert_same_device(built: DeviceInfo, expected: DeviceInfo) -> None:
    assert type(built) is DeviceInfo
    assert built == expected and hash(built) == hash(expected)
    for name in _FIELDS:  # the very objects, not only equal ones (so no number type changed)
        assert getattr(built, name) is getattr(expected, name)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.id = "changed"  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del built.id  # type: ignore[misc]


def test_this_interpreter_builds_devices_by_draft() -> None:
    """The fast constructors are the draft ones here (the descriptor fallback is for an interpreter
    that refuses the class assignment)."""
    assert model._DRAFT is True
    for build in (model.trusted_device, model.trusted_plain_device, model.trusted_plain_devices):
        assert "_Draft" in build.__code__.co_names


@settings(max_examples=200, deadline=None)
@given(device=_devices, draft=st.booleans())
def test_trusted_device_is_the_validated_device(device: DeviceInfo, draft: bool) -> None:
    build = model.trusted_device if draft else model._trusted_factory(_FIELDS, {}, draft=False)
    _assert_same_device(build(*(getattr(device, name) for name in _FIELDS)), device)


@settings(max_examples=200, deadline=None)
@given(device=_devices, draft=st.booleans())
def test_trusted_plain_device_is_the_validated_device(device: DeviceInfo, draft: bool) -> None:
    plain = attrs.evolve(device, **_PLAIN_CONSTANTS)
    build = (
        model.trusted_plain_device
        if draft
        else model._trusted_factory(_PLAIN_PARAMS, _PLAIN_CONSTANTS, draft=False)
    )
    _assert_same_device(build(*(getattr(plain, name) for name in _PLAIN_PARAMS)), plain)


@settings(max_examples=100, deadline=None)
@given(devices=st.lists(_devices, max_size=5), draft=st.booleans())
def test_trusted_plain_devices_builds_each_column_row(devices: list[DeviceInfo], draft: bool) -> None:
    plain = [attrs.evolve(device, **_PLAIN_CONSTANTS) for device in devices]
    build = (
        model.trusted_plain_devices
        if draft
        else model._trusted_factory(_PLAIN_PARAMS, _PLAIN_CONSTANTS, draft=False, columns=True)
    )
    built = build(*([getattr(device, name) for device in plain] for name in _PLAIN_PARAMS))
    assert type(built) is list and len(built) == len(plain)
    for one, expected in zip(built, plain, strict=True):
        _assert_same_device(one, expected)


def test_a_trusted_device_pickles_copies_and_evolves_as_a_device() -> None:
    device = model.trusted_plain_device("a", 1, 2, 3, 4, "t", 5, "m", True)
    assert pickle.loads(pickle.dumps(device)) == device
    assert copy.deepcopy(device) == device
    assert type(attrs.evolve(device, id="b")) is DeviceInfo
    assert weakref.ref(device)() is device
