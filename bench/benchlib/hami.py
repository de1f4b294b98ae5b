"""HAMi v2.10.0's own scheduler, built from its unmodified source and run against the benchmark's server.

Where the source is, first found wins (``scripts/build-hami-scheduler.sh`` looks in the same places):
``--hami-src DIR``, ``$HAMI_SRC``, ``$HAMI_SHARED/hami/v2.10.0``, ``<repo>/../shared/hami/v2.10.0`` and,
for a git worktree, the same next to the main checkout. The build script caches the binary outside the
clone, keyed by a hash of the source.

HAMi takes no Lease itself: it registers only while ``kube-system/hami-scheduler`` is held by an identity
starting with its host name (kube-scheduler's, in the chart's pod). ``LeaseHolder`` plays that part.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from benchlib.cluster import BenchCluster, BenchError
from benchlib.proc import Daemon, free_port, get_text
from benchlib.repo import REPO_ROOT

__all__ = [
    "AddedNodes",
    "HamiScheduler",
    "LeaseHolder",
    "build_scheduler",
    "device_config",
    "find_source",
    "overview",
    "run_scheduler",
]

VERSION_DIR = Path("hami") / "v2.10.0"
LEASE_NAMESPACE = "kube-system"
LEASE_NAME = "hami-scheduler"
BUILD_SCRIPT = REPO_ROOT / "scripts" / "build-hami-scheduler.sh"


def _shared_candidates() -> list[Path]:
    out = []
    if os.environ.get("HAMI_SHARED"):
        out.append(Path(os.environ["HAMI_SHARED"]))
    out.append(REPO_ROOT.parent / "shared")
    try:
        common = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        out.append(Path(common.stdout.strip()).parent.parent / "shared")
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def _is_hami(path: Path) -> bool:
    return (path / "go.mod").is_file() and (path / "cmd" / "scheduler").is_dir()


def find_source(explicit: Path | None = None) -> Path:
    """HAMi v2.10.0's source directory, or a ``BenchError`` saying where it was looked for."""
    if explicit is not None:
        candidates = [explicit]
    elif os.environ.get("HAMI_SRC"):
        candidates = [Path(os.environ["HAMI_SRC"])]
    else:
        candidates = [shared / VERSION_DIR for shared in _shared_candidates()]
    for path in candidates:
        if _is_hami(path):
            module = (path / "go.mod").read_text().splitlines()[0].strip()
            if module != "module github.com/Project-HAMi/HAMi":
                raise BenchError(f"{path}/go.mod is not HAMi's module (first line: {module!r})")
            return path.resolve()
    where = ", ".join(str(p) for p in candidates)
    raise BenchError(
        f"HAMi v2.10.0's source not found (looked in: {where}); pass --hami-src DIR "
        "(a checkout of HAMi at v2.10.0) or set HAMI_SRC or HAMI_SHARED"
    )


def device_config(source: Path, explicit: Path | None = None) -> Path:
    """The device config HAMi's chart renders by default: ``--device-config``, else the one shipped next
    to the shared source (``<shared>/hami/device-config.yaml``)."""
    if explicit is not None:
        if not explicit.is_file():
            raise BenchError(f"--device-config: {explicit} is not a file")
        return explicit
    shipped = source.parent / "device-config.yaml"
    if shipped.is_file():
        return shipped
    raise BenchError(
        f"no device-config.yaml next to {source}; pass --device-config FILE (what HAMi's chart "
        "renders: helm template charts/hami --show-only "
        "templates/scheduler/device-configmap.yaml)"
    )


def build_scheduler(source: Path) -> Path:
    """Build (or find cached) HAMi's scheduler binary; the build script's output goes to our stderr."""
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--src", str(source)], stdout=subprocess.PIPE, text=True, check=False
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not os.access(lines[-1], os.X_OK):
        raise BenchError(
            f"building HAMi's scheduler failed (exit {proc.returncode}); run "
            f"`bash {BUILD_SCRIPT.relative_to(REPO_ROOT)}` to see why"
        )
    return Path(lines[-1])


class LeaseHolder:
    """Creates the Lease HAMi's scheduler waits for, held by ``<hostname>_...``, and renews it."""

    def __init__(self, api: BenchCluster, period: float = 2.0, duration: int = 15) -> None:
        self.api, self.period, self.duration = api, period, duration
        self.identity = f"{socket.gethostname()}_hami-core-bench"
        self.renewals = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-lease", daemon=True)
        self.error: BaseException | None = None

    def start(self) -> LeaseHolder:
        self.api.put_lease(LEASE_NAMESPACE, LEASE_NAME, self.identity, self.duration)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.api.put_lease(LEASE_NAMESPACE, LEASE_NAME, self.identity, self.duration)
                self.renewals += 1
            except Exception as exc:  # reported by the benchmark; HAMi stops registering without it
                self.error = exc


@dataclass(frozen=True)
class HamiScheduler:
    """A running HAMi scheduler process and where its metrics are."""

    daemon: Daemon
    metrics_url: str


@contextmanager
def run_scheduler(
    binary: Path,
    config: Path,
    api: BenchCluster,
    workdir: Path,
    qps: float | None = None,
    burst: int | None = None,
) -> Iterator[HamiScheduler]:
    """HAMi's scheduler as the chart runs it (leader election on, its device config), as ``admin``."""
    http_port, metrics_port = free_port(), free_port()
    argv = [
        str(binary),
        "--leader-elect=true",
        f"--leader-elect-resource-name={LEASE_NAME}",
        f"--leader-elect-resource-namespace={LEASE_NAMESPACE}",
        "--scheduler-name=hami-scheduler",
        f"--device-config-file={config}",
        f"--http_bind=127.0.0.1:{http_port}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
    ]
    if qps is not None:
        argv.append(f"--kube-qps={qps:g}")
    if burst is not None:
        argv.append(f"--kube-burst={burst}")
    env = {
        "KUBECONFIG": api.kubeconfig("admin"),
        "POD_NAMESPACE": LEASE_NAMESPACE,
        "POD_NAME": "hami-scheduler-bench",
    }
    with Daemon("HAMi scheduler", argv, workdir / "hami-scheduler.log", env) as daemon:
        yield HamiScheduler(daemon, f"http://127.0.0.1:{metrics_port}/metrics")


_OVERVIEW = re.compile(r"^hami_node_gpu_overview\{(?P<labels>[^}]*)\}")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def overview(metrics_url: str, timeout: float = 300.0) -> dict[str, dict[str, int]] | None:
    """What HAMi's scheduler showed as cached at the end of its last pass, from its metrics: node ->
    device id -> memory (MiB); ``None`` while nothing answers.

    A scrape waits while a pass holds the scheduler's lock (minutes at 5 requests/s). The long timeout
    keeps one scrape in flight at a time: one given up on would still be served, later, by the
    scheduler, and a pile of them would cost it CPU and memory the benchmark then reports as its own.
    """
    text = get_text(metrics_url, timeout=timeout)
    if text is None:
        return None
    nodes: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        match = _OVERVIEW.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        nodes.setdefault(labels.get("node", ""), {})[labels.get("device_uuid", "")] = int(
            labels.get("device_memory_limit", "0") or 0
        )
    return nodes


_ADDED = re.compile(
    r'^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)\s+\d+ \S+\] "Node device added" '
    r'nodeName="([^"]+)"'
)


class AddedNodes:
    """When HAMi's scheduler first put each node in its cache, from its own log: it logs "Node device
    added" once per node, at the moment of the add (its metrics show the cache only as of the end of a
    pass, and block while a pass holds its lock, which at 5 requests/s is minutes)."""

    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon
        self._offset = 0
        self.added: dict[str, float] = {}  # node -> seconds from the process start

    def read(self) -> dict[str, float]:
        with self._daemon.log.open("rb") as log:
            log.seek(self._offset)
            chunk = log.read()
        end = chunk.rfind(b"\n") + 1  # complete lines only
        self._offset += end
        year = datetime.now().year
        for line in chunk[:end].decode(errors="replace").splitlines():
            match = _ADDED.match(line)
            if match is None or match[7] in self.added:
                continue
            month, day, hour, minute, second = (int(g) for g in match.groups()[:5])
            stamp = datetime(year, month, day, hour, minute, second, int(match[6][:6].ljust(6, "0")))
            self.added[match[7]] = stamp.timestamp() - self._daemon.started_wall
        return self.added
