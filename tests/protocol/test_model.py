import pytest

from hami_core import DeviceInfo, MigPlacement, MigProfile


def test_defaults_are_go_zero_values() -> None:
    d = DeviceInfo()
    assert (d.id, d.index, d.count, d.numa, d.mode, d.health, d.mig_profiles) == ("", 0, 0, 0, "", False, ())


@pytest.mark.parametrize(
    ("field", "value"),
    [("count", 2**31), ("devmem", -(2**31) - 1), ("devcore", 2**31), ("index", -1), ("index", 2**64),
     ("numa", 2**63)],
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
