"""A daemon under test, run as a child process; its CPU time and peak RSS read from ``/proc``.

``/proc/<pid>/stat`` gives user + system CPU time of every thread; ``/proc/<pid>/status`` gives ``VmHWM``,
the kernel's own high-water mark of the resident set, so the peak needs no sampling. Linux only.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib.cluster import BenchError

__all__ = ["Daemon", "Usage", "free_port", "get_json", "get_text"]

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float
    peak_rss_bytes: int

    @property
    def peak_rss_mib(self) -> float:
        return self.peak_rss_bytes / 2**20


def _die_with_parent() -> None:  # in the child: SIGKILL when the benchmark dies, no daemon left behind
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Daemon:
    """One daemon process: started with its output in ``log``, stopped with TERM, then KILL."""

    def __init__(
        self, name: str, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.log = log
        self.started = time.monotonic()
        self.started_wall = time.time()  # to place the daemon's own log timestamps on the same axis
        with log.open("wb") as out:
            self._proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll()

    def usage(self) -> Usage:
        """CPU time so far and the peak resident set; the process must still be running."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError as exc:
            raise BenchError(f"{self.name} is gone (exit code {self.returncode}); see {self.log}") from exc
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state is fields[0]
        cpu = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime (stat fields 14, 15)
        peak = 0
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
        return Usage(cpu, peak)

    def rss_bytes(self) -> int:
        """The resident set now (``VmRSS``); 0 once the process is gone."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def check_alive(self) -> None:
        if not self.alive():
            raise BenchError(
                f"{self.name} exited with code {self.returncode}; last lines of {self.log}:\n" + self.tail()
            )

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 15.0) -> int:
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(timeout)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        return self._proc.wait()

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get_text(url: str, timeout: float = 10.0) -> str | None:
    """The body of a GET, or ``None`` when nothing answers (yet) or the answer is not 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return str(resp.read().decode())
    except (urllib.error.URLError, OSError):
        return None


def get_json(url: str, timeout: float = 10.0) -> Any:
    text = get_text(url, timeout)
    return None if text is None else json.loads(text)
