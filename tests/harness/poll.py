"""The one polling helper of the tests: wait, in real time, for something that must happen.

For what a test cannot be told about (a thread of the code under test, a process, the API server).
Never to prove that something did *not* happen: that is the fake clock's job (``harness.scheduler_world``).
The bounds are generous because the machine may be busy; a poll that times out is a failure that names
what it waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["wait_for"]

T = TypeVar("T")


def wait_for(
    what: str, predicate: Callable[[], T | None], timeout: float = 20.0, interval: float = 0.01
) -> T:
    """Poll ``predicate`` until it returns a true value, and return that value; ``AssertionError`` naming
    ``what`` after ``timeout`` real seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)
