"""Cold start on the real API server: ``hami scheduler run`` as a process against N pre-created Nodes.

For each size: a fresh kube-apiserver + etcd, N Nodes of mixed vendors created before the scheduler
starts (most with 8 NVIDIA GPUs in JSON plus 4 DCUs in the legacy encoding; some NVIDIA only, some MLU +
Kunlun, some with no devices), then the scheduler with its default limits, as the ``hami-scheduler``
identity with that role's RBAC. Reported:

- time from process start until every node is stamped and cached (polling the scheduler's ``/status``),
  then checked on the API server (every handshake present) and in the cache (node and device counts);
- API requests by verb, from the API server's own ``apiserver_request_total`` diffed around the run;
- the daemon's CPU time and peak RSS (``/proc``);
- what HAMi v2.10.0's design costs for the same cluster: a GET + PATCH for each stamp it writes (every
  node, each of its 5 handshake vendors), at client-go's default 5 requests/s.

Prints a Markdown table (``--nodes 5000 10000`` by default). A size of a few nodes is the smoke test.
``--vendors NAMES`` (default ``HAMI_VENDORS``, else every installed driver) is the daemon's selection; a
node then needs a stamp, and counts its devices, only for the selected vendors it carries (the others'
annotations stay on it, unread). The resident set sampled every second goes to the log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from benchlib.apimetrics import RequestKey, Requests
from benchlib.cluster import BenchCluster, BenchError
from benchlib.nodes import VENDORS, node_manifest
from benchlib.proc import Daemon, Usage, free_port, get_json
from benchlib.repo import hami_command
from benchlib.table import markdown_table

#: One slot per twentieth of the cluster, in an order that gives a few nodes every kind too.
MIX: tuple[Mapping[str, bool], ...] = (
    {},
    {"mlu": True, "kunlun": True},
    {"nvidia": True},
    *({"nvidia": True, "dcu": True},) * 16,
    {"nvidia": True},
)
#: HAMi v2.10.0's vendors with a handshake annotation in its chart's default device config (NVIDIA,
#: Hygon DCU, Kunlun vXPU, Vastai, Biren): it stamps each of them on every node, whatever the node has.
HAMI_HANDSHAKE_VENDORS = 5
HAMI_DEFAULT_QPS = 5.0  # client-go's default, and HAMi's --kube-qps default (chart: unset)
TARGET_SECONDS_10K = 60.0
TARGET_RSS_BYTES_10K = 150_000_000  # 150 MB = 143.05 MiB


@dataclass(frozen=True)
class Cluster:
    nodes: int
    with_devices: int
    devices: int
    manifests: tuple[dict[str, object], ...]
    handshakes: Mapping[str, tuple[str, ...]]  # node -> handshake keys it must carry


def make_cluster(n: int, selected: frozenset[str] = frozenset(VENDORS)) -> Cluster:
    """``n`` nodes of the mix; stamps and devices are expected only of the ``selected`` vendors."""
    manifests, handshakes, devices = [], {}, 0
    for i in range(n):
        name = f"cold-{i:05d}"
        vendors = MIX[i % len(MIX)]
        manifests.append(node_manifest(name, vendors))
        handshakes[name] = tuple(VENDORS[v].handshake for v in vendors if v in selected)
        devices += sum(VENDORS[v].devices for v in vendors if v in selected)
    with_devices = sum(1 for keys in handshakes.values() if keys)
    return Cluster(n, with_devices, devices, tuple(manifests), handshakes)


@dataclass(frozen=True)
class Result:
    cluster: Cluster
    created_seconds: float
    seconds: float
    requests: Requests
    usage: Usage
    verified: str
    drivers: int


def selected_vendors(vendors: str | None) -> tuple[frozenset[str], int]:
    """The benchmark's vendors (``VENDORS``) whose register annotation a driver of the selection reads,
    and how many drivers the selection loads: ``hami vendors --json``, as the daemon would select."""
    argv = [str(hami_command()), "vendors", "--json", *(["--vendors", vendors] if vendors else [])]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BenchError(f"`hami vendors --json` failed: {done.stderr.strip().splitlines()[-1:]}")
    drivers = json.loads(done.stdout)
    read = {d["register_annotation"] for d in drivers}
    return frozenset(v.name for v in VENDORS.values() if v.register in read), len(drivers)


def run_size(
    n: int, workdir: Path, timeout: float, log: Callable[[str], None], vendors: str | None = None
) -> Result:
    selected, drivers = selected_vendors(vendors)
    cluster = make_cluster(n, selected)
    log(f"{n} nodes: starting kube-apiserver + etcd in {workdir}")
    with BenchCluster.start(workdir) as api:
        created = api.create_nodes(cluster.manifests)
        log(f"{n} nodes: created in {created:.1f} s; starting the scheduler")
        port = free_port()
        status_url = f"http://127.0.0.1:{port}/status"
        before = api.request_totals()
        argv = [
            str(hami_command()),
            "scheduler",
            "run",
            "--kubeconfig",
            api.kubeconfig("hami-scheduler"),
            "--http-listen",
            f"127.0.0.1:{port}",
            *(["--vendors", vendors] if vendors else []),
        ]
        log(f"{n} nodes: {drivers} drivers loaded; stamps expected for {', '.join(sorted(selected))}")
        rss: list[int] = []
        with Daemon("hami scheduler", argv, workdir / "scheduler.log") as daemon:
            started = daemon.started
            deadline = started + timeout
            while True:
                daemon.check_alive()
                if len(rss) <= (time.monotonic() - started):
                    rss.append(daemon.rss_bytes())
                status = get_json(status_url, timeout=5)
                if status is not None and _done(status, cluster, api, before):
                    seconds = time.monotonic() - started
                    break
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"{n} nodes: not every node stamped and cached after {timeout:.0f} s "
                        f"(last status: {_brief(status)})"
                    )
                time.sleep(0.1)
            usage = daemon.usage()
            requests = Requests(before, api.request_totals())
            verified = _verify(api, cluster, get_json(status_url))
        log(f"{n} nodes: stamped and cached in {seconds:.1f} s ({verified})")
        samples = " ".join(f"{b / 2**20:.0f}" for b in rss)
        log(f"{n} nodes: resident set (MiB) each second from start: {samples}")
    return Result(cluster, created, seconds, requests, usage, verified, drivers)


def _done(
    status: Mapping[str, Any], cluster: Cluster, api: BenchCluster, before: Counter[RequestKey]
) -> bool:
    if int(status.get("nodes_registered", -1)) < cluster.with_devices:
        return False
    counters = status.get("counters")
    if isinstance(counters, dict) and "patches" in counters:
        return int(counters["patches"]) >= cluster.with_devices
    # The daemon does not count its patches under that name: ask the API server's accounting instead.
    sent = Requests(before, api.request_totals()).count("PATCH", "nodes", ok=lambda c: c.startswith("2"))
    return sent >= cluster.with_devices


def _brief(status: object) -> str:
    if not isinstance(status, dict):
        return "no answer"
    return f"registered {status.get('nodes_registered')}, counters {status.get('counters')}"


def _verify(api: BenchCluster, cluster: Cluster, status: object) -> str:
    """Every node carries a scheduler stamp for each vendor it has and none for any other; the cache
    holds every node with devices and every device."""
    items, _ = api.list_nodes()
    all_keys = {v.handshake for v in VENDORS.values()}
    wrong = []
    for item in items:
        name = item["metadata"]["name"]
        annotations = item["metadata"].get("annotations") or {}
        stamped = {k for k in all_keys if str(annotations.get(k, "")).startswith("Requesting_")}
        if stamped != set(cluster.handshakes.get(name, ())):
            wrong.append(name)
    if wrong or len(items) != cluster.nodes:
        raise BenchError(
            f"{len(wrong)} node(s) not stamped as expected (e.g. {wrong[:3]}); {len(items)} nodes listed"
        )
    if not isinstance(status, dict) or status.get("devices") != cluster.devices:
        raise BenchError(f"the cache holds {_brief(status)} devices, expected {cluster.devices}")
    return f"all {cluster.with_devices} stamped on the API server, {cluster.devices} devices cached"


def _fmt_seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    hours, rest = divmod(round(seconds), 3600)
    spelled = f"{hours} h {rest // 60:02d} min" if hours else f"{rest / 60:.0f} min"
    return f"{seconds:,.0f} s ({spelled})"


def _mark(ok: bool) -> str:
    return "(met)" if ok else "(**missed**)"


def _at_10k(r: Result, ok: bool) -> str:
    """The verdict on a target stated for 10,000 nodes, shown only in that column."""
    return f" {_mark(ok)}" if r.cluster.nodes == 10_000 else ""


def table(results: Sequence[Result]) -> str:
    header = ["measurement", *(f"{r.cluster.nodes:,} nodes" for r in results), "target"]
    rows: list[list[str]] = []

    def row(name: str, cells: list[str], target: str = "") -> None:
        rows.append([name, *cells, target])

    row("drivers loaded (vendor keys)", [str(r.drivers) for r in results])
    row(
        "nodes with devices (each needs a stamp) / devices",
        [f"{r.cluster.with_devices:,} / {r.cluster.devices:,}" for r in results],
    )
    row("setup: nodes created before the scheduler starts", [f"{r.created_seconds:.1f} s" for r in results])
    row(
        "every node stamped and cached, from process start",
        [f"{r.seconds:.1f} s{_at_10k(r, r.seconds < TARGET_SECONDS_10K)}" for r in results],
        f"10,000 nodes under {TARGET_SECONDS_10K:.0f} s",
    )
    cells = []
    for r in results:
        patches = r.requests.count("PATCH", "nodes")
        per = patches / r.cluster.with_devices if r.cluster.with_devices else 0.0
        cells.append(f"{patches:,} ({per:.2f} per node) {_mark(patches == r.cluster.with_devices)}")
    row("PATCH nodes", cells, "one per node needing a stamp")
    gets = [r.requests.count("GET", "nodes") for r in results]
    row("GET of a single node", [f"{g} {_mark(g == 0)}" for g in gets], "0")
    row(
        "LIST / WATCH nodes",
        [f"{r.requests.count('LIST', 'nodes')} / {r.requests.count('WATCH', 'nodes')}" for r in results],
    )
    row("Events created", [str(r.requests.count("POST", "events")) for r in results])
    row(
        "Lease requests (the API server's own heartbeats included)",
        [Requests.describe(r.requests.by_verb("leases")) for r in results],
    )
    errors = [sum(r.requests.errors(["nodes", "events"]).values()) for r in results]
    row("node and Event requests answered with an error", [str(e) for e in errors], "0")
    row("daemon CPU time", [f"{r.usage.cpu_seconds:.1f} s" for r in results])
    row(
        "daemon peak RSS",
        [
            f"{r.usage.peak_rss_mib:.1f} MiB{_at_10k(r, r.usage.peak_rss_bytes < TARGET_RSS_BYTES_10K)}"
            for r in results
        ],
        f"10,000 x 8 GPUs under {TARGET_RSS_BYTES_10K / 1e6:.0f} MB ({TARGET_RSS_BYTES_10K / 2**20:.2f} MiB)",
    )
    hami = []
    for r in results:
        stamps = r.cluster.nodes * HAMI_HANDSHAKE_VENDORS
        took = _fmt_seconds(2 * stamps / HAMI_DEFAULT_QPS)
        hami.append(f"{stamps:,} stamps, {2 * stamps:,} requests: {took}")
    row(
        f"HAMi v2.10.0's design, same cluster (computed: {HAMI_HANDSHAKE_VENDORS} stamps per node, "
        f"each a GET + PATCH, at {HAMI_DEFAULT_QPS:g} requests/s)",
        hami,
    )
    return markdown_table(header, rows)


def machine() -> str:
    cores = len(os.sched_getaffinity(0))
    return (
        f"{date.today().isoformat()}, {platform.machine()} Linux, {cores} cores, "
        f"Python {platform.python_version()}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nodes",
        type=int,
        nargs="+",
        default=[5000, 10000],
        metavar="N",
        help="cluster sizes to measure, each on a fresh API server (default: 5000 10000)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds to wait for one size to finish (default 900)"
    )
    parser.add_argument(
        "--vendors",
        default=os.environ.get("HAMI_VENDORS") or None,
        metavar="NAMES",
        help="the daemon's --vendors (driver or plugin names, comma-separated; default HAMI_VENDORS, "
        "else every installed driver)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the API servers keep their files (default: a temporary directory)",
    )
    args = parser.parse_args(argv)
    for n in args.nodes:
        if not 1 <= n <= 100_000:
            parser.error(f"--nodes: {n} is not between 1 and 100000")
    if not 0 < args.timeout <= 86_400:
        parser.error(f"--timeout: {args.timeout:g} is not between 0 and 86400 seconds")
    if not hami_command().exists():
        print(f"error: {hami_command()} not found; run `bash scripts/bootstrap.sh` first", file=sys.stderr)
        return 2

    def log(message: str) -> None:
        print(f"[coldstart {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    results = []
    with tempfile.TemporaryDirectory(prefix="hami-coldstart-") as tmp:
        base = args.workdir or Path(tmp)
        try:
            for n in args.nodes:
                workdir = base / f"nodes-{n}-{time.monotonic_ns()}"
                results.append(run_size(n, workdir, args.timeout, log, args.vendors))
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print(f"Cold start on the real API server, measured {machine()}.\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
