"""Finds, loads, checks and selects vendor drivers, and calls their hooks. A driver that fails to load is
a ``LoadFailure`` and skipped; conflicts and a bad selection are raised by ``select``."""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import cast

import attrs
import pluggy

from hami_core.plugins import hookspecs
from hami_core.plugins.driver import VendorDriver, origin_of
from hami_core.plugins.errors import (
    DriverConflictError,
    DriverError,
    DriverSelectionError,
    NoDriversError,
    PluginError,
)
from hami_core.plugins.hookspecs import ENTRY_POINT_GROUP, PROJECT_NAME
from hami_core.plugins.settings import DeviceConfig, DeviceConfigError
from hami_core.plugins.validate import driver_from_spec, resource_name_problem
from hami_core.protocol.model import DeviceInfo

__all__ = [
    "DriverManager",
    "LoadFailure",
    "LoadReport",
    "load_drivers",
    "parse_count_resources",
    "parse_vendor_names",
]

log = logging.getLogger(__name__)


@attrs.frozen
class LoadFailure:
    """A driver (or plugin, when the driver name is not known yet) that was refused and skipped."""

    name: str
    #: Distribution name, ``""`` for a directly registered plugin.
    package: str
    version: str
    message: str

    def __str__(self) -> str:
        return f"{self.name} ({origin_of(self.name, self.package, self.version)}): {self.message}"


@attrs.frozen
class LoadReport:
    """What loading found: the drivers that passed every check, and the ones refused with why."""

    drivers: tuple[VendorDriver, ...]
    failures: tuple[LoadFailure, ...]


def parse_vendor_names(text: str | None) -> list[str] | None:
    """``"nvidia, dcu"`` -> ``["nvidia", "dcu"]``; ``None`` (every installed driver) when unset or blank."""
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    return names or None


def parse_count_resources(items: Iterable[str]) -> dict[str, str]:
    """Parse operator overrides ``DRIVER=RESOURCE``; each item may hold several, separated by commas."""
    overrides: dict[str, str] = {}
    for part in filter(None, (p.strip() for item in items for p in item.split(","))):
        name, equals, resource = (s.strip() for s in part.partition("="))
        if not equals or not name or not resource:
            raise DriverSelectionError(f"count resource override {part!r}: expected DRIVER=RESOURCE")
        if problem := resource_name_problem(resource):
            raise DriverSelectionError(
                f"count resource override {part!r}: {resource!r} is not a resource name: {problem}"
            )
        overrides[name] = resource
    return overrides


class DriverManager:
    """One pluggy plugin manager and its drivers: load, ``select``, then call each driver's own hooks."""

    def __init__(self, *, device_config: DeviceConfig | None = None) -> None:
        #: HAMi's device config, which the drivers read their settings from.
        self.device_config = device_config if device_config is not None else DeviceConfig()
        self._pm = pluggy.PluginManager(PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        #: (plugin name, origin) -> the plugin object and its drivers.
        self._plugins: dict[tuple[str, str], tuple[object, list[VendorDriver]]] = {}
        self._failures: list[LoadFailure] = []

    @property
    def report(self) -> LoadReport:
        """Every loaded driver (sorted by name) and every failure, in load order."""
        drivers = sorted(
            (d for _, ds in self._plugins.values() for d in ds), key=lambda d: (d.name, d.origin)
        )
        return LoadReport(tuple(drivers), tuple(self._failures))

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> LoadReport:
        """Load every installed driver of ``group`` not loaded yet, each on its own; failures are recorded."""
        for entry_point in sorted(importlib.metadata.entry_points(group=group), key=lambda ep: ep.name):
            dist = entry_point.dist
            package, version = (dist.name, dist.version) if dist is not None else ("", "")
            if (entry_point.name, origin_of(entry_point.name, package, version)) in self._plugins:
                continue  # loaded by an earlier call
            try:
                plugin = entry_point.load()
            except (Exception, SystemExit) as error:
                message = f"import failed: {_describe(error)}"
                self._failures.append(LoadFailure(entry_point.name, package, version, message))
                continue
            try:
                self.register(plugin, entry_point.name, package=package, version=version)
            except DriverError as error:
                self._failures.append(LoadFailure(error.name, package, version, error.detail))
        self._pm.check_pending()
        return self.report

    def register(
        self, plugin: object, name: str, *, package: str = "", version: str = ""
    ) -> list[VendorDriver]:
        """Register one plugin object (a module or any object with hook implementations) under ``name``;
        its drivers, or ``DriverError`` (the guide's section 7) for one that cannot be used, leaving nothing
        registered."""
        origin = origin_of(name, package, version)
        refuse = functools.partial(DriverError, name, origin, kind="plugin")
        if (name, origin) in self._plugins:
            raise refuse("is already registered")
        hooks = self._implemented_hooks(plugin)
        unknown = sorted(hook for hook in hooks if not self._is_hook(hook))
        typo = f"implements unknown hook(s) {', '.join(unknown)} (a typo?)" if unknown else ""
        if "hami_vendor_drivers" not in hooks:
            raise refuse(typo or "provides no hami_vendor_drivers hook")
        drivers = self._describe(hooks["hami_vendor_drivers"], name, package, version)
        if typo:
            raise refuse(typo)
        # Two packages may use one entry-point name; both load, and ``select`` reports the conflict.
        key = name if not self._pm.has_plugin(name) else f"{name}@{origin}"
        try:
            self._pm.register(plugin, name=key)
        except pluggy.PluginValidationError as error:  # pluggy's own signature check, in its words
            detail = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
            raise refuse(f"cannot register: PluginValidationError: {detail}") from error
        except Exception as error:
            raise refuse(f"cannot register: {_describe(error)}") from error
        self._plugins[(name, origin)] = (plugin, drivers)
        return drivers

    def _implemented_hooks(self, plugin: object) -> dict[str, Callable[..., object]]:
        """The plugin's hook implementations by hook name, found as pluggy's ``register`` finds them."""
        found: dict[str, Callable[..., object]] = {}
        for attribute in dir(plugin):
            options = self._pm.parse_hookimpl_opts(plugin, attribute)
            if options is not None:
                found[options.get("specname") or attribute] = getattr(plugin, attribute)
        return found

    def _is_hook(self, name: str) -> bool:
        caller: pluggy.HookCaller | None = getattr(self._pm.hook, name, None)
        return caller is not None and caller.has_spec()

    def _describe(
        self, describe: Callable[..., object], name: str, package: str, version: str
    ) -> list[VendorDriver]:
        """Call the plugin's ``hami_vendor_drivers`` and check every spec it returns."""
        refuse = functools.partial(DriverError, name, origin_of(name, package, version), kind="plugin")
        config = self.device_config
        start = len(config.reads)
        try:
            wants_config = "device_config" in inspect.signature(describe).parameters
            specs = list(cast("Iterable[object]", describe(config) if wants_config else describe()))
        except DeviceConfigError:
            raise  # the operator's file is wrong, not the driver: a start-up error
        except (Exception, SystemExit) as error:
            raise refuse(f"hami_vendor_drivers failed: {_describe(error)}") from error
        if not specs:
            raise refuse("hami_vendor_drivers describes no driver")
        settings: tuple[tuple[str, str, object, bool], ...] = tuple(config.reads[start:])
        found = [driver_from_spec(spec, plugin=name, package=package, version=version) for spec in specs]
        drivers = [attrs.evolve(driver, settings=settings) for driver in found]
        if twice := sorted(n for n, count in Counter(d.name for d in drivers).items() if count > 1):
            raise refuse(f"describes driver {twice[0]!r} twice")
        return drivers

    def select(
        self, names: Sequence[str] | None = None, count_resources: Mapping[str, str] | None = None
    ) -> tuple[VendorDriver, ...]:
        """The drivers named (a driver or a plugin name), or every one for ``None``, with the count
        resource overrides applied; ``DriverSelectionError`` or ``DriverConflictError`` otherwise."""
        loaded = self.report.drivers
        chosen = list(loaded) if names is None else []
        for wanted in names or ():
            matches = [d for d in loaded if wanted in (d.name, d.plugin)]
            if not matches:
                installed = ", ".join(sorted({d.name for d in loaded})) or "none"
                failed = [f for f in self._failures if f.name == wanted]
                who = f"vendor driver {wanted!r}"
                what = f"{who} failed to load: {failed[0]}" if failed else f"unknown {who}"
                raise DriverSelectionError(f"{what} (installed: {installed})")
            chosen.extend(d for d in matches if d not in chosen)
        overrides = count_resources or {}
        for name in overrides:
            if not any(d.name == name for d in chosen):
                selected = ", ".join(d.name for d in chosen) or "none"
                raise DriverSelectionError(
                    f"count resource override for {name!r}: no such driver selected (selected: {selected})"
                )
        chosen = [
            attrs.evolve(d, vendor=attrs.evolve(d.vendor, count_resource=overrides[d.name]))
            if d.name in overrides
            else d
            for d in chosen
        ]
        check_conflicts(chosen)
        return tuple(chosen)

    def plugin_of(self, driver: VendorDriver) -> object:
        """The plugin object (usually a module) that provides ``driver``."""
        entry = self._plugins.get((driver.plugin, driver.origin))
        if entry is None:
            raise PluginError(f"driver {driver.name!r} ({driver.origin}) is not loaded in this manager")
        return entry[0]

    def _call(self, driver: VendorDriver, hook: str, **kwargs: object) -> object:
        """Call ``hook`` of the plugin providing ``driver`` only, with the arguments it names; ``None``
        when it has none."""
        plugin = self.plugin_of(driver)
        caller: pluggy.HookCaller = getattr(self._pm.hook, hook)
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin:
                return impl.function(*(kwargs[arg] for arg in impl.argnames))
        return None

    def discover_devices(self, driver: VendorDriver, node_name: str) -> list[DeviceInfo] | None:
        """The driver's devices on ``node_name`` (``None``: it cannot look); a result of the wrong type
        raises ``PluginError`` naming the driver."""
        devices = self._call(driver, "hami_discover_devices", driver_name=driver.name, node_name=node_name)
        if devices is None:
            return None
        if not isinstance(devices, list) or not all(isinstance(d, DeviceInfo) for d in devices):
            raise PluginError(
                f"driver {driver.name!r} ({driver.origin}): hami_discover_devices must return a list of "
                f"DeviceInfo or None, got {devices!r:.80}"
            )
        return devices

    def node_deleted(self, drivers: Iterable[VendorDriver], node_name: str) -> list[str]:
        """Tell every driver that ``node_name`` is gone. A driver that raises is logged and listed in the
        result (one message per failure); the others are still called."""
        problems: list[str] = []
        for driver in drivers:
            try:
                self._call(driver, "hami_node_deleted", driver_name=driver.name, node_name=node_name)
            except Exception as error:
                message = (
                    f"driver {driver.name!r} ({driver.origin}): hami_node_deleted failed: {_describe(error)}"
                )
                log.error("%s", message)
                problems.append(message)
        return problems


def check_conflicts(drivers: Sequence[VendorDriver]) -> None:
    """Raise ``DriverConflictError`` when two drivers claim one driver name, vendor key or annotation key."""
    claims: dict[tuple[str, str], VendorDriver] = {}
    problems: list[str] = []
    for driver in drivers:
        wanted = [("driver name", driver.name), ("vendor key", driver.vendor_key)]
        wanted += [("annotation key", key) for key in driver.annotation_keys]
        if (scores := driver.rules().pair_scores_annotation) is not None:
            wanted.append(("annotation key", scores))
        for what, value in wanted:
            holder = claims.setdefault((what, value), driver)
            if holder is not driver:
                problems.append(
                    f"{what} {value!r} is claimed by driver {holder.name!r} ({holder.origin}) "
                    f"and driver {driver.name!r} ({driver.origin})"
                )
    if problems:
        raise DriverConflictError(
            "; ".join(problems) + "; select one of them with --vendors or uninstall one"
        )


def load_drivers(
    vendors: Sequence[str] | None = None,
    count_resources: Mapping[str, str] | None = None,
    *,
    group: str = ENTRY_POINT_GROUP,
    device_config: DeviceConfig | None = None,
) -> tuple[DriverManager, tuple[VendorDriver, ...]]:
    """What the daemons call at start-up: load (warning of each failure and unknown device config key),
    select, and insist on at least one (``NoDriversError`` saying what is installed and what failed)."""
    manager = DriverManager(device_config=device_config)
    report = manager.load_entry_points(group)
    for failure in report.failures:
        log.warning("vendor driver skipped: %s", failure)
    if device_config is not None:
        for unknown in device_config.unknown():
            log.warning("%s: unknown key %s, ignored", device_config.source, unknown)
    drivers = manager.select(vendors, count_resources)
    if drivers:
        return manager, drivers
    if report.failures:
        failed = "; ".join(str(f) for f in report.failures)
        raise NoDriversError(f"no vendor driver could be loaded: {failed}")
    raise NoDriversError(
        "no vendor driver is installed: install one (for example hami-vendor-nvidia) "
        f"so that it registers in the {ENTRY_POINT_GROUP!r} entry-point group"
    )


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
