"""Time is an input: nothing in hami_core reads or waits on the machine's time but ``hami_core/clock.py``.

Every other module takes a ``Clock`` or, at an I/O edge that runs on real time (a socket's idle deadline,
a wait for threads to settle), uses ``clock.SYSTEM``. So a test that hands a ``FakeClock`` to a daemon
controls all of its time. Measurements are not waits: ``time.perf_counter`` (request latency metrics)
is allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hami_core

PACKAGE = Path(hami_core.__file__).parent
CLOCK = PACKAGE / "clock.py"

#: The calls that read or wait on the machine's time, by module (``datetime`` is the class as well).
FORBIDDEN = {
    "time": {"time", "time_ns", "monotonic", "monotonic_ns", "sleep"},
    "datetime": {"now", "utcnow", "today"},
    "date": {"today"},
}


def _uses(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = node.value
            name = (
                owner.id
                if isinstance(owner, ast.Name)
                else owner.attr
                if isinstance(owner, ast.Attribute)
                else ""
            )
            if node.attr in FORBIDDEN.get(name, ()):
                found.append((node.lineno, f"{name}.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module in FORBIDDEN:
            found += [
                (node.lineno, f"from {node.module} import {alias.name}")
                for alias in node.names
                if alias.name in FORBIDDEN[node.module]
            ]
    return found


def test_only_the_clock_module_reads_the_machines_time() -> None:
    modules = sorted(path for path in PACKAGE.rglob("*.py") if path != CLOCK)
    assert len(modules) > 50, f"found only {len(modules)} modules under {PACKAGE}"
    offences = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path in modules
        for line, what in _uses(ast.parse(path.read_text(), str(path)))
    ]
    assert offences == [], "take a Clock (or clock.SYSTEM at an I/O edge) instead:\n" + "\n".join(offences)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import time\ntime.sleep(1)", ["time.sleep"]),
        ("import time\nx = time.monotonic", ["time.monotonic"]),
        ("from datetime import datetime, UTC\ndatetime.now(UTC)", ["datetime.now"]),
        ("import datetime\ndatetime.datetime.now()", ["datetime.now"]),
        ("from time import monotonic, perf_counter", ["from time import monotonic"]),
        ("import time\ntime.perf_counter()", []),
        ("from hami_core.clock import SYSTEM\nSYSTEM.now(); SYSTEM.monotonic()", []),
    ],
)
def test_the_check_finds_each_way_of_reading_the_time(source: str, found: list[str]) -> None:
    assert [what for _, what in _uses(ast.parse(source))] == found
