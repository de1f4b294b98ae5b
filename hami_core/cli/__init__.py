"""The ``hami`` command. Each sub-command group lives in its own module and is added here."""

from __future__ import annotations

import errno
import importlib
import os
import sys

import click
from click.core import ParameterSource

from hami_core.cli.logs import report_error

__all__ = ["main", "run"]


#: Sub-commands in --help's order: name -> (module, attribute), each imported only when it runs.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "vendors": ("hami_core.cli.vendors", "vendors"),
    "codec": ("hami_core.cli.codec", "codec"),
    "scheduler": ("hami_core.cli.scheduler", "scheduler"),
    "reporter": ("hami_core.cli.reporter", "reporter"),
    "simulate": ("hami_core.cli.simulate", "simulate"),
    "cleanup": ("hami_core.cli.cleanup", "cleanup_command"),
    "doctor": ("hami_core.cli.doctor", "doctor"),
}


class _LazyGroup(click.Group):
    """A group whose sub-commands are imported on first use (click's documented lazy-loading pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*SUBCOMMANDS, *super().list_commands(ctx)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = SUBCOMMANDS.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        command: click.Command = getattr(importlib.import_module(where[0]), where[1])
        return command


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "HAMI"},
)
@click.version_option(package_name="hami-core", prog_name="hami")
def main() -> None:
    """HAMi's device registration protocol: codecs, vendor drivers, scheduler and reporter."""


def _from_environment(exc: click.UsageError) -> str:
    """``NAME=value: `` when the bad value came from an environment variable, else ``""``."""
    ctx, param = exc.ctx, getattr(exc, "param", None)
    if ctx is None or not isinstance(param, click.Option) or param.name is None:
        return ""
    if ctx.get_parameter_source(param.name) is not ParameterSource.ENVIRONMENT:
        return ""
    names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
    if not names and ctx.auto_envvar_prefix:
        names = [f"{ctx.auto_envvar_prefix}_{param.name.upper()}"]
    for name in names:
        if name in os.environ:
            value = os.environ[name]
            return f"{name}={value if len(value) <= 80 else value[:77] + '...'}: "
    return ""


def run() -> None:
    """The ``hami`` entry point: ``main`` with every usage error on one line (exit 2)."""
    try:
        code = main.main(standalone_mode=False)
    except click.UsageError as exc:
        where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
        report_error(f"{where}{_from_environment(exc)}{exc.format_message()}")
        sys.exit(2)
    except click.ClickException as exc:
        report_error(exc.format_message())
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except OSError as exc:  # the output cannot be written (a full disk, a device error)
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise
        report_error(f"cannot write the output: {exc.strerror}")
        sys.exit(1)
    # Without standalone mode, click returns the code of ``ctx.exit(code)`` instead of exiting.
    sys.exit(code if isinstance(code, int) else 0)
