"""``hami codec``: decode and encode register annotation values from the command line; the contract
scripts rely on is in docs/operations.md ("Decoding and encoding values from scripts")."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import click

from hami_core.protocol.codecs import decode_any
from hami_core.protocol.convert import DEVICE_KEYS, device_from_dict, device_to_dict
from hami_core.protocol.errors import DecodeError, EncodeError
from hami_core.protocol.gojson import decode_json, encode_json, go_bytes
from hami_core.protocol.legacy import decode_legacy, encode_legacy
from hami_core.protocol.model import DeviceInfo

__all__ = ["DECODERS", "ENCODERS", "OUTPUT_KEYS", "codec"]

DECODERS: dict[str, Callable[[str], list[DeviceInfo]]] = {
    "auto": decode_any,
    "json": decode_json,
    "legacy": decode_legacy,
}
ENCODERS: dict[str, Callable[[Sequence[DeviceInfo]], str]] = {"json": encode_json, "legacy": encode_legacy}
#: The keys of each device object ``decode`` prints, in this order.
OUTPUT_KEYS = tuple(key for key in DEVICE_KEYS if key != "devicevendor")  # never trusted from the wire


class _InputError(ValueError):
    """Input that is not what the command reads (not JSON, not a string, not an array ...)."""


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).splitlines()) or type(error).__name__


def _bytes_to_text(raw: bytes) -> str:
    """Bytes as a str that keeps every invalid UTF-8 byte (as U+DC80..U+DCFF)."""
    return raw.decode("utf-8", "surrogateescape")


def _refuse_constant(name: str) -> Any:
    raise _InputError(f"{name} is not JSON")


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise _InputError(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise _InputError(f"{what} is nested too deeply") from None


def _device_objects(devices: list[DeviceInfo]) -> list[dict[str, Any]]:
    return [{key: obj[key] for key in OUTPUT_KEYS} for obj in map(device_to_dict, devices)]


def _dump(value: Any) -> str:
    """Compact ASCII JSON, also of a custominfo nested as deep as Go allows (10000 levels)."""
    try:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except RecursionError:
        return _dump_deep(value)


class _Raw(str):
    """Text ``_dump_deep`` writes as it is (brackets, commas, keys), told apart from string values."""

    __slots__ = ()


def _dump_deep(value: Any) -> str:
    """``_dump``'s ``json.dumps`` without recursion, for the JSON types a decoded device holds."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Raw:
            out.append(item)
        elif isinstance(item, dict):
            out.append("{")
            stack.append(_Raw("}"))
            for position, (key, member) in reversed(list(enumerate(item.items()))):
                stack += [member, _Raw(("," if position else "") + json.dumps(key) + ":")]
        elif isinstance(item, list | tuple):
            out.append("[")
            stack.append(_Raw("]"))
            for position, member in reversed(list(enumerate(item))):
                stack += [member, _Raw(",")] if position else [member]
        else:
            out.append(json.dumps(item))
    return "".join(out)


def _parse_devices(text: str, what: str) -> list[DeviceInfo]:
    objs = _json(text, what)
    if not isinstance(objs, list):
        raise _InputError(f"{what} must be a JSON array of device objects, got {type(objs).__name__}")
    devices = []
    for position, obj in enumerate(objs):
        try:
            devices.append(device_from_dict(obj))
        except ValueError as exc:
            raise _InputError(f"device {position}: {exc}") from None
    return devices


def _fail(error: BaseException) -> NoReturn:
    click.echo(f"error: {_one_line(error)}", err=True)
    sys.exit(1)  # not click's Exit: its code is lost when click runs outside standalone mode


def _stdin() -> bytes:
    """All of standard input, byte for byte; a closed or unreadable one is a one-line error (exit 1)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        _fail(_InputError("standard input is closed"))
    try:
        data: bytes = stream.read()
    except OSError as exc:
        _fail(_InputError(f"cannot read standard input: {exc.strerror or exc}"))
    return data


def _batch(raw: bytes, each: Callable[[str, str], dict[str, Any]]) -> None:
    """JSON Lines: ``each(line, "line N")`` of every input line, or its error, one result per line."""
    results = []
    for number, line in enumerate(raw.removesuffix(b"\n").split(b"\n") if raw else [], start=1):
        try:
            results.append(_dump(each(_bytes_to_text(line.removesuffix(b"\r")), f"line {number}")))
        except (DecodeError, EncodeError, _InputError) as exc:
            results.append(_dump({"error": _one_line(exc)}))
    click.echo("".join(result + "\n" for result in results), nl=False)


@click.group("codec")
def codec() -> None:
    """Decode and encode register annotation values (legacy colon or Go-compatible JSON)."""


@codec.command("decode")
@click.option(
    "--format",
    "encoding",
    type=click.Choice(sorted(DECODERS)),
    default="auto",
    show_default=True,
    help="The value's encoding; auto reads JSON when it starts with '[' or is null, else legacy.",
)
@click.option(
    "--batch", is_flag=True, help="JSON Lines: one JSON string per input line, one result per line."
)
def decode(encoding: str, batch: bool) -> None:
    """Read an annotation value from stdin and print its devices as a JSON array."""
    decoder = DECODERS[encoding]
    raw = _stdin()
    if not batch:
        try:
            output = _dump(_device_objects(decoder(_bytes_to_text(raw.removesuffix(b"\n")))))
        except (DecodeError, _InputError) as exc:
            _fail(exc)
        click.echo(output)
        return

    def each(line: str, what: str) -> dict[str, Any]:
        value = _json(line, what)
        if not isinstance(value, str):
            raise _InputError(f"{what} must be a JSON string, got {type(value).__name__}")
        return {"devices": _device_objects(decoder(value))}

    _batch(raw, each)


@codec.command("encode")
@click.option(
    "--format",
    "encoding",
    type=click.Choice(sorted(ENCODERS)),
    default="json",
    show_default=True,
    help="The encoding to write.",
)
@click.option("--batch", is_flag=True, help="JSON Lines: one JSON array per input line, one result per line.")
def encode(encoding: str, batch: bool) -> None:
    """Read a JSON array of device objects from stdin and print the annotation value exactly."""
    encoder = ENCODERS[encoding]
    raw = _stdin()
    if not batch:
        try:
            value = encoder(_parse_devices(_bytes_to_text(raw), "input"))
        except (EncodeError, _InputError) as exc:
            _fail(exc)
        sys.stdout.buffer.write(go_bytes(value))
        sys.stdout.buffer.flush()
        return
    _batch(raw, lambda line, what: {"value": encoder(_parse_devices(line, what))})
