"""HAMi v2.10.0's own scheduler and hami-core, side by side on the real API server.

Each run gets a fresh kube-apiserver + etcd holding the same Nodes (``--nvidia`` nodes with 8 NVIDIA GPUs
and an allocatable count, ``--dcu`` nodes whose DCU plugin registered four devices and then went silent:
no allocatable, no report), then one scheduler, alone:

1. hami-core (``hami scheduler run``, default limits: 200 requests/s, burst 400);
2. HAMi's scheduler at hami-core's limits (``--kube-qps 200 --kube-burst 400``): cold start only;
3. HAMi's scheduler at its chart's defaults (client-go's 5 requests/s, burst 10).

Measured in every run, from the outside: the cold start (first stamp, every node stamped as the API
server shows it, every node in the scheduler's cache), requests by verb from the API server's own
``apiserver_request_total``, CPU time and peak RSS from ``/proc``. In runs 1 and 3 the run then goes on
for ``--phase`` seconds: register values of NVIDIA nodes are changed one at a time (the time until the
scheduler's cache shows the new value), the DCU handshakes are watched (cleanup and re-stamps), and at
the end a Node whose NVIDIA register value is ``[null]`` appears (does the scheduler survive it?).
``--large N`` adds a cold start at N nodes (hami-core, and HAMi at equal limits; its time at 5
requests/s is projected from the requests it made).

HAMi is built from its unmodified source by ``scripts/build-hami-scheduler.sh`` (cached). Prints the
comparison as a Markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from benchlib import hami
from benchlib.apimetrics import RequestKey, Requests
from benchlib.cluster import AnnotationWatch, BenchCluster, BenchError
from benchlib.nodes import NVIDIA_REGISTER, VENDORS, node_manifest, nvidia_register
from benchlib.proc import Daemon, Usage, free_port, get_json
from benchlib.repo import hami_command
from benchlib.table import markdown_table

NVIDIA, DCU = VENDORS["nvidia"], VENDORS["dcu"]
#: Every handshake annotation either scheduler may write (HAMi's default device config: NVIDIA, Hygon
#: DCU, Kunlun vXPU, Vastai, Biren).
HANDSHAKE_KEYS = (
    NVIDIA.handshake,
    DCU.handshake,
    "hami.io/node-handshake-xpu",
    "hami.io/node-handshake-va",
    "hami.io/node-handshake-biren",
)
NULL_NODE = "peer-null"
NULL_WAIT = 30.0  # seconds a scheduler is given to show what it does with a [null] register value
CHANGE_TIMEOUT = 90.0
EQUAL_QPS, EQUAL_BURST = 200.0, 400  # hami-core's defaults
HAMI_QPS, HAMI_BURST = 5.0, 10  # client-go's defaults, which HAMi's chart leaves in place


# -- the cluster --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    nvidia: tuple[str, ...]
    dcu: tuple[str, ...]

    @classmethod
    def of(cls, nvidia: int, dcu: int, prefix: str = "peer") -> Cluster:
        return cls(
            tuple(f"{prefix}-gpu-{i:04d}" for i in range(nvidia)),
            tuple(f"{prefix}-dcu-{i:04d}" for i in range(dcu)),
        )

    @property
    def size(self) -> int:
        return len(self.nvidia) + len(self.dcu)

    def describe(self) -> str:
        return f"{len(self.nvidia):,} NVIDIA + {len(self.dcu):,} DCU nodes"

    def manifests(self) -> list[dict[str, Any]]:
        return [node_manifest(n, {"nvidia": True}) for n in self.nvidia] + [
            node_manifest(n, {"dcu": False}) for n in self.dcu
        ]  # DCU: silent, no allocatable

    def expected_stamps(self) -> dict[str, str]:
        """node -> the handshake its vendor must carry once the scheduler stamped it."""
        return {**{n: NVIDIA.handshake for n in self.nvidia}, **{n: DCU.handshake for n in self.dcu}}


def gpu0(node: str) -> str:
    """The id of a node's first GPU (as ``nvidia_register`` writes it)."""
    return f"GPU-{node}-00-8a3f6c1e-5b2d-4c7a-9e10"


# -- the schedulers under test -------------------------------------------------------------------------


class Running(Protocol):
    """A scheduler process under test, read from the outside."""

    daemon: Daemon
    poll: float  # seconds between looks at its cache: cheap for hami-core, a metrics scrape for HAMi
    change_poll: float  # the same while waiting for a changed register value

    def cache_complete(self, nodes: int) -> float | None:
        """Seconds from the process start at which its cache first held ``nodes`` nodes (None: not yet)."""

    def first_gpu_memory(self, node: str) -> int | None: ...

    def null_outcome(self, api: BenchCluster, appeared: float) -> str: ...


class Implementation(Protocol):
    @property
    def label(self) -> str: ...

    @property
    def full(self) -> bool:  # also the phase and the [null] node, not only the cold start
        ...

    def start(self, api: BenchCluster, workdir: Path) -> AbstractContextManager[Running]: ...


@dataclass
class HamiCoreRunning:
    daemon: Daemon
    url: str
    poll: float = 0.1
    change_poll: float = 0.01

    def cache_complete(self, nodes: int) -> float | None:
        status = get_json(self.url + "/status", timeout=10)
        if status is None or int(status.get("nodes_registered", 0)) < nodes:
            return None
        return time.monotonic() - self.daemon.started

    def first_gpu_memory(self, node: str) -> int | None:
        entry = get_json(f"{self.url}/cache/{quote(node)}", timeout=10)
        for vendor in (entry or {}).get("vendors", {}).values():
            for device in vendor.get("devices", []):
                if device.get("id") == gpu0(node):
                    return int(device["devmem"])
        return None

    def null_outcome(self, api: BenchCluster, appeared: float) -> str:
        deadline = appeared + NULL_WAIT
        events: list[dict[str, Any]] = []
        while time.monotonic() < deadline and self.daemon.alive():
            events = api.events_about(NULL_NODE)
            if events:
                break
            time.sleep(0.2)
        if not self.daemon.alive():
            return f"exited with code {self.daemon.returncode} (see {self.daemon.log})"
        entry = get_json(f"{self.url}/cache/{NULL_NODE}", timeout=10) or {}
        states = {v.get("vendor", k): v.get("state") for k, v in entry.get("vendors", {}).items()}
        shown = ", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "not in the cache"
        took = f"{events[0].get('count', 1)} Warning Event" if events else "no Warning Event"
        reason = events[0].get("reason", "") if events else ""
        return f"keeps running; node {shown}; {took}{f' ({reason})' if reason else ''}"


@dataclass(frozen=True)
class HamiCore:
    label: str = "hami-core"
    full: bool = True

    @contextmanager
    def start(self, api: BenchCluster, workdir: Path) -> Iterator[Running]:
        port = free_port()
        argv = [
            str(hami_command()),
            "scheduler",
            "run",
            "--kubeconfig",
            api.kubeconfig("hami-scheduler"),
            "--http-listen",
            f"127.0.0.1:{port}",
        ]
        with Daemon("hami scheduler", argv, workdir / "hami-core.log") as daemon:
            yield HamiCoreRunning(daemon, f"http://127.0.0.1:{port}")


@dataclass
class HamiRunning:
    daemon: Daemon
    metrics_url: str
    poll: float = 0.5
    change_poll: float = 0.2

    def __post_init__(self) -> None:
        self.added = hami.AddedNodes(self.daemon)

    def cache_complete(self, nodes: int) -> float | None:
        added = sorted(self.added.read().values())
        return added[nodes - 1] if len(added) >= nodes else None

    def first_gpu_memory(self, node: str) -> int | None:
        nodes = hami.overview(self.metrics_url) or {}
        return nodes.get(node, {}).get(gpu0(node))

    def null_outcome(self, api: BenchCluster, appeared: float) -> str:
        deadline = appeared + NULL_WAIT
        while time.monotonic() < deadline and self.daemon.alive():
            time.sleep(0.05)
        if self.daemon.alive():
            return f"keeps running ({NULL_WAIT:.0f} s watched)"
        took = time.monotonic() - appeared
        panic = next(
            (
                line.strip()
                for line in self.daemon.log.read_text(errors="replace").splitlines()
                if line.startswith("panic:")
            ),
            "",
        )
        what = "panics" if panic else f"exits with code {self.daemon.returncode}"
        detail = f" (`{panic[:80]}`)" if panic else ""
        return f"the scheduler {what} {took:.1f} s after the node appears{detail}"


@dataclass(frozen=True)
class Hami:
    binary: Path
    config: Path
    qps: float | None
    burst: int | None
    full: bool

    @property
    def label(self) -> str:
        limits = "chart defaults" if self.qps is None else f"{self.qps:g} requests/s, burst {self.burst}"
        return f"HAMi v2.10.0 ({limits})"

    @contextmanager
    def start(self, api: BenchCluster, workdir: Path) -> Iterator[Running]:
        holder = hami.LeaseHolder(api).start()
        try:
            with hami.run_scheduler(self.binary, self.config, api, workdir, self.qps, self.burst) as proc:
                yield HamiRunning(proc.daemon, proc.metrics_url)
        finally:
            holder.stop()
        if holder.error is not None:
            raise BenchError(f"renewing HAMi's Lease failed: {holder.error}")


# -- one run ---------------------------------------------------------------------------------------------


@dataclass
class Silent:
    """What happened to the silent DCU nodes' handshakes, in seconds from the scheduler's start."""

    deletes: list[tuple[str, float]] = field(default_factory=list)
    restamps: list[tuple[str, float, float]] = field(default_factory=list)  # node, delete at, re-stamp at
    window: float = 0.0


@dataclass
class Run:
    label: str
    cluster: Cluster
    first_stamp: float | None = None
    stamped: float = 0.0
    cached: float = 0.0
    requests: Requests | None = None
    cold_usage: Usage | None = None
    latencies: list[float] = field(default_factory=list)
    silent: Silent | None = None
    phase_requests: Requests | None = None
    phase_writes_by_bench: int = 0
    phase_seconds: float = 0.0
    end_usage: Usage | None = None
    whole_seconds: float = 0.0
    null: str = ""

    @property
    def cold(self) -> float:
        return max(self.stamped, self.cached)


def run_one(
    impl: Implementation,
    cluster: Cluster,
    workdir: Path,
    phase: float,
    changes: int,
    timeout: float,
    log: Callable[[str], None],
) -> Run:
    result = Run(impl.label, cluster)
    workdir.mkdir(parents=True, exist_ok=True)
    log(f"{impl.label}: starting kube-apiserver + etcd, creating {cluster.describe()}")
    with BenchCluster.start(workdir) as api:
        api.create_nodes(cluster.manifests())
        watch = api.watch(HANDSHAKE_KEYS).start()
        try:
            before = api.request_totals()
            log(f"{impl.label}: starting the scheduler")
            with impl.start(api, workdir) as running:
                _cold_start(result, running, watch, api, before, timeout, log)
                if impl.full:
                    _phase(result, running, watch, api, phase, changes, log)
                    appeared = time.monotonic()
                    api.create_node(
                        node_manifest(
                            NULL_NODE, {"nvidia": True}, extra_annotations={NVIDIA_REGISTER: "[null]"}
                        )
                    )
                    result.null = running.null_outcome(api, appeared)
                    log(f"{impl.label}: [null] register value: {result.null}")
        finally:
            watch.stop()
    return result


def _cold_start(
    result: Run,
    running: Running,
    watch: AnnotationWatch,
    api: BenchCluster,
    before: Counter[RequestKey],
    timeout: float,
    log: Callable[[str], None],
) -> None:
    started = running.daemon.started
    expected = result.cluster.expected_stamps()
    cached_at: float | None = None
    stamped = False
    next_look = 0.0
    while cached_at is None or not stamped:
        running.daemon.check_alive()
        watch.check()
        if time.monotonic() - started > timeout:
            raise BenchError(
                f"{result.label}: cold start not finished after {timeout:.0f} s "
                f"(stamped: {stamped}, cached: {cached_at is not None})"
            )
        if not stamped:
            values = watch.snapshot()
            stamped = all(values.get(n, {}).get(k, "").startswith("Requesting_") for n, k in expected.items())
        if cached_at is None and time.monotonic() >= next_look:
            next_look = time.monotonic() + running.poll
            cached_at = running.cache_complete(len(expected))
        time.sleep(0.05)
    result.cold_usage = running.daemon.usage()
    result.requests = Requests(before, api.request_totals())
    result.cached = cached_at
    firsts: dict[tuple[str, str], float] = {}
    for change in watch.changes:
        if change.value is not None and change.value.startswith("Requesting_"):
            firsts.setdefault((change.node, change.key), change.at - started)
    result.first_stamp = min(firsts.values(), default=None)
    result.stamped = max(firsts[(n, k)] for n, k in expected.items())
    log(
        f"{result.label}: cold start {result.cold:.1f} s (first stamp {result.first_stamp:.1f} s, "
        f"all stamped {result.stamped:.1f} s, cached {result.cached:.1f} s)"
    )


def _phase(
    result: Run,
    running: Running,
    watch: AnnotationWatch,
    api: BenchCluster,
    phase: float,
    changes: int,
    log: Callable[[str], None],
) -> None:
    started = running.daemon.started
    begin = time.monotonic()
    end = begin + phase
    before = api.request_totals()
    nodes = result.cluster.nvidia
    for i in range(min(changes, len(nodes))):
        node = nodes[(i * max(1, len(nodes) // max(1, changes))) % len(nodes)]
        memory = 30_000 + i
        api.patch_annotations(node, {NVIDIA_REGISTER: nvidia_register(node, first_devmem=memory)})
        changed = time.monotonic()
        result.phase_writes_by_bench += 1
        while running.first_gpu_memory(node) != memory:
            running.daemon.check_alive()
            if time.monotonic() - changed > CHANGE_TIMEOUT:
                raise BenchError(
                    f"{result.label}: a changed register value of {node} was not in the cache "
                    f"after {CHANGE_TIMEOUT:.0f} s"
                )
            time.sleep(running.change_poll)
        result.latencies.append(time.monotonic() - changed)
        # Wait a little between changes, differently each time, so they fall at varied points of a tick.
        time.sleep(min(max(0.0, end - time.monotonic()), 1.0 + (i * 3.7) % 5))
    while time.monotonic() < end:
        running.daemon.check_alive()
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))
    watch.check()
    result.phase_requests = Requests(before, api.request_totals())
    result.phase_seconds = time.monotonic() - begin
    result.end_usage = running.daemon.usage()
    result.whole_seconds = time.monotonic() - started
    result.silent = _silent(watch, set(result.cluster.dcu), started, time.monotonic() - started)
    log(
        f"{result.label}: phase of {result.phase_seconds:.0f} s done; change latencies "
        + ", ".join(f"{x:.3f}" for x in result.latencies)
        + " s"
    )


def _silent(watch: AnnotationWatch, nodes: set[str], started: float, window: float) -> Silent:
    silent = Silent(window=window)
    deleted_at: dict[str, float] = {}
    for change in watch.changes:
        if change.node not in nodes or change.key != DCU.handshake:
            continue
        at = change.at - started
        if change.value is None:
            silent.deletes.append((change.node, at))
            deleted_at[change.node] = at
        elif change.value.startswith("Requesting_") and change.node in deleted_at:
            silent.restamps.append((change.node, deleted_at.pop(change.node), at))
    return silent


# -- the table -----------------------------------------------------------------------------------------


def _cold_cell(run: Run) -> str:
    first = f", first stamp at {run.first_stamp:.1f} s" if run.first_stamp is not None else ""
    return f"{run.cold:.1f} s{first}"


def _per_node(run: Run) -> str:
    assert run.requests is not None
    verbs = run.requests.by_verb("nodes")
    per = {verb: n / run.cluster.size for verb, n in verbs.items() if verb in ("GET", "PATCH")}
    text = " + ".join(f"{n:.2f} {verb}" for verb, n in sorted(per.items())) or "none"
    once = {verb: n for verb, n in verbs.items() if verb not in ("GET", "PATCH")}
    if once:
        text += " (and " + ", ".join(f"{n} {verb}" for verb, n in sorted(once.items())) + " for the run)"
    return text


def _usage(run: Run) -> str:
    assert run.cold_usage is not None
    text = f"cold start {run.cold_usage.cpu_seconds:.2f} s CPU"
    if run.end_usage is not None:
        text += f"; {run.end_usage.cpu_seconds:.2f} s CPU over the whole {run.whole_seconds:.0f} s run"
        return text + f"; peak RSS {run.end_usage.peak_rss_mib:.0f} MiB"
    return text + f"; peak RSS {run.cold_usage.peak_rss_mib:.0f} MiB"


def _silent_cell(run: Run) -> str:
    s = run.silent
    if s is None:
        return "not measured"
    if not s.deletes:
        return f"no cleanup within {s.window:.0f} s of the start"
    first = min(at for _, at in s.deletes)
    last_first = max(min(at for n, at in s.deletes if n == node) for node in {n for n, _ in s.deletes})
    if not s.restamps:
        spread = f" (the last node at {last_first:.0f} s)" if last_first - first >= 1 else ""
        return f"cleaned at {first:.0f} s{spread}, never re-stamped (watched for {s.window:.0f} s)"
    gaps = [stamp - delete for _, delete, stamp in s.restamps]
    per_node: dict[str, list[float]] = {}
    for node, at in s.deletes:
        per_node.setdefault(node, []).append(at)
    cycles = [b - a for times in per_node.values() for a, b in itertools.pairwise(times)]
    cycle = f", cycle ~{statistics.median(cycles):.0f} s" if cycles else ""
    return (
        f"first cleanup at {first:.0f} s, then flaps: {len(s.restamps)} re-stamps, each "
        f"{min(gaps):.0f}-{max(gaps):.0f} s after a delete{cycle} (watched for {s.window:.0f} s)"
    )


def _latency_cell(run: Run) -> str:
    if not run.latencies:
        return "not measured"
    lo, hi = min(run.latencies), max(run.latencies)
    span = f"{lo * 1000:.0f}-{hi * 1000:.0f} ms" if hi < 1 else f"{lo:.1f}-{hi:.1f} s"
    count = f"{len(run.latencies)} change" + ("s" if len(run.latencies) != 1 else "")
    return f"seen after {span} ({count})"


def _phase_requests(run: Run) -> str:
    if run.phase_requests is None:
        return "not measured"
    verbs = run.phase_requests.by_verb("nodes")
    verbs["PATCH"] -= run.phase_writes_by_bench  # the benchmark's own register changes
    events = run.phase_requests.count("POST", "events")
    text = Requests.describe(verbs)
    return text + (f", {events} Events" if events else "") + f" in {run.phase_seconds:.0f} s"


def table(core: Run, hami_default: Run, hami_equal: Run, large: tuple[Run, Run] | None) -> str:
    rows = [
        [
            f"cold start, {core.cluster.describe()}, HAMi at its chart's defaults ({HAMI_QPS:g} requests/s, "
            f"burst {HAMI_BURST})",
            _cold_cell(hami_default),
            _cold_cell(core),
        ],
        [
            f"cold start, same nodes, HAMi at hami-core's limits ({EQUAL_QPS:g} requests/s, "
            f"burst {EQUAL_BURST})",
            f"{_cold_cell(hami_equal)}; {_usage(hami_equal)}",
            "(as above)",
        ],
    ]
    if large is not None:
        big_core, big_hami = large
        assert big_hami.requests is not None
        sent = big_hami.requests.count(None, "nodes") - big_hami.requests.count("WATCH", "nodes")
        projected = sent / HAMI_QPS
        rows.append(
            [
                f"cold start, {big_core.cluster.size:,} nodes ({big_core.cluster.describe()})",
                f"{big_hami.cold:.1f} s at {EQUAL_QPS:g} requests/s; ~{projected / 60:.0f} min "
                f"projected at {HAMI_QPS:g}/s ({sent:,} requests)",
                f"{big_core.cold:.1f} s",
            ]
        )
    rows += [
        [
            "requests per node at cold start (counted by the API server)",
            _per_node(hami_default),
            _per_node(core),
        ],
        ["CPU time and peak RSS", _usage(hami_default), _usage(core)],
        [
            "silent DCU plugin (its stamp expires, no allocatable): handshake deletes and re-stamps",
            _silent_cell(hami_default),
            _silent_cell(core),
        ],
        [
            "node requests while nothing changes but the benchmark's register edits",
            _phase_requests(hami_default),
            _phase_requests(core),
        ],
        ["a `[null]` element in an NVIDIA register value", hami_default.null, core.null],
        [
            "register value changed (time until the scheduler's cache shows it)",
            _latency_cell(hami_default),
            _latency_cell(core),
        ],
    ]
    return markdown_table(["", "HAMi v2.10.0", "hami-core"], rows)


# -- main ------------------------------------------------------------------------------------------------


def machine() -> str:
    return (
        f"{date.today().isoformat()}, {platform.machine()} Linux, {len(os.sched_getaffinity(0))} cores, "
        f"Python {platform.python_version()}"
    )


def _positive_int(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not between {low} and {high}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"{value:g} is not between 0 and 86400 seconds")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nvidia",
        type=_positive_int(1, 20_000),
        default=200,
        help="NVIDIA nodes (8 GPUs, allocatable) in the side-by-side runs (default 200)",
    )
    parser.add_argument(
        "--dcu",
        type=_positive_int(1, 20_000),
        default=20,
        help="DCU nodes whose plugin went silent (default 20)",
    )
    parser.add_argument(
        "--phase", type=_seconds, default=300.0, help="seconds to watch after the cold start (default 300)"
    )
    parser.add_argument(
        "--changes",
        type=_positive_int(0, 1000),
        default=5,
        help="register values changed during the phase, one at a time (default 5)",
    )
    parser.add_argument(
        "--large",
        type=_positive_int(0, 100_000),
        default=0,
        metavar="N",
        help="also a cold start at N nodes, same mix (0: skip; the issue's figure is 2040)",
    )
    parser.add_argument(
        "--hami-src",
        type=Path,
        default=None,
        help="HAMi's source at v2.10.0 (default: the shared copy, see scripts/build-hami-scheduler.sh)",
    )
    parser.add_argument(
        "--device-config",
        type=Path,
        default=None,
        help="HAMi's device config (default: device-config.yaml next to the shared source)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=0.0,
        help="seconds one cold start may take (default: what HAMi needs at 5 requests/s, plus 5 minutes)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the API servers and logs go (default: a temporary directory)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    def log(message: str) -> None:
        print(f"[peer {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    try:
        source = hami.find_source(args.hami_src)
        config = hami.device_config(source, args.device_config)
    except BenchError as exc:  # where HAMi is, or its device config, was given wrong: bad usage
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        log(f"building HAMi's scheduler from {source} (cached after the first time)")
        binary = hami.build_scheduler(source)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not hami_command().exists():
        print(f"error: {hami_command()} not found; run `bash scripts/bootstrap.sh` first", file=sys.stderr)
        return 2

    cluster = Cluster.of(args.nvidia, args.dcu)
    biggest = max(cluster.size, args.large)
    timeout = args.timeout or biggest * len(HANDSHAKE_KEYS) * 2 / HAMI_QPS + 300
    core: Implementation = HamiCore()
    equal: Implementation = Hami(binary, config, EQUAL_QPS, EQUAL_BURST, full=False)
    default: Implementation = Hami(binary, config, None, None, full=True)
    with tempfile.TemporaryDirectory(prefix="hami-peer-") as tmp:
        base = args.workdir or Path(tmp)
        try:
            runs = [
                run_one(impl, cluster, base / f"run-{i}", args.phase, args.changes, timeout, log)
                for i, impl in enumerate((core, equal, default))
            ]
            large = None
            if args.large:
                nvidia = round(args.large * args.nvidia / cluster.size)
                big = Cluster.of(nvidia, args.large - nvidia, prefix="large")
                large = (
                    run_one(HamiCore(full=False), big, base / "large-core", 0, 0, timeout, log),
                    run_one(equal, big, base / "large-hami", 0, 0, timeout, log),
                )
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print(
        f"HAMi v2.10.0's scheduler and hami-core, one at a time on the real API server, measured "
        f"{machine()}; watched for {args.phase:g} s after each cold start.\n"
    )
    print(table(runs[0], runs[2], runs[1], large))
    return 0


if __name__ == "__main__":
    sys.exit(main())
