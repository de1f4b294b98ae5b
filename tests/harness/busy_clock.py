"""A fake clock for races: each reading by one named thread is held up a little in real time, as a thread
is on a busy machine, so another thread may move the fake time between two of its readings."""

from __future__ import annotations

import threading
import time

from hami_core.clock import FakeClock

__all__ = ["BusyClock"]


class BusyClock(FakeClock):
    """``FakeClock`` whose ``monotonic()`` holds the thread named ``thread`` up 2 ms of real time first."""

    def __init__(self, thread: str) -> None:
        super().__init__()
        self.thread = thread

    def monotonic(self) -> float:
        if threading.current_thread().name == self.thread:
            time.sleep(0.002)
        return super().monotonic()
