"""The ``hami`` command. Each sub-command group lives in its own module and is added here."""

from __future__ import annotations

import click

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "HAMI"})
@click.version_option(package_name="hami-core", prog_name="hami")
def main() -> None:
    """HAMi's device registration protocol: codecs, vendor drivers, scheduler and reporter."""


# Sub-commands: one line each, in the order they appear in --help.
from hami_core.cli.vendors import vendors  # noqa: E402

main.add_command(vendors)
