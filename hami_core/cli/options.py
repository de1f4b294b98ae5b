"""Options the commands share, in Kubernetes' idiom (durations, Go-style booleans, aliases, the listen
address, logging), their defaults read from the config classes that own them, never retyped."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import click
from click.core import ParameterSource

from hami_core.cli.logs import LOG_FORMATS, LOG_LEVELS
from hami_core.durations import MAX_SECONDS, format_duration, parse_duration

__all__ = [
    "DURATION",
    "LOG_LEVEL",
    "Duration",
    "aliases",
    "cannot_listen",
    "config_option",
    "default_of",
    "go_bool_flag",
    "klog_verbosity",
    "listen_address",
    "log_options",
    "parsed",
    "stop_on_signals",
]

F = TypeVar("F", bound=Callable[..., object])
T = TypeVar("T")
log = logging.getLogger(__name__)


if TYPE_CHECKING:  # generic in the click versions that carry type parameters; not subscriptable in 8.1
    _FloatType = click.ParamType[float]
else:
    _FloatType = click.ParamType


class Duration(_FloatType):
    """A daemon timing (``15s``, ``1m30s``, ``0.5``) in seconds, more than 0 and at most a day."""

    name = "duration"  # and so the metavar, DURATION

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, bool):
            self.fail(f"{value!r} is not a duration", param, ctx)
        if isinstance(value, int | float):
            result = float(value)
        else:
            try:
                result = parse_duration(str(value))
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        if not 0 < result <= MAX_SECONDS:
            shown = value if isinstance(value, str) else format_duration(result)
            self.fail(
                f"{shown!r} is not more than 0 and at most {format_duration(MAX_SECONDS)} "
                f"({MAX_SECONDS:g} seconds)",
                param,
                ctx,
            )
        return result


#: The type of every duration option of the daemons.
DURATION = Duration()


def default_of(cls: type, name: str) -> Any:
    """The default of attrs class ``cls``'s field ``name`` (every caller's is a value, not a factory)."""
    return attrs.fields_dict(cls)[name].default


def parsed(parse: Callable[[str], T]) -> Callable[[click.Context, click.Parameter, str | None], T | None]:
    """An option callback: ``parse(value)`` (``None`` stays), its ``ValueError`` a usage error."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> T | None:
        try:
            return None if value is None else parse(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


def go_bool_flag(flag: str, *, envvar: str, default: bool, help: str) -> Callable[[F], F]:
    """``--flag``, ``--flag=true|false`` and ``--no-flag``, as Kubernetes takes them; the last wins."""
    name = flag.lstrip("-").replace("-", "_")
    negation = f"--no-{flag.lstrip('-')}"
    given_no = f"hami.{name}.negated"

    def _negate(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if value:
            ctx.meta[given_no] = True
            if name in ctx.params:  # the positive form came earlier on the command line: this one wins
                ctx.params[name] = False

    def _resolve(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if ctx.get_parameter_source(name) is not ParameterSource.COMMANDLINE and ctx.meta.get(given_no):
            return False
        return value

    def decorate(command: F) -> F:
        command = click.option(
            negation, is_flag=True, expose_value=False, callback=_negate, help=f"Same as {flag}=false."
        )(command)
        command = click.option(
            flag,
            name,
            type=click.BOOL,
            is_flag=False,
            flag_value="true",
            default=str(default).lower(),
            show_default=True,
            envvar=envvar,
            callback=_resolve,
            metavar="[=true|false]",
            help=f"{help} Env: {envvar}.",
        )(command)
        return command

    return decorate


def aliases(names: Mapping[str, str], *, origin: str) -> Callable[[click.Command], click.Command]:
    """A second flag name per option (parameter name -> flag), said in its help; above the command."""

    def decorate(command: click.Command) -> click.Command:
        params = {p.name: p for p in command.params}
        for param_name, flag in names.items():
            param = params.get(param_name)
            if not isinstance(param, click.Option):
                raise TypeError(f"{command.name}: no option {param_name!r} to alias as {flag}")
            param.opts.append(flag)
            param.help = f"{param.help or ''} {flag} is an alias ({origin}).".strip()
        return command

    return decorate


def listen_address(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    """``HOST:PORT``, ``:PORT`` (all IPv4 addresses), ``[IPV6]:PORT``, or ``off`` (``None``)."""
    if value is None or value in ("", "off", "none"):
        return None
    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535 or "[" in host:
        raise click.BadParameter(f"{value!r} is not HOST:PORT, [IPV6]:PORT or 'off'")
    return host or "0.0.0.0", int(port)


def cannot_listen(host: str, port: int | None, exc: OSError) -> click.BadParameter:
    """The usage error of a ``--http-listen`` address the daemon cannot bind."""
    return click.BadParameter(
        f"cannot listen on {host}:{port}: {exc.strerror or exc}", param_hint="'--http-listen'"
    )


def stop_on_signals(stop: Callable[[], object]) -> None:
    """SIGTERM (the kubelet's) and SIGINT call ``stop``, once said in the log."""

    def _terminate(signum: int, frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop()

    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)


#: ``--log-level`` values, in any case (``DEBUG`` and ``debug`` alike).
LOG_LEVEL = click.Choice(LOG_LEVELS, case_sensitive=False)


def log_options(command: F) -> F:
    """``--log-format`` and ``--log-level``, each also from the environment."""
    command = click.option(
        "--log-level",
        envvar="HAMI_LOG_LEVEL",
        type=LOG_LEVEL,
        default="info",
        show_default=True,
        help="Any case (INFO, info). Env: HAMI_LOG_LEVEL.",
    )(command)
    command = click.option(
        "--log-format",
        envvar="HAMI_LOG_FORMAT",
        type=click.Choice(LOG_FORMATS, case_sensitive=False),
        default="text",
        show_default=True,
        help="text: one readable line per event; json: one JSON object per line, "
        "everything on stderr included. Env: HAMI_LOG_FORMAT.",
    )(command)
    return command


#: klog's ``-v`` level from which Kubernetes' logging conventions speak of debug output.
KLOG_DEBUG_VERBOSITY = 4


def _klog_level(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    text = value[1:] if value.startswith("=") else value  # click reads klog's `-v=4` as `-v` `=4`
    if not (text.isascii() and text.isdigit()):
        raise click.BadParameter(f"{text!r} is not a klog verbosity (a whole number >= 0, e.g. 4)")
    return "debug" if int(text) >= KLOG_DEBUG_VERBOSITY else "info"


def klog_verbosity(command: F) -> F:
    """klog's ``-v N`` / ``--v=N`` (HAMi's chart: ``-v=4``), passed on as ``verbosity``."""
    return click.option(
        "-v",
        "--v",
        "verbosity",
        metavar="N",
        callback=_klog_level,
        help=f"klog's verbosity, for HAMi's and Kubernetes' arguments (-v=4): {KLOG_DEBUG_VERBOSITY} or "
        "more is --log-level debug, less is info; wins over --log-level.",
    )(command)


def config_option(
    owner: type, field: str, help: str, *, envvar: str | None = None, type: click.ParamType[Any] = DURATION
) -> Callable[[F], F]:
    """``--FIELD`` (env ``HAMI_FIELD`` or ``envvar``) with ``owner``'s default; a duration unless told."""
    envvar = envvar or f"HAMI_{field.upper()}"
    default = default_of(owner, field)
    return click.option(
        f"--{field.replace('_', '-')}",
        envvar=envvar,
        type=type,
        default=format_duration(default) if type is DURATION else default,
        show_default=True,
        help=f"{help} Env: {envvar}.",
    )
