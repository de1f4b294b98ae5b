"""The ``hami`` command. Each sub-command group lives in its own module and is added here."""

from __future__ import annotations

import sys

import click

from hami_core.cli.logs import report_error

__all__ = ["main", "run"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "HAMI"})
@click.version_option(package_name="hami-core", prog_name="hami")
def main() -> None:
    """HAMi's device registration protocol: codecs, vendor drivers, scheduler and reporter."""


# Sub-commands: one line each, in the order they appear in --help.
from hami_core.cli.vendors import vendors  # noqa: E402

main.add_command(vendors)
from hami_core.cli.codec import codec  # noqa: E402

main.add_command(codec)
from hami_core.cli.scheduler import scheduler  # noqa: E402

main.add_command(scheduler)
from hami_core.cli.reporter import reporter  # noqa: E402

main.add_command(reporter)
from hami_core.cli.simulate import simulate  # noqa: E402

main.add_command(simulate)
from hami_core.cli.cleanup import cleanup_command  # noqa: E402

main.add_command(cleanup_command)
from hami_core.cli.doctor import doctor  # noqa: E402

main.add_command(doctor)


def run() -> None:
    """The ``hami`` entry point: ``main`` with every usage error on one line (exit 2)."""
    try:
        code = main.main(standalone_mode=False)
    except click.UsageError as exc:
        where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
        report_error(f"{where}{exc.format_message()}")
        sys.exit(2)
    except click.ClickException as exc:
        report_error(exc.format_message())
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    # Without standalone mode, click returns the code of ``ctx.exit(code)`` instead of exiting.
    sys.exit(code if isinstance(code, int) else 0)
