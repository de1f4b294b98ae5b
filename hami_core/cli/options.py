"""Options both daemons share: durations, and the logging flags."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from hami_core.cli.logs import LOG_FORMATS, LOG_LEVELS
from hami_core.scheduler.config import MAX_SECONDS

__all__ = ["SECONDS", "log_options"]

#: The type of the daemons' duration options: seconds, more than zero and at most a day.
SECONDS = click.FloatRange(min=0, min_open=True, max=MAX_SECONDS)

F = TypeVar("F", bound=Callable[..., object])


def log_options(command: F) -> F:
    """``--log-format`` and ``--log-level``, each also from the environment."""
    command = click.option("--log-level", envvar="HAMI_LOG_LEVEL", type=click.Choice(LOG_LEVELS),
                           default="info", show_default=True, help="Env: HAMI_LOG_LEVEL.")(command)
    command = click.option("--log-format", envvar="HAMI_LOG_FORMAT", type=click.Choice(LOG_FORMATS),
                           default="text", show_default=True, help="Env: HAMI_LOG_FORMAT.")(command)
    return command
