"""``hami vendors``: the installed vendor drivers; the driver selection options the daemons share, and the
text table the listing commands print."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from hami_core.cli.cluster import ConfigError
from hami_core.plugins import (
    DeviceConfig,
    DeviceConfigError,
    DriverManager,
    DriverSelectionError,
    PluginError,
    VendorDriver,
    load_drivers,
    parse_count_resources,
    parse_vendor_names,
)

__all__ = ["JSON_KEYS", "driver_options", "drivers_from_options", "table", "vendors", "vendors_json"]

F = TypeVar("F", bound=Callable[..., Any])

#: The keys of each object in ``hami vendors --json``, in order.
JSON_KEYS = (
    *("name", "vendor_key", "register_annotation", "handshake_annotation", "encoding", "count_resource"),
    *("liveness", "writes_reported", "sources", "settings", "package", "version"),
)


def driver_options(command: F) -> F:
    """``--vendors``, ``--count-resource`` and ``--device-config``, each also from the environment."""
    command = click.option(
        "--device-config",
        "device_config",
        envvar="HAMI_DEVICE_CONFIG",
        metavar="FILE",
        help="HAMi's device-config.yaml (the ConfigMap of HAMi's chart): the drivers' settings, such as "
        "resource names, are read from it; unset: each driver's defaults. Env: HAMI_DEVICE_CONFIG.",
    )(command)
    command = click.option(
        "--count-resource",
        "count_resources",
        multiple=True,
        envvar="HAMI_COUNT_RESOURCES",
        metavar="DRIVER=RESOURCE",
        help="Override a driver's count resource, e.g. nvidia=nvidia.com/gpu-shared; repeat or separate "
        "with commas. Env: HAMI_COUNT_RESOURCES.",
    )(command)
    command = click.option(
        "--vendors",
        "vendors",
        envvar="HAMI_VENDORS",
        metavar="NAMES",
        help="Comma-separated drivers to run (a driver name, or a plugin name for all its drivers); "
        "default every installed one. Env: HAMI_VENDORS.",
    )(command)
    return command


def drivers_from_options(
    vendors: str | None, count_resources: Sequence[str], device_config: str | None = None
) -> tuple[DriverManager, tuple[VendorDriver, ...]]:
    """Load and select drivers from the options of ``driver_options`` (errors: ``_as_click_error``)."""
    try:
        names, overrides = parse_vendor_names(vendors), parse_count_resources(count_resources)
        config = DeviceConfig.load(device_config) if device_config else None
        return load_drivers(names, overrides, device_config=config)
    except PluginError as error:
        raise _as_click_error(error) from None


def _as_click_error(error: PluginError) -> click.ClickException:
    """A bad selection or device config exits 2, anything else (conflict, no driver) 1; one line each."""
    if isinstance(error, DriverSelectionError):
        return click.UsageError(str(error))
    if isinstance(error, DeviceConfigError):
        return ConfigError(str(error))  # a file, not the usage: no usage text
    return click.ClickException(str(error))


def vendors_json(drivers: Sequence[VendorDriver]) -> list[dict[str, object]]:
    """The objects of ``hami vendors --json``, one per driver, with exactly ``JSON_KEYS``."""
    objects: list[dict[str, object]] = []
    for d in drivers:
        settings = {
            f"{section}.{key}": {"value": value, "from": "device config" if from_file else "default"}
            for section, key, value, from_file in d.settings
        }
        one = {key: getattr(d, key) for key in JSON_KEYS}
        objects.append(one | {"liveness": d.liveness.name, "sources": list(d.sources), "settings": settings})
    return objects


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines of left-aligned columns two spaces apart (the first row is the header)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


_HEADER = "NAME|VENDOR KEY|SOURCE|REGISTER|HANDSHAKE|ENCODING|COUNT RESOURCE|LIVENESS|REPORTED_|PACKAGE"


def _table(drivers: Sequence[VendorDriver]) -> str:
    rows = [tuple(_HEADER.split("|"))] + [
        (
            d.name,
            d.vendor_key,
            "+".join(d.sources),
            d.register_annotation or "-",
            d.handshake_annotation or "-",
            d.encoding or "-",
            d.count_resource,
            d.liveness.name,
            "yes" if d.writes_reported else "no",
            f"{d.package} {d.version}".strip() or "-",
        )
        for d in drivers
    ]
    lines = table(rows)
    for d in drivers:
        if d.settings:
            lines += ["", f"{d.name} settings (device config section: value):"]
            lines += [
                f"  {section}.{key} = {value!r}{'' if from_file else '  (default)'}"
                for section, key, value, from_file in d.settings
            ]
    return "\n".join(lines)


@click.command("vendors")
@driver_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of objects instead of a table.")
def vendors(
    vendors: str | None, count_resources: tuple[str, ...], device_config: str | None, as_json: bool
) -> None:
    """List the installed vendor drivers (or the selection, with --vendors / HAMI_VENDORS).

    Drivers that failed to load are printed on stderr, one line each: "error: NAME (PACKAGE VERSION):
    MESSAGE"; stdout stays a clean table or JSON array. Exit status: 0 when the listing worked (even if
    some driver failed to load), 1 when the selected drivers conflict, 2 for a bad selection.
    """
    try:
        names, overrides = parse_vendor_names(vendors), parse_count_resources(count_resources)
        config = DeviceConfig.load(device_config) if device_config else DeviceConfig()
        manager = DriverManager(device_config=config)
        report = manager.load_entry_points()
    except PluginError as error:
        raise _as_click_error(error) from None
    for unknown in config.unknown():
        click.echo(f"warning: {config.source}: unknown key {unknown}, ignored", err=True)
    try:
        selected = manager.select(names, overrides)
        if as_json:
            click.echo(json.dumps(vendors_json(selected), indent=2))
        elif selected:
            click.echo(_table(selected))
        else:
            click.echo("no vendor driver installed", err=True)
    except PluginError as error:
        raise _as_click_error(error) from None
    finally:  # after the listing, or before the selection's error
        for failure in report.failures:
            click.echo(f"error: {failure}", err=True)
