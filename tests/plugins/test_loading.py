"""Discovery through entry points, isolation of broken drivers, hook typos, version refusal."""

from __future__ import annotations

import pytest
from plugins.driverkit import IN_TREE, Describes, FakeDist, good_driver, make_spec

from hami_core import hookimpl
from hami_core.plugins import DriverError, DriverManager, LoadFailure, LoadReport


def test_the_four_in_tree_drivers_are_discovered_with_their_packages() -> None:
    report = DriverManager().load_entry_points()
    found = {d.name: d for d in report.drivers}
    for name in IN_TREE:
        assert found[name].package == f"hami-vendor-{name}"
        assert found[name].plugin == name
        assert found[name].version


def test_a_driver_that_fails_to_import_is_reported_and_skipped(fake_dist: FakeDist) -> None:
    fake_dist("hami-vendor-broken", "raise RuntimeError('libfoo.so: cannot open shared object file')\n")
    report = DriverManager().load_entry_points()
    assert (
        LoadFailure(
            "hami-vendor-broken",
            "hami-vendor-broken",
            "1.2.3",
            "import failed: RuntimeError: libfoo.so: cannot open shared object file",
        )
        in report.failures
    )
    assert set(IN_TREE) <= {d.name for d in report.drivers}


def test_a_driver_calling_sys_exit_on_import_does_not_stop_the_others(fake_dist: FakeDist) -> None:
    fake_dist("hami-vendor-exits", "import sys\nsys.exit(3)\n")
    fake_dist("hami-vendor-fine", good_driver("fine"))
    report = DriverManager().load_entry_points()
    assert [f.message for f in report.failures if f.package == "hami-vendor-exits"] == [
        "import failed: SystemExit: 3"
    ]
    assert "fine" in {d.name for d in report.drivers}


def test_a_driver_calling_sys_exit_while_describing_itself_does_not_stop_the_others(
    fake_dist: FakeDist,
) -> None:
    fake_dist(
        "hami-vendor-quits",
        """
        import sys
        from hami_core import hookimpl

        @hookimpl
        def hami_vendor_drivers():
            sys.exit("no hardware library")
        """,
    )
    fake_dist("hami-vendor-fine", good_driver("fine"))
    report = DriverManager().load_entry_points()
    assert [f.message for f in report.failures if f.package == "hami-vendor-quits"] == [
        "hami_vendor_drivers failed: SystemExit: no hardware library"
    ]
    assert "fine" in {d.name for d in report.drivers}


def test_a_keyboard_interrupt_while_describing_is_not_swallowed() -> None:
    class Interrupted:
        @hookimpl
        def hami_vendor_drivers(self) -> list[object]:
            raise KeyboardInterrupt

    manager = DriverManager()
    with pytest.raises(KeyboardInterrupt):
        manager.register(Interrupted(), "interrupted")
    assert manager.report == LoadReport((), ())


def test_a_driver_that_fails_to_describe_itself_is_reported_and_skipped(fake_dist: FakeDist) -> None:
    fake_dist(
        "hami-vendor-moody",
        """
        from hami_core import hookimpl

        @hookimpl
        def hami_vendor_drivers():
            raise KeyError("config")
        """,
        entry_name="moody",
    )
    report = DriverManager().load_entry_points()
    (failure,) = [f for f in report.failures if f.package == "hami-vendor-moody"]
    assert str(failure) == "moody (hami-vendor-moody 1.2.3): hami_vendor_drivers failed: KeyError: 'config'"
    assert set(IN_TREE) <= {d.name for d in report.drivers}


def test_a_hook_name_with_a_typo_is_caught(fake_dist: FakeDist) -> None:
    fake_dist(
        "hami-vendor-typo",
        good_driver("typo")
        + """
@hookimpl
def hami_discover_device(driver_name, node_name):
    return []
""",
        entry_name="typo",
    )
    manager = DriverManager()
    report = manager.load_entry_points()
    (failure,) = [f for f in report.failures if f.package == "hami-vendor-typo"]
    assert failure.message == "implements unknown hook(s) hami_discover_device (a typo?)"
    assert "typo" not in {d.name for d in report.drivers}


def test_a_plugin_without_the_description_hook_is_refused() -> None:
    class OnlyDiscovery:
        @hookimpl
        def hami_discover_devices(self, driver_name: str, node_name: str) -> None:
            return None

    with pytest.raises(DriverError, match=r"plugin 'lonely' \(<registered plugin lonely>\): provides no "):
        DriverManager().register(OnlyDiscovery(), "lonely")


def test_a_hook_with_wrong_arguments_is_refused_at_registration() -> None:
    class WrongArgs(Describes):
        @hookimpl
        def hami_discover_devices(self, driver: str, node: str) -> None:
            return None

    with pytest.raises(DriverError, match=r"plugin 'wrong' .*cannot register: PluginValidationError"):
        DriverManager().register(WrongArgs(make_spec()), "wrong")


def test_a_refused_plugin_leaves_nothing_registered() -> None:
    manager = DriverManager()
    with pytest.raises(DriverError):
        manager.register(Describes(make_spec(liveness="sometimes")), "acme")
    assert manager.report.drivers == ()
    assert [d.name for d in manager.register(Describes(make_spec()), "acme")] == ["acme"]


class UsesANewHook(Describes):
    """Written for a later hami-core, which (say) added ``hami_node_added``."""

    @hookimpl
    def hami_node_added(self, driver_name: str, node_name: str) -> None:
        return None


class UsesAChangedHook(Describes):
    """Written for a later hami-core, which (say) gave ``hami_discover_devices`` another argument."""

    @hookimpl
    def hami_discover_devices(self, driver_name: str, node_name: str, topology: object) -> None:
        return None


def test_a_driver_using_a_hook_this_core_lacks_is_refused() -> None:
    """No version field: the package's pin on hami-core says what it needs, and a hook the core does not
    specify is refused by name."""
    manager = DriverManager()
    with pytest.raises(DriverError) as caught:
        manager.register(UsesANewHook(make_spec()), "acme")
    assert str(caught.value) == (
        "plugin 'acme' (<registered plugin acme>): implements unknown hook(s) hami_node_added (a typo?)"
    )
    assert manager.report.drivers == ()


def test_a_hook_with_arguments_its_spec_lacks_is_refused_by_pluggys_own_check() -> None:
    manager = DriverManager()
    with pytest.raises(DriverError) as caught:
        manager.register(UsesAChangedHook(make_spec()), "acme", package="hami-vendor-acme", version="2.0")
    message = str(caught.value)
    assert message.startswith("plugin 'acme' (hami-vendor-acme 2.0): cannot register: "), message
    assert "hami_discover_devices" in message and "topology" in message, message
    assert "\n" not in message
    assert manager.report.drivers == ()


def test_a_hook_name_with_a_typo_is_refused() -> None:
    class Typo(Describes):
        @hookimpl
        def hami_discover_device(self, driver_name: str, node_name: str) -> None:
            return None

    with pytest.raises(DriverError) as caught:
        DriverManager().register(Typo(make_spec()), "acme")
    assert str(caught.value) == (
        "plugin 'acme' (<registered plugin acme>): implements unknown hook(s) hami_discover_device (a typo?)"
    )


def test_one_plugin_may_provide_several_drivers() -> None:
    manager = DriverManager()
    specs = [
        make_spec(
            name=f"chip-{i}",
            vendor_key=f"CHIP-{i}",
            register_annotation=f"hami.io/r-{i}",
            handshake_annotation=f"hami.io/h-{i}",
        )
        for i in range(3)
    ]
    drivers = manager.register(Describes(*specs), "chips", package="hami-vendor-chips", version="0.3")
    assert [d.name for d in drivers] == ["chip-0", "chip-1", "chip-2"]
    assert {(d.plugin, d.origin) for d in drivers} == {("chips", "hami-vendor-chips 0.3")}


def test_a_plugin_describing_one_driver_twice_is_refused() -> None:
    with pytest.raises(DriverError, match="describes driver 'acme' twice"):
        DriverManager().register(Describes(make_spec(), make_spec()), "acme")


def test_a_plugin_describing_nothing_is_refused() -> None:
    with pytest.raises(DriverError, match="hami_vendor_drivers describes no driver"):
        DriverManager().register(Describes(), "empty")


def test_a_plugin_returning_something_else_than_specs_is_refused() -> None:
    with pytest.raises(DriverError, match="must yield VendorSpec records, got dict"):
        DriverManager().register(Describes({"name": "acme"}), "dicts")


def test_typo_checking_leaves_the_manager_consistent(fake_dist: FakeDist) -> None:
    """The offending plugin is unregistered, so pluggy's own check_pending at the end of loading passes."""
    fake_dist(
        "hami-vendor-typo2", "from hami_core import hookimpl\n@hookimpl\ndef hami_vendor_driver(): pass\n"
    )
    report = DriverManager().load_entry_points()
    assert [f.message for f in report.failures if f.package == "hami-vendor-typo2"] == [
        "implements unknown hook(s) hami_vendor_driver (a typo?)"
    ]


def test_registering_one_plugin_name_twice_is_refused() -> None:
    manager = DriverManager()
    manager.register(Describes(make_spec()), "acme")
    with pytest.raises(
        DriverError, match=r"^plugin 'acme' \(<registered plugin acme>\): is already registered$"
    ):
        manager.register(Describes(make_spec(name="other")), "acme")
    assert [d.name for d in manager.report.drivers] == ["acme"]


def test_loading_entry_points_twice_loads_each_once() -> None:
    manager = DriverManager()
    first = manager.load_entry_points()
    assert manager.load_entry_points() == first
