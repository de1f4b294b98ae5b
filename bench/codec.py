"""Microseconds per register annotation value: decode and encode, both encodings, 1/8/64 devices.

Run from the repository root::

    .venv/bin/python bench/codec.py            # prints a Markdown table
    .venv/bin/python bench/codec.py --quick    # fewer repeats, for a smoke run

Each implementation is one column. An implementation is a name plus one callable per operation; to add
another (for instance HAMi's Go code behind a subprocess), write a class with the same shape as
``PythonCodecs`` and add it to ``IMPLEMENTATIONS``. It only has to say how long one call takes.
"""

from __future__ import annotations

import argparse
import platform
import sys
import timeit
from collections.abc import Callable, Sequence
from typing import Protocol

from hami_core.protocol.codecs import decode_any
from hami_core.protocol.gojson import decode_json, encode_json
from hami_core.protocol.legacy import decode_legacy, encode_legacy
from hami_core.protocol.model import DeviceInfo

DEVICE_COUNTS = (1, 8, 64)
#: (operation, which encoding's value it works on)
OPERATIONS = (
    ("decode", "legacy"),
    ("encode", "legacy"),
    ("decode", "json"),
    ("encode", "json"),
    ("decode_any", "legacy"),
    ("decode_any", "json"),
)


def sample_devices(count: int) -> list[DeviceInfo]:
    """Devices as a typical NVIDIA node registers them (long UUIDs, a model name, hami-core)."""
    return [
        DeviceInfo(
            id=f"GPU-{i:08x}-5c87-89ac-b1a6-7b53aa24b0ec", index=i, count=10, devmem=32768, devcore=100,
            type="NVIDIA-Tesla V100-PCIE-32GB", numa=i // 4, mode="hami-core", health=True,
        )
        for i in range(count)
    ]


class Implementation(Protocol):
    """One column of the table."""

    name: str

    def seconds_per_call(
        self, operation: str, encoding: str, devices: Sequence[DeviceInfo], repeat: int
    ) -> float:
        """The best time of one call over ``repeat`` measurements."""
        ...


class PythonCodecs:
    """This project's codecs, measured in process with ``timeit``."""

    name = "hami-core (Python)"

    def _call(self, operation: str, encoding: str, devices: Sequence[DeviceInfo]) -> Callable[[], object]:
        encode = encode_json if encoding == "json" else encode_legacy
        value = encode(devices)
        if operation == "encode":
            return lambda: encode(devices)
        if operation == "decode_any":
            return lambda: decode_any(value)
        decode = decode_json if encoding == "json" else decode_legacy
        return lambda: decode(value)

    def seconds_per_call(
        self, operation: str, encoding: str, devices: Sequence[DeviceInfo], repeat: int
    ) -> float:
        call = self._call(operation, encoding, devices)
        timer = timeit.Timer(call)
        number, _ = timer.autorange()  # enough calls for about 0.2 s per measurement
        return min(timer.repeat(repeat=repeat, number=number)) / number


IMPLEMENTATIONS: list[Implementation] = [PythonCodecs()]


def table(implementations: Sequence[Implementation], repeat: int) -> str:
    """The Markdown table: one row per operation and device count, one column per implementation."""
    header = ["operation", "encoding", "devices", *(f"{impl.name} µs" for impl in implementations)]
    rows = [header, ["---"] * 3 + ["---:"] * len(implementations)]
    for operation, encoding in OPERATIONS:
        for count in DEVICE_COUNTS:
            devices = sample_devices(count)
            cells = [operation, encoding, str(count)]
            for impl in implementations:
                micros = impl.seconds_per_call(operation, encoding, devices, repeat) * 1e6
                cells.append(f"{micros:.1f}")
            rows.append(cells)
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="one measurement per cell instead of five")
    args = parser.parse_args(argv)
    print(f"Python {platform.python_version()} on {platform.machine()} ({platform.platform(terse=True)})")
    print()
    print(table(IMPLEMENTATIONS, repeat=1 if args.quick else 5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
