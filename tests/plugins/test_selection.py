"""Conflicts between drivers, the operator's selection and count resource overrides, zero drivers, hook
routing."""

from __future__ import annotations

import pytest
from plugins.driverkit import IN_TREE, Describes, FakeDist, good_driver, vendor_spec_for

from hami_core import DeviceInfo, hookimpl
from hami_core.plugins import (
    DriverConflictError,
    DriverManager,
    DriverSelectionError,
    NoDriversError,
    PluginError,
    load_drivers,
    parse_count_resources,
    parse_vendor_names,
)


def manager_with(*names: str) -> DriverManager:
    manager = DriverManager()
    for name in names:
        manager.register(Describes(vendor_spec_for(name)), name, package=f"hami-vendor-{name}", version="1.0")
    return manager


def test_two_drivers_claiming_one_vendor_key_are_a_startup_error_naming_both_packages(
    fake_dist: FakeDist,
) -> None:
    fake_dist("hami-vendor-gpu-a", good_driver("gpua", key="GPU"), entry_name="gpua")
    fake_dist("hami-vendor-gpu-b", good_driver("gpub", key="GPU"), entry_name="gpub", version="2.0")
    manager = DriverManager()
    manager.load_entry_points()
    with pytest.raises(DriverConflictError) as caught:
        manager.select()
    assert str(caught.value) == (
        "vendor key 'GPU' is claimed by driver 'gpua' (hami-vendor-gpu-a 1.2.3) and driver 'gpub' "
        "(hami-vendor-gpu-b 2.0); select one of them with --vendors or uninstall one"
    )
    assert [d.name for d in manager.select(["gpua", "nvidia"])] == ["gpua", "nvidia"]


def test_two_drivers_claiming_one_annotation_key_conflict_even_across_register_and_handshake() -> None:
    manager = manager_with("one")
    manager.register(
        Describes(vendor_spec_for("two", handshake_annotation="hami.io/node-one-register")),
        "two",
        package="hami-vendor-two",
        version="1.0",
    )
    with pytest.raises(
        DriverConflictError,
        match=r"annotation key 'hami.io/node-one-register' is claimed by "
        r"driver 'one' \(hami-vendor-one 1.0\) and driver 'two' \(hami-vendor-two 1.0\)",
    ):
        manager.select()


def test_two_packages_with_one_entry_point_name_conflict_instead_of_shadowing(fake_dist: FakeDist) -> None:
    fake_dist(
        "hami-vendor-nvidia-fork",
        good_driver("nvidia", key="NVIDIA", handshake="hami.io/node-handshake"),
        entry_name="nvidia",
    )
    manager = DriverManager()
    manager.load_entry_points()
    with pytest.raises(DriverConflictError) as caught:
        manager.select(["nvidia"])
    message = str(caught.value)
    assert "driver name 'nvidia' is claimed by driver 'nvidia'" in message
    assert "hami-vendor-nvidia 0.1.0" in message and "hami-vendor-nvidia-fork 1.2.3" in message


def test_default_selection_is_every_loaded_driver_sorted() -> None:
    assert [d.name for d in manager_with("b", "a", "c").select()] == ["a", "b", "c"]


def test_selection_by_driver_name_and_by_plugin_name() -> None:
    manager = manager_with("a", "b")
    manager.register(Describes(vendor_spec_for("chip-x"), vendor_spec_for("chip-y")), "chips")
    assert [d.name for d in manager.select(["b"])] == ["b"]
    assert [d.name for d in manager.select(["chips", "a"])] == ["chip-x", "chip-y", "a"]
    assert [d.name for d in manager.select(["chip-y", "chips"])] == ["chip-y", "chip-x"]


def test_an_unknown_name_in_the_selection_lists_the_installed_drivers() -> None:
    with pytest.raises(DriverSelectionError) as caught:
        manager_with("a", "b").select(["a", "nvdia"])
    assert str(caught.value) == "unknown vendor driver 'nvdia' (installed: a, b)"


def test_selecting_a_driver_that_failed_to_load_says_why(fake_dist: FakeDist) -> None:
    fake_dist("hami-vendor-broken", "raise ImportError('no module named pynvml')\n", entry_name="broken")
    manager = DriverManager()
    manager.load_entry_points()
    with pytest.raises(
        DriverSelectionError,
        match=r"^vendor driver 'broken' failed to load: broken "
        r"\(hami-vendor-broken 1.2.3\): import failed: ImportError: no module named pynvml",
    ):
        manager.select(["broken"])


@pytest.mark.parametrize(
    ("text", "names"),
    [(None, None), ("", None), (" , ", None), ("nvidia,dcu", ["nvidia", "dcu"]), (" mlu , ", ["mlu"])],
)
def test_vendor_names_parse(text: str | None, names: list[str] | None) -> None:
    assert parse_vendor_names(text) == names


def test_count_resource_overrides_parse_and_apply() -> None:
    overrides = parse_count_resources(
        ["a=vendor.example/shared,b=other.example/x", " ", "a=vendor.example/last"]
    )
    assert overrides == {"a": "vendor.example/last", "b": "other.example/x"}
    drivers = manager_with("a", "b", "c").select(None, overrides)
    assert [d.count_resource for d in drivers] == ["vendor.example/last", "other.example/x", "c.example/gpu"]
    assert drivers[0].rules().count_resource == "vendor.example/last"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("nvidia", "count resource override 'nvidia': expected DRIVER=RESOURCE"),
        ("=x.io/y", "count resource override '=x.io/y': expected DRIVER=RESOURCE"),
        ("nvidia=", "count resource override 'nvidia=': expected DRIVER=RESOURCE"),
        (
            "nvidia=gpu",
            "count resource override 'nvidia=gpu': 'gpu' is not a resource name: it needs a domain",
        ),
    ],
)
def test_a_malformed_count_resource_override_is_refused(item: str, message: str) -> None:
    with pytest.raises(DriverSelectionError, match="^" + message):
        parse_count_resources([item])


def test_a_count_resource_override_for_an_unselected_driver_is_refused() -> None:
    with pytest.raises(
        DriverSelectionError,
        match=r"^count resource override for 'z': no such driver selected "
        r"\(selected: a\)$",
    ):
        manager_with("a", "b").select(["a"], {"z": "z.example/gpu"})


def test_zero_drivers_is_a_clear_error_for_the_daemons() -> None:
    with pytest.raises(NoDriversError, match=r"^no vendor driver is installed: install one"):
        load_drivers(group="hami.vendors.test-none-installed")


def test_zero_drivers_because_all_failed_says_why(fake_dist: FakeDist) -> None:
    group = "hami.vendors.test-all-broken"
    fake_dist(
        "hami-vendor-broken", "raise OSError('driver library missing')\n", entry_name="broken", group=group
    )
    with pytest.raises(NoDriversError) as caught:
        load_drivers(group=group)
    assert str(caught.value) == (
        "no vendor driver could be loaded: broken (hami-vendor-broken 1.2.3): import failed: OSError: "
        "driver library missing"
    )


def test_load_drivers_selects_from_the_installed_ones() -> None:
    manager, drivers = load_drivers(["nvidia", "dcu"], {"nvidia": "nvidia.com/gpu-shared"})
    assert [(d.name, d.count_resource) for d in drivers] == [
        ("nvidia", "nvidia.com/gpu-shared"),
        ("dcu", "hygon.com/dcunum"),
    ]
    assert set(IN_TREE) <= {d.name for d in manager.report.drivers}


class Discovers(Describes):
    def __init__(self, *specs: object, answer: object) -> None:
        super().__init__(*specs)
        self.answer = answer

    @hookimpl
    def hami_discover_devices(self, driver_name: str, node_name: str) -> object:
        self.calls.append(("discover", driver_name, node_name))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_discovery_reaches_only_the_plugin_that_provides_the_driver() -> None:
    manager = DriverManager()
    first = Discovers(vendor_spec_for("a"), answer=[DeviceInfo(id="A-0")])
    second = Discovers(vendor_spec_for("b"), answer=RuntimeError("must not be called"))
    manager.register(first, "a")
    manager.register(second, "b")
    (a,) = manager.select(["a"])
    assert manager.discover_devices(a, "node-1") == [DeviceInfo(id="A-0")]
    assert first.calls == [("discover", "a", "node-1")]
    assert second.calls == []


def test_hook_calls_stay_with_their_plugin_after_a_later_registration() -> None:
    manager = DriverManager()
    first = Discovers(vendor_spec_for("a"), answer=[DeviceInfo(id="A-0")])
    (a,) = manager.register(first, "a")
    assert manager.discover_devices(a, "node-1") == [DeviceInfo(id="A-0")]
    assert manager.node_deleted([a], "node-1") == []
    later = Discovers(vendor_spec_for("b"), answer=[DeviceInfo(id="B-0")])
    manager.register(later, "b")
    assert manager.discover_devices(a, "node-2") == [DeviceInfo(id="A-0")]
    assert manager.node_deleted([a], "node-2") == []
    assert later.calls == []
    assert first.calls == [
        ("discover", "a", "node-1"),
        ("node_deleted", "a", "node-1"),
        ("discover", "a", "node-2"),
        ("node_deleted", "a", "node-2"),
    ]


def test_a_driver_without_discovery_still_answers_none_after_a_later_registration() -> None:
    manager = DriverManager()
    manager.register(Discovers(vendor_spec_for("a"), answer=[DeviceInfo(id="A-0")]), "a")
    (c,) = manager.register(Describes(vendor_spec_for("c")), "c")
    assert manager.discover_devices(c, "node-1") is None
    later = Discovers(vendor_spec_for("b"), answer=[DeviceInfo(id="B-0")])
    manager.register(later, "b")
    assert manager.discover_devices(c, "node-1") is None
    assert later.calls == []


def test_a_hook_implementation_gets_only_the_arguments_it_names() -> None:
    class NodeOnly(Describes):
        @hookimpl
        def hami_discover_devices(self, node_name: str) -> list[DeviceInfo]:
            return [DeviceInfo(id=f"{node_name}-0")]

    manager = DriverManager()
    (driver,) = manager.register(NodeOnly(vendor_spec_for("a")), "a")
    assert manager.discover_devices(driver, "node-1") == [DeviceInfo(id="node-1-0")]


def test_a_driver_without_discovery_answers_none() -> None:
    manager = manager_with("a")
    assert manager.discover_devices(manager.select()[0], "node-1") is None


@pytest.mark.parametrize("answer", [{"id": "x"}, [{"id": "x"}], "GPU-0,1,2,3,T,0,true:"])
def test_discovery_returning_the_wrong_type_is_an_error_naming_the_driver(answer: object) -> None:
    manager = DriverManager()
    manager.register(Discovers(vendor_spec_for("a"), answer=answer), "a")
    with pytest.raises(
        PluginError,
        match=r"^driver 'a' \(<registered plugin a>\): hami_discover_devices must "
        r"return a list of DeviceInfo or None",
    ):
        manager.discover_devices(manager.select()[0], "node-1")


def test_node_deleted_reaches_every_driver_and_survives_a_failing_one() -> None:
    class Fails(Describes):
        @hookimpl
        def hami_node_deleted(self, driver_name: str, node_name: str) -> None:
            raise ValueError("cache is gone")

    manager = DriverManager()
    good = Describes(vendor_spec_for("chip-x"), vendor_spec_for("chip-y"))
    manager.register(Fails(vendor_spec_for("bad")), "bad")
    manager.register(good, "chips")
    problems = manager.node_deleted(manager.select(), "node-7")
    assert problems == [
        "driver 'bad' (<registered plugin bad>): hami_node_deleted failed: ValueError: cache is gone"
    ]
    assert good.calls == [("node_deleted", "chip-x", "node-7"), ("node_deleted", "chip-y", "node-7")]
