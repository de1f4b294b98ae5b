"""``hami vendors``: the installed vendor drivers, and the driver selection options the daemons share."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from hami_core.plugins import (
    DriverManager,
    DriverSelectionError,
    LoadReport,
    PluginError,
    VendorDriver,
    load_drivers,
    parse_count_resources,
    parse_vendor_names,
)

__all__ = ["JSON_KEYS", "driver_options", "drivers_from_options", "vendors", "vendors_json"]

F = TypeVar("F", bound=Callable[..., Any])

#: The keys of each object in ``hami vendors --json``, in order.
JSON_KEYS = (
    "name",
    "vendor_key",
    "register_annotation",
    "handshake_annotation",
    "encoding",
    "count_resource",
    "liveness",
    "writes_reported",
    "package",
    "version",
)


def driver_options(command: F) -> F:
    """Add ``--vendors`` (env ``HAMI_VENDORS``) and ``--count-resource`` (env ``HAMI_COUNT_RESOURCES``)."""
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


def _selection(
    vendors: str | None, count_resources: Sequence[str]
) -> tuple[list[str] | None, dict[str, str]]:
    try:
        return parse_vendor_names(vendors), parse_count_resources(count_resources)
    except PluginError as error:
        raise _as_click_error(error) from None


def drivers_from_options(
    vendors: str | None, count_resources: Sequence[str]
) -> tuple[DriverManager, tuple[VendorDriver, ...]]:
    """For the daemons: load and select drivers from the options of ``driver_options``.

    A bad selection is a usage error (exit 2); a conflict or no driver at all is a ``ClickException``
    (exit 1) with a one-line message.
    """
    names, overrides = _selection(vendors, count_resources)
    try:
        return load_drivers(names, overrides)
    except PluginError as error:
        raise _as_click_error(error) from None


def _as_click_error(error: PluginError) -> click.ClickException:
    """A bad selection is a usage error (exit 2); anything else (conflict, no driver) exits 1."""
    if isinstance(error, DriverSelectionError):
        return click.UsageError(str(error))
    return click.ClickException(str(error))


def vendors_json(drivers: Sequence[VendorDriver]) -> list[dict[str, object]]:
    """The objects of ``hami vendors --json``, one per driver, with exactly ``JSON_KEYS``."""
    return [
        {
            "name": d.name,
            "vendor_key": d.vendor_key,
            "register_annotation": d.register_annotation,
            "handshake_annotation": d.handshake_annotation,
            "encoding": d.encoding,
            "count_resource": d.count_resource,
            "liveness": d.liveness.name,
            "writes_reported": d.writes_reported,
            "package": d.package,
            "version": d.version,
        }
        for d in drivers
    ]


def _table(drivers: Sequence[VendorDriver]) -> str:
    header = (
        "NAME",
        "VENDOR KEY",
        "REGISTER",
        "HANDSHAKE",
        "ENCODING",
        "COUNT RESOURCE",
        "LIVENESS",
        "REPORTED_",
        "PACKAGE",
    )
    rows = [header] + [
        (
            d.name,
            d.vendor_key,
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
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _report_failures(report: LoadReport) -> None:
    for failure in report.failures:
        click.echo(f"error: {failure}", err=True)


@click.command("vendors")
@driver_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of objects instead of a table.")
def vendors(vendors: str | None, count_resources: tuple[str, ...], as_json: bool) -> None:
    """List the installed vendor drivers (or the selection, with --vendors / HAMI_VENDORS).

    Drivers that failed to load are printed on stderr, one line each: "error: NAME (PACKAGE VERSION):
    MESSAGE"; stdout stays a clean table or JSON array. Exit status: 0 when the listing worked (even if
    some driver failed to load), 1 when the selected drivers conflict, 2 for a bad selection.
    """
    names, overrides = _selection(vendors, count_resources)
    manager = DriverManager()
    report = manager.load_entry_points()
    try:
        selected = manager.select(names, overrides)
    except PluginError as error:
        _report_failures(report)
        raise _as_click_error(error) from None
    if as_json:
        click.echo(json.dumps(vendors_json(selected), indent=2))
    elif selected:
        click.echo(_table(selected))
    else:
        click.echo("no vendor driver installed", err=True)
    _report_failures(report)
