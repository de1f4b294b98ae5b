"""Microseconds per register annotation value, this project's codecs beside HAMi v2.10.0's own Go functions.

Run from the repository root (after ``bash scripts/build-oracle.sh``)::

    .venv/bin/python bench/codec.py            # prints a Markdown table
    .venv/bin/python bench/codec.py --quick    # three runs per cell and side
    .venv/bin/python bench/codec.py --smoke    # a tiny run, for the test suite

Each row is one operation on a value of 1, 8 or 64 typical NVIDIA devices. The Python column times this
project's codecs in process (``timeit``); the HAMi column asks the Go oracle (tests/oracle, built from
HAMi's source) to time ``DecodeNodeDevices``, ``EncodeNodeDevices``, ``UnMarshalNodeDevices`` or
``MarshalNodeDevices`` inside the Go process, so neither the pipe nor process start is counted. Both
sides time runs of at least ``--min-seconds`` on the same clock: by default each process's CPU time
(user and system; for Go every thread, its garbage collector included), which other work on a shared
machine disturbs far less than the wall clock (``--clock wall`` for that). For each cell the two sides
take turns, ``--repeat`` short runs each, and each keeps its best: the ratio compares like with like in
one run, and many short turns give both sides the machine's quiet moments.
``decode_any`` (beyond HAMi: it reads either encoding) is set against HAMi's decoder for the value's
encoding.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
import timeit
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the oracle's client lives with the test harness

from harness.oracle import Oracle, oracle_binary  # noqa: E402

from hami_core.protocol.codecs import decode_any  # noqa: E402
from hami_core.protocol.gojson import decode_json, encode_json  # noqa: E402
from hami_core.protocol.legacy import decode_legacy, encode_legacy  # noqa: E402
from hami_core.protocol.model import DeviceInfo  # noqa: E402

DEVICE_COUNTS: tuple[int, ...] = (1, 8, 64)
#: (operation, which encoding's value it works on)
OPERATIONS = (
    ("decode", "legacy"),
    ("encode", "legacy"),
    ("decode", "json"),
    ("encode", "json"),
    ("decode_any", "legacy"),
    ("decode_any", "json"),
)
#: The target for Python/HAMi, for every operation and value size (issue 19).
TARGET = 5.0


def sample_devices(count: int) -> list[DeviceInfo]:
    """Devices as a typical NVIDIA node registers them (long UUIDs, a model name, hami-core)."""
    return [
        DeviceInfo(
            id=f"GPU-{i:08x}-5c87-89ac-b1a6-7b53aa24b0ec",
            index=i,
            count=10,
            devmem=32768,
            devcore=100,
            type="NVIDIA-Tesla V100-PCIE-32GB",
            numa=i // 4,
            mode="hami-core",
            health=True,
        )
        for i in range(count)
    ]


class Implementation(Protocol):
    """One column of the table."""

    name: str

    def seconds_per_call(
        self, operation: str, encoding: str, devices: Sequence[DeviceInfo], min_seconds: float
    ) -> float:
        """The time of one call, from one run of at least ``min_seconds``."""
        ...


class PythonCodecs:
    """This project's codecs, measured in process with ``timeit``."""

    name = "hami-core (Python)"

    def __init__(self, clock: str) -> None:
        self.timer = time.process_time if clock == "cpu" else time.perf_counter

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
        self, operation: str, encoding: str, devices: Sequence[DeviceInfo], min_seconds: float
    ) -> float:
        timer = timeit.Timer(self._call(operation, encoding, devices), timer=self.timer)
        number = 1
        while (took := timer.timeit(number)) < min_seconds:
            number *= 2
        return took / number


class HamiGo:
    """HAMi v2.10.0's functions, timed inside the Go oracle process."""

    name = "HAMi v2.10.0 (Go)"

    def __init__(self, oracle: Oracle, clock: str) -> None:
        self.oracle = oracle
        self.clock = clock

    def seconds_per_call(
        self, operation: str, encoding: str, devices: Sequence[DeviceInfo], min_seconds: float
    ) -> float:
        function = f"{'encode' if operation == 'encode' else 'decode'}_{encoding}"
        if operation == "encode":
            value, payload = None, devices
        else:
            value, payload = (encode_json if encoding == "json" else encode_legacy)(devices), None
        ns = self.oracle.bench(
            function, value=value, devices=payload, min_seconds=min_seconds, repeat=1, clock=self.clock
        )
        return ns[0] / 1e9


def table(
    python: Implementation, hami: Implementation, counts: Sequence[int], repeat: int, min_seconds: float
) -> tuple[str, dict[tuple[str, str, int], tuple[float, float]]]:
    """The Markdown table (one row per operation and device count) and, unrounded, the seconds per call
    it shows for each row: (ours, HAMi's); the ratio column is their quotient."""
    rows = [
        [
            "operation",
            "encoding",
            "devices",
            f"{python.name} µs",
            f"{hami.name} µs",
            "Python / HAMi",
            "target",
        ],
        ["---"] * 3 + ["---:"] * 4,
    ]
    figures: dict[tuple[str, str, int], tuple[float, float]] = {}
    for operation, encoding in OPERATIONS:
        for count in counts:
            devices = sample_devices(count)
            ours = theirs = float("inf")
            for _ in range(repeat):  # taking turns, so a busy spell on the machine hits both sides
                ours = min(ours, python.seconds_per_call(operation, encoding, devices, min_seconds))
                theirs = min(theirs, hami.seconds_per_call(operation, encoding, devices, min_seconds))
            figures[(operation, encoding, count)] = (ours, theirs)
            ratio = ours / theirs
            mark = f"<= {TARGET:g} ({'met' if ratio <= TARGET else 'MISSED'})"
            timings = [f"{ours * 1e6:.2f}", f"{theirs * 1e6:.2f}", f"{ratio:.2f}"]
            rows.append([operation, encoding, str(count), *timings, mark])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows), figures


def machine() -> str:
    """One line naming the machine and the moment."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {cpu}, {os.cpu_count()} CPUs, load average {load}; "
        f"Python {platform.python_version()} on {platform.platform(terse=True)}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="three runs per cell and side")
    parser.add_argument("--smoke", action="store_true", help="a tiny run (1 device, 1 ms runs) for tests")
    parser.add_argument("--repeat", type=int, default=11, help="runs per cell and side (each keeps its best)")
    parser.add_argument("--min-seconds", type=float, default=0.05, help="each run lasts at least this long")
    parser.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu", help="each process's CPU time, or the wall clock"
    )
    args = parser.parse_args(argv)
    if args.min_seconds <= 0:
        parser.error(f"--min-seconds must be positive, got {args.min_seconds}")
    if args.repeat <= 0:
        parser.error(f"--repeat must be positive, got {args.repeat}")
    repeat, min_seconds, counts = (3 if args.quick else args.repeat), args.min_seconds, DEVICE_COUNTS
    if args.smoke:
        repeat, min_seconds, counts = 1, 0.001, (1,)
    try:
        binary = oracle_binary()
    except FileNotFoundError as exc:
        print(f"error: the HAMi column needs the Go oracle: {exc}", file=sys.stderr)
        return 1
    oracle = Oracle(binary)
    try:
        print(f"Machine: {machine()}")
        print(f"Clock: {args.clock} time; each side's best of {repeat} run(s) of at least {min_seconds} s")
        print()
        text, _ = table(PythonCodecs(args.clock), HamiGo(oracle, args.clock), counts, repeat, min_seconds)
        print(text)
        print()
        print(f"Finished: {machine()}")
    finally:
        oracle.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
