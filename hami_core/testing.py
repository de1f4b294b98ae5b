"""The driver test kit, ``DriverContract``: a contract every vendor driver package runs in its own tests
(the guide's section 3 says what it checks). Needs pytest; nothing in ``hami_core`` imports it."""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from hami_core.plugins.driver import VendorDriver
from hami_core.plugins.fakesource import FAKE_DEVICES_ENV
from hami_core.plugins.manager import DriverManager
from hami_core.plugins.validate import (
    annotation_key_problem,
    driver_name_problem,
    resource_name_problem,
    vendor_key_problem,
)
from hami_core.protocol.codecs import Codec
from hami_core.protocol.errors import DecodeError
from hami_core.protocol.liveness import LivenessFacts
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.nodesource import NodeView

__all__ = ["SAMPLE_DEVICE_LISTS", "DriverContract"]

#: Device lists every encoding must carry unchanged; the zero-valued device is the one most often lost.
SAMPLE_DEVICE_LISTS: tuple[tuple[DeviceInfo, ...], ...] = (
    (
        DeviceInfo(
            id="DEV-00552014-5c87",
            count=10,
            devmem=32768,
            devcore=100,
            type="Vendor-Model X 32GB",
            numa=0,
            mode="hami-core",
            health=True,
        ),
    ),
    (DeviceInfo(),),
    (
        DeviceInfo(
            id="DEV-a", index=0, count=1, devmem=2**31 - 1, devcore=0, type="T", numa=-1, health=False
        ),
        DeviceInfo(
            id="DEV-b",
            index=1,
            count=2**31 - 1,
            devmem=0,
            devcore=100,
            type="T",
            numa=1,
            mode="mps",
            health=True,
        ),
    ),
)


#: Values no register annotation encoding should accept.
GARBAGE_VALUES = ("this is not a device list", "[{", "a,b:")

_FRESH = LivenessFacts(stamp_expired=False, allocatable=0, allocatable_seen=False)
#: Every combination of the facts a rule may look at, for the purity and built-in rule checks.
_FACTS = tuple(
    LivenessFacts(stamp_expired=expired, allocatable=allocatable, allocatable_seen=seen, capacity=capacity)
    for expired in (False, True)
    for allocatable in (0, 2)
    for seen in (False, True)
    for capacity in (0, 4)
)


class DriverContract:
    """The framework's contract for one driver. Subclass it and set ``driver_name``."""

    driver_name: ClassVar[str]
    #: The distribution the driver must come from (checked when set).
    package: ClassVar[str | None] = None
    #: ``False`` for a driver whose ``hami_discover_devices`` does not read ``HAMI_FAKE_DEVICES``.
    uses_fake_source: ClassVar[bool] = True
    #: Views of Nodes the driver's node source is run on (each twice: it must be pure).
    node_views: ClassVar[tuple[NodeView, ...]] = ()

    @pytest.fixture(scope="class")
    @classmethod
    def manager(cls) -> DriverManager:
        """A manager with every installed driver loaded through its entry point."""
        manager = DriverManager()
        manager.load_entry_points()
        return manager

    @pytest.fixture
    def driver(self, manager: DriverManager) -> VendorDriver:
        """The driver under test, as the core loaded it."""
        found = [d for d in manager.report.drivers if d.name == self.driver_name]
        if not found:
            failures = [str(f) for f in manager.report.failures if f.name == self.driver_name]
            pytest.fail(f"driver {self.driver_name!r} did not load: {failures or 'no such entry point'}")
        return found[0]

    def test_loads_through_its_entry_point(self, driver: VendorDriver, manager: DriverManager) -> None:
        assert not [f for f in manager.report.failures if f.name in (driver.name, driver.plugin)]
        if self.package is not None:
            assert driver.package == self.package
            assert driver.version == importlib.metadata.version(self.package)

    def test_describes_itself_consistently(self, driver: VendorDriver) -> None:
        again = DriverManager()
        again.load_entry_points()
        twin = [d for d in again.report.drivers if d.name == driver.name and d.origin == driver.origin]
        assert len(twin) == 1, "describing itself twice must give one driver of the same name"
        mine, theirs = driver.rules(), twin[0].rules()
        for field in ("vendor_key", "register_annotation", "handshake_annotation", "count_resource"):
            assert getattr(theirs, field) == getattr(mine, field), field
        assert twin[0].writes_reported == driver.writes_reported
        assert twin[0].encoding == driver.encoding
        assert theirs.liveness.name == mine.liveness.name
        assert twin[0].sources == driver.sources

    def test_names_and_keys_are_well_formed(self, driver: VendorDriver) -> None:
        assert driver_name_problem(driver.name) is None
        assert vendor_key_problem(driver.vendor_key) is None
        for key in driver.annotation_keys:
            assert annotation_key_problem(key) is None, key
        assert len(set(driver.annotation_keys)) == len(driver.annotation_keys)
        assert resource_name_problem(driver.count_resource) is None

    def _codec(self, driver: VendorDriver) -> Codec | None:
        """The driver's codec; ``None`` for a driver whose devices come only from the Node, which then
        must declare nothing a codec would serve (no register or handshake annotation, no report)."""
        if driver.codec is None:
            assert driver.node_source is not None, "a driver without a codec takes its devices from the Node"
            assert driver.register_annotation is None and driver.handshake_annotation is None
            assert not driver.writes_reported, "a driver with nothing on the wire reports nothing"
        return driver.codec

    @pytest.mark.parametrize("devices", SAMPLE_DEVICE_LISTS, ids=["full", "zero-valued", "two-devices"])
    def test_codec_round_trips(self, driver: VendorDriver, devices: tuple[DeviceInfo, ...]) -> None:
        """Decoding gives back the devices encoded, the codec's ``fixed_values`` set; a list so read
        round-trips exactly, byte-stable."""
        codec = self._codec(driver)
        if codec is None:
            return
        fixed: Mapping[str, Any] = getattr(codec, "fixed_values", {})
        read = [attrs.evolve(device, **fixed) for device in devices]
        assert codec.decode(codec.encode(devices)) == read
        encoded = codec.encode(read)
        assert isinstance(encoded, str)
        decoded = codec.decode(encoded)
        assert decoded == read
        assert codec.encode(decoded) == encoded, "encoding must be byte-stable across a round trip"

    def test_codec_encodes_an_empty_list(self, driver: VendorDriver) -> None:
        codec = self._codec(driver)
        assert codec is None or isinstance(codec.encode([]), str)

    @pytest.mark.parametrize("value", GARBAGE_VALUES)
    def test_codec_refuses_garbage_with_decode_error(self, driver: VendorDriver, value: str) -> None:
        codec = self._codec(driver)
        if codec is None:
            return
        with pytest.raises(DecodeError):
            codec.decode(value)

    def test_liveness_answers_the_standard_scenarios(self, driver: VendorDriver) -> None:
        rules = [driver.rules()]
        path = driver.rules().node_path()
        if path is not None and path is not rules[0]:
            rules.append(path)
        for vendor in rules:
            rule = vendor.liveness
            answers = [rule.alive(facts) for facts in _FACTS]
            if rule.name in ("handshake", "allocatable") and vendor.handshake_annotation is not None:
                expired = LivenessFacts(stamp_expired=True, allocatable=0, allocatable_seen=False)
                assert rule.alive(_FRESH) is True, "a fresh stamp means alive"
                assert rule.alive(expired) is False, "an expired stamp with nothing allocatable means dead"
                for seen in (False, True):
                    facts = LivenessFacts(stamp_expired=True, allocatable=2, allocatable_seen=seen)
                    assert rule.alive(facts) is True, "devices still allocatable means alive"
            if rule.name == "allocatable":
                dropped = LivenessFacts(stamp_expired=False, allocatable=0, allocatable_seen=True)
                assert rule.alive(dropped) is False, "a count seen above zero that drops to zero means dead"
            if rule.name == "devices":
                assert all(answers), "the devices rule keeps a vendor while its source yields devices"
            if rule.name == "capacity":
                assert answers == [f.capacity > 0 for f in _FACTS], "the capacity rule is capacity > 0"
            assert all(isinstance(a, bool) for a in answers), "alive() answers True or False"
            again = [rule.alive(attrs.evolve(facts)) for facts in reversed(_FACTS)]
            assert again[::-1] == answers, "a rule must be pure: the same facts, in any order, same answers"

    def test_node_source_is_pure(self, driver: VendorDriver) -> None:
        """Its function, shown a view with none of its inputs, yields no devices (or a DecodeError); shown
        each of ``node_views`` twice (equal views, distinct objects), the same list of devices."""
        source = driver.node_source
        if source is None:  # its devices come from the register annotation: it must say which and how
            assert driver.register_annotation is not None and driver.codec is not None, (
                "a driver without a node source reads a register annotation with a codec"
            )
            return
        empty = NodeView(name="node-1")
        with contextlib.suppress(DecodeError):
            assert source.devices(empty) == [], "a Node without the inputs has none of the devices"
        for view in self.node_views:
            first, second = source.devices(view), source.devices(attrs.evolve(view))
            assert isinstance(first, list) and all(isinstance(d, DeviceInfo) for d in first)
            assert first == second, "the same view must give the same devices"

    def test_discovery_reads_the_fake_source(
        self, driver: VendorDriver, manager: DriverManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv(FAKE_DEVICES_ENV, raising=False)
        found = manager.discover_devices(driver, "node-1")
        assert found is None or isinstance(found, list)
        if not self.uses_fake_source:
            return
        assert found is None, "without a source the driver must answer None, not an empty list"
        source = tmp_path / "devices.json"
        source.write_text(json.dumps({driver.name: [{"id": "DEV-0", "count": 4, "health": True}]}))
        monkeypatch.setenv(FAKE_DEVICES_ENV, str(source))
        assert manager.discover_devices(driver, "node-1") == [DeviceInfo(id="DEV-0", count=4, health=True)]

    def test_node_deleted_is_accepted(self, driver: VendorDriver, manager: DriverManager) -> None:
        assert manager.node_deleted([driver], "node-1") == []

    def test_imports_only_the_public_facade(self, driver: VendorDriver, manager: DriverManager) -> None:
        offending = [
            f"{path}: {name}"
            for path, name in _core_imports(manager.plugin_of(driver))
            if name != "hami_core"
        ]
        assert not offending, f"drivers import only from 'hami_core', never its inner modules: {offending}"


def _core_imports(plugin: object) -> Iterator[tuple[Path, str]]:
    """Every ``hami_core...`` module imported by the source files of the plugin's top-level package."""
    module_name = getattr(plugin, "__name__", None) or type(plugin).__module__
    top = sys.modules[module_name.partition(".")[0]]
    origin = Path(top.__file__ or "")
    files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            yield from ((path, n) for n in names if n.partition(".")[0] == "hami_core")
