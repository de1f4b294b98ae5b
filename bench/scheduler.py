"""Scheduler benchmark: what registering, re-checking and following changes of N nodes costs.

Each node carries 8 NVIDIA GPUs (JSON) and 4 DCUs (legacy), as a large cluster's GPU nodes do.

- registrar, cold pass: every node new (decode, stamp, cache);
- registrar, a pass as the stamps show (every replica decides each node again when its stamps land);
- registrar, full pass over unchanged nodes: what a term start costs (every node decided again);
- resync of unchanged nodes, in the running daemon (fake clock, in memory): the 15 s safety net, CPU of
  one pass and the evaluations it triggers (target: at most 50 ms for 10,000 nodes);
- churn: register changes at a fixed rate while the daemon runs (real clock, in memory, resync every
  second so that changes also land while a resync runs): latency from the change to the cache, p50/p99
  (target: p99 under 50 ms at 10,000 nodes and 100 changes/s);
- memory held per node (cache + scheduler memory), and what the store holds per Node, with tracemalloc;
- cleanup: DCU plugins of N registered nodes die one a second (a last answer, then allocatable 0); for
  each, the latency from its cleanup becoming allowed (the fake clock passes its stamp's window) to its
  DCUs leaving the cache (the issue's "within 5 ms", to keep);
- daemon end to end: time from start until every node is stamped and registered, default write limits.

Prints a Markdown table. Figures vary with machine load: compare rows of one run, not across runs.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import logging
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Mapping
from datetime import datetime, timedelta

import attrs

from hami_core import VendorRules
from hami_core.clock import FakeClock
from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import NodeSnapshot
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.handshake import format_report
from hami_core.scheduler.cache import DeviceCache, VendorEntry
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.registrar import Registrar
from hami_core.scheduler.selector import NodeSelector
from hami_core.scheduler.trim import NodeTrim
from hami_core.simulate.settle import NodeWrites, wait_settled

GPU = (
    '{"id":"GPU-%s-%d","index":%d,"count":10,"devmem":%d,"devcore":100,'
    '"type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true}'
)
#: The vendors the Nodes carry; every installed driver is loaded (as a cluster's scheduler would run),
#: so the ones the Nodes do not carry (MLU's capacity source, Kunlun's cards, ...) cost what they cost.
VENDORS = ["nvidia", "dcu"]
ALLOCATABLE = {"nvidia.com/gpu": "80", "hygon.com/dcunum": "16"}


def nvidia(i: int, devmem: int = 32768) -> str:
    return "[" + ",".join(GPU % (i, k, k, devmem) for k in range(8)) + "]"


def node_annotations(i: int) -> dict[str, str]:
    dcu = "".join(f"DCU-{i}-{k},4,16384,100,DCU-Z100,0,true,{k},hami:" for k in range(4))
    return {"hami.io/node-nvidia-register": nvidia(i), "hami.io/node-dcu-register": dcu}


def _rules() -> list[VendorRules]:
    _, drivers = load_drivers()
    assert set(VENDORS) <= {d.name for d in drivers}
    return [d.rules() for d in drivers]


def _patched(annotations: Mapping[str, str], patch: Mapping[str, str | None]) -> dict[str, str]:
    """The annotations once a merge patch is applied (``None`` deletes a key)."""
    merged = {**annotations, **patch}
    return {key: value for key, value in merged.items() if value is not None}


def bench_registrar(n: int) -> list[tuple[str, str]]:
    rules = _rules()
    snapshots = [
        NodeSnapshot(name=f"node-{i}", uid=str(i), annotations=node_annotations(i), allocatable=ALLOCATABLE)
        for i in range(n)
    ]
    now = datetime.now().astimezone()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    measured = Registrar(rules, DeviceCache())
    for s in snapshots:
        measured.evaluate(s.name, s, now=now)
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del measured
    gc.collect()
    registrar = Registrar(rules, DeviceCache())
    start = time.process_time()
    patches = [registrar.evaluate(s.name, s, now=now).patch for s in snapshots]
    cold = time.process_time() - start
    stamped = [
        NodeSnapshot(
            name=s.name,
            uid=s.uid,
            annotations=_patched(s.annotations, p),
            allocatable=s.allocatable,
        )
        for s, p in zip(snapshots, patches, strict=True)
    ]
    # Every replica decides each node again when its stamps show (and remembers that it saw them); a
    # term start decides every node once more, as its follower memory left it.
    start = time.process_time()
    writes = sum(bool(registrar.evaluate(s.name, s, now=now + timedelta(seconds=1)).patch) for s in stamped)
    landed = time.process_time() - start
    start = time.process_time()
    writes += sum(bool(registrar.evaluate(s.name, s, now=now + timedelta(seconds=5)).patch) for s in stamped)
    full = time.process_time() - start
    assert writes == 0, "a pass over unchanged nodes must write nothing"
    return [
        (
            f"registrar cold pass, {n} nodes (8 GPUs JSON + 4 DCUs legacy)",
            f"{cold * 1e6 / n:.0f} µs/node ({cold:.2f} s CPU)",
        ),
        (
            f"registrar pass as the stamps show (each seen for the first time), {n} nodes",
            f"{landed * 1e6 / n:.0f} µs/node ({landed:.2f} s CPU)",
        ),
        (
            f"registrar full pass over unchanged nodes (a term start), {n} nodes",
            f"{full * 1e6 / n:.0f} µs/node ({full:.2f} s CPU)",
        ),
        (f"memory held per node ({n} nodes, 12 devices each)", f"{held / n / 1024:.1f} KiB"),
        _store_per_node(rules, snapshots),
    ]


def _store_per_node(rules: list[VendorRules], snapshots: list[NodeSnapshot]) -> tuple[str, str]:
    """What the scheduler's store holds per Node: each Node trimmed from strings of its own, as a Node
    read off the wire has them (the register values the registrar keeps only fingerprints of)."""
    trim = NodeTrim.of(rules, NodeSelector({}))
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    store = {}
    for s in snapshots:
        parsed = attrs.evolve(s, annotations={k: (v + " ")[:-1] for k, v in s.annotations.items()})
        store[s.name] = trim(parsed)
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    n = len(snapshots)
    return (
        f"the store per node ({n} trimmed Nodes, 8 GPUs + 4 DCUs each)",
        f"{held / n / 1024:.2f} KiB",
    )


def _populated(n: int) -> tuple[MemoryCluster, NodeWrites]:
    cluster = MemoryCluster(history=max(1000, 4 * n))
    cluster.create_namespace("bench")
    writes = NodeWrites()
    for i in range(n):
        writes.saw(cluster.create_node(f"node-{i}", annotations=node_annotations(i)))
        writes.saw(cluster.patch_node_status(f"node-{i}", ALLOCATABLE))
    return cluster, writes


def bench_resync(n: int) -> tuple[str, str]:
    """One resync tick of the running daemon over ``n`` registered, unchanged nodes."""
    cluster, writes = _populated(n)
    clock = FakeClock()
    # No write limit: the token bucket waits on the clock, and this one only moves when told.
    config = SchedulerConfig(http_port=None, lease_namespace="bench", resync=15.0, qps=1e9, burst=10**9)
    scheduler = Scheduler(cluster, _rules(), config, clock=clock)
    scheduler.start()
    try:
        wait_settled([scheduler], writes, timeout=600)
        assert len(scheduler.cache.nodes()) == n
        evaluations = scheduler.registrar.metrics.totals()["evaluations"]
        samples = []
        for _ in range(5):
            start = time.process_time()
            scheduler._resync()  # the worker's resync pass, on this thread
            samples.append(time.process_time() - start)
            wait_settled([scheduler], writes, timeout=600)
        triggered = int(scheduler.registrar.metrics.totals()["evaluations"] - evaluations)
    finally:
        scheduler.stop(10)
    best = min(samples)
    return (
        f"resync of {n} unchanged nodes (CPU of one pass; target <= 50 ms at 10,000)",
        f"{best * 1e3:.1f} ms (median {statistics.median(samples) * 1e3:.1f} ms); "
        f"{triggered} evaluations triggered",
    )


class _TimedCache(DeviceCache):
    """Records when each (node, first GPU's devmem) reached the cache (perf_counter)."""

    def __init__(self) -> None:
        super().__init__()
        self.changed: dict[tuple[str, int], float] = {}

    def put(self, node: str, entry: VendorEntry) -> None:
        super().put(node, entry)
        if entry.vendor_key == "NVIDIA" and entry.devices:
            self.changed.setdefault((node, entry.devices[0].devmem), time.perf_counter())


def bench_churn(n: int, rate: float, seconds: float) -> tuple[str, str]:
    """Register changes at ``rate`` per second: latency from the change to the cache."""
    cluster, _ = _populated(n)
    # As `hami scheduler run` configures it (the garbage collector's start state frozen once synced).
    config = SchedulerConfig(http_port=None, lease_namespace="bench", resync=1.0, freeze_gc_after_sync=True)
    scheduler = Scheduler(cluster, _rules(), config)
    timed = _TimedCache()
    scheduler.cache = timed
    scheduler.registrar.cache = timed
    scheduler.start()
    latencies: list[float] = []
    try:
        deadline = time.monotonic() + 600
        # Registered, and done with the start (the term's pass and the list's queued nodes): the
        # target is the steady state, changes arriving while nothing else is queued but resyncs.
        while not (scheduler.ready() and len(timed.nodes()) == n and scheduler.queue.idle()):
            assert time.monotonic() < deadline, "the daemon did not register every node in 10 minutes"
            time.sleep(0.05)
        rng = random.Random(7)
        changes: list[tuple[str, int, float]] = []
        start = time.perf_counter()
        for k in range(int(rate * seconds)):
            due = start + k / rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            i = rng.randrange(n)
            name = f"node-{i}"
            cluster.patch_node_annotations(name, {"hami.io/node-nvidia-register": nvidia(i, 1000 + k)})
            changes.append((name, 1000 + k, time.perf_counter()))
        time.sleep(1.0)
        for name, devmem, at in changes:
            seen = timed.changed.get((name, devmem))
            if seen is not None:
                latencies.append(seen - at)
    finally:
        scheduler.stop(10)
    latencies.sort()
    missed = len(changes) - len(latencies)
    p50 = latencies[len(latencies) // 2] * 1e3
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3
    return (
        f"churn: {rate:g} register changes/s for {seconds:g} s at {n} nodes, resync every 1 s "
        "(change -> cache; target p99 < 50 ms)",
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1] * 1e3:.1f} ms"
        + (f" ({missed} superseded by a later change)" if missed else ""),
    )


class _RemovalTimes(DeviceCache):
    """Records when each node's DCU entry left the cache (perf_counter)."""

    def __init__(self) -> None:
        super().__init__()
        self.removed: dict[str, float] = {}

    def remove(self, node: str, vendor_key: str) -> None:
        super().remove(node, vendor_key)
        if vendor_key == "DCU":
            self.removed.setdefault(node, time.perf_counter())


def bench_cleanup(n: int, dead: int) -> tuple[str, str]:
    """``dead`` DCU plugins of ``n`` registered nodes die one second apart: for each, the latency from its
    cleanup becoming allowed (the fake clock passing its stamp's window) to its DCUs leaving the cache."""
    logging.getLogger("hami_core").setLevel(logging.ERROR)  # one warning per cleanup, not the point here
    cluster, writes = _populated(n)
    clock = FakeClock()
    window = 60.0
    config = SchedulerConfig(
        http_port=None, lease_namespace="bench", resync=15.0, handshake_window=window, qps=1e9, burst=10**9
    )
    scheduler = Scheduler(cluster, _rules(), config, clock=clock)
    timed = _RemovalTimes()
    scheduler.cache = timed
    scheduler.registrar.cache = timed
    dying = [f"node-{i}" for i in random.Random(11).sample(range(n), dead)]
    latencies: list[float] = []

    def step(seconds: float) -> None:
        clock.advance(seconds)
        wait_settled([scheduler], writes, timeout=600)

    def report(name: str) -> None:
        value = {"hami.io/node-handshake-dcu": format_report(clock.now())}
        writes.saw(cluster.patch_node_annotations(name, value))

    scheduler.start()
    try:
        wait_settled([scheduler], writes, timeout=600)  # every node registered and stamped
        assert len(timed.nodes()) == n
        step(1.0)
        for i in range(n):  # every plugin answers; the scheduler stamps each node again
            report(f"node-{i}")
        wait_settled([scheduler], writes, timeout=600)
        for name in dying:  # one a second: a last answer, then kubelet counts its devices as 0
            step(1.0)
            report(name)
            writes.saw(cluster.patch_node_status(name, {**ALLOCATABLE, "hygon.com/dcunum": "0"}))
            wait_settled([scheduler], writes, timeout=600)
        # Half a second before the first dying node's stamp expires (the others' stamps expired a
        # moment ago: they are alive, so they are stamped again).
        step(window - dead + 0.5)
        assert not timed.removed, "a vendor was cleaned up before its window passed"
        for name in dying:
            allowed = time.perf_counter()
            step(1.0)  # this node's cleanup becomes allowed, and only this one's
            assert set(timed.removed) <= set(dying) and name in timed.removed, (name, sorted(timed.removed))
            latencies.append(timed.removed[name] - allowed)
    finally:
        scheduler.stop(10)
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1e3
    return (
        f"cleanup: {dead} of {n} nodes' DCU plugins die, a second apart (cleanup allowed -> "
        "vendor out of the cache)",
        f"p50 {p50:.2f} ms, max {latencies[-1] * 1e3:.2f} ms",
    )


def _stalled(scheduler: Scheduler, n: int) -> None:
    """What a daemon that did not finish was at, and every thread's stack, on stderr."""
    print(
        f"daemon stalled: {len(scheduler.cache.nodes())} of {n} nodes cached, writer "
        f"{dict(scheduler.writer.counters)}, leader {scheduler.elector.is_leader()}, queue idle "
        f"{scheduler.queue.idle()}, writer idle {scheduler.writer.idle()}, writes pending "
        f"{scheduler.view.pending()}, list due {scheduler.reflector.listing_due()}",
        file=sys.stderr,
    )
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)


def bench_daemon(n: int, qps: float, burst: int) -> tuple[str, str]:
    cluster, _ = _populated(n)
    config = SchedulerConfig(
        http_port=None,
        qps=qps,
        burst=burst,
        lease_namespace="bench",
        retry_period=0.2,
        renew_deadline=1.0,
        lease_duration=2.0,
    )
    scheduler = Scheduler(cluster, _rules(), config)
    start = time.perf_counter()
    scheduler.start()
    try:
        while True:
            if len(scheduler.cache.nodes()) == n and scheduler.writer.counters["patches"] >= n:
                break
            if time.perf_counter() - start > 600:
                _stalled(scheduler, n)
                raise SystemExit("daemon benchmark did not finish in 10 minutes")
            time.sleep(0.05)
        took = time.perf_counter() - start
    finally:
        scheduler.stop(10)
    limit = f"qps {qps:g}, burst {burst}" if qps < 1e6 else "no write limit"
    return (
        f"daemon: {n} new nodes stamped and registered ({limit})",
        f"{took:.1f} s ({n / took:.0f} nodes/s)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--daemon-nodes", type=int, default=2000)
    parser.add_argument("--churn-seconds", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = parser.parse_args()
    n, d, churn = (200, 100, 2.0) if args.quick else (args.nodes, args.daemon_nodes, args.churn_seconds)
    rows = bench_registrar(n)
    rows.append(bench_resync(n))
    rows.append(bench_churn(n, 100.0, churn))
    rows.append(bench_cleanup(n, 5 if args.quick else 20))
    rows.append(bench_daemon(d, 200.0, 400))
    print("| measurement | result |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
