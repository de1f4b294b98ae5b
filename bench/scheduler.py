"""Scheduler benchmark: what registering and re-checking N nodes costs, in time and memory.

- registrar, cold pass: every node new (decode, stamp, cache), 4 vendors per node;
- registrar, warm pass: a resync over unchanged nodes (no decode, no write: should be far cheaper);
- memory held per node (cache + scheduler memory), measured with tracemalloc;
- daemon end to end on the in-memory cluster: time from start until every node is stamped and
  registered, with the default write limits (qps 200, burst 400) and with no effective limit.

Prints a Markdown table. Figures vary with machine load: compare rows of one run, not across runs.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from datetime import datetime, timedelta

from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import NodeSnapshot
from hami_core.plugins.manager import load_drivers
from hami_core.scheduler.cache import DeviceCache
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.registrar import Registrar

GPU = ('{"id":"GPU-%s-%d","index":%d,"count":10,"devmem":32768,"devcore":100,'
       '"type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true}')


def annotations(i: int) -> dict[str, str]:
    gpus = ",".join(GPU % (i, k, k) for k in range(8))
    dcu = "".join(f"DCU-{i}-{k},4,16384,100,DCU-Z100,0,true,{k},hami:" for k in range(4))
    return {
        "hami.io/node-nvidia-register": f"[{gpus}]",
        "hami.io/node-dcu-register": dcu,
        "hami.io/node-mlu-register": f"MLU-{i},10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:",
        "hami.io/node-register-xpu": f'[{{"id":"XPU-{i}","count":4,"devmem":98304,"devcore":100,'
                                     f'"type":"P800","health":true}}]',
    }


ALLOCATABLE = {"nvidia.com/gpu": "80", "hygon.com/dcunum": "16", "cambricon.com/mlu": "10",
               "kunlunxin.com/vxpu": "4"}


def bench_registrar(n: int) -> list[tuple[str, str]]:
    _, drivers = load_drivers()
    rules = [d.rules() for d in drivers]
    snapshots = [NodeSnapshot(name=f"node-{i}", uid=str(i), annotations=annotations(i),
                              allocatable=ALLOCATABLE) for i in range(n)]
    now = datetime.now().astimezone()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    measured = Registrar(rules, DeviceCache())
    for s in snapshots:
        measured.evaluate(s.name, s, now=now, writes=True)
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del measured
    gc.collect()
    registrar = Registrar(rules, DeviceCache())
    start = time.perf_counter()
    patches = [registrar.evaluate(s.name, s, now=now, writes=True).patch for s in snapshots]
    cold = time.perf_counter() - start
    stamped = [NodeSnapshot(name=s.name, uid=s.uid, annotations={**s.annotations, **p},  # type: ignore[dict-item]
                            allocatable=s.allocatable) for s, p in zip(snapshots, patches, strict=True)]
    later = now + timedelta(seconds=5)
    start = time.perf_counter()
    writes = sum(bool(registrar.evaluate(s.name, s, now=later, writes=True).patch) for s in stamped)
    warm = time.perf_counter() - start
    assert writes == 0, "a warm pass must write nothing"
    return [
        (f"registrar cold pass, {n} nodes x 4 vendors", f"{cold * 1e6 / n:.0f} µs/node ({cold:.2f} s)"),
        (f"registrar warm pass (resync, unchanged), {n} nodes", f"{warm * 1e6 / n:.0f} µs/node ({warm:.2f} s)"
         f"; cold/warm = {cold / warm:.0f}x"),
        (f"memory held per node ({n} nodes, 13 devices each)", f"{held / n / 1024:.1f} KiB"),
    ]


def bench_daemon(n: int, qps: float, burst: int) -> tuple[str, str]:
    cluster = MemoryCluster(history=max(1000, 4 * n))
    cluster.create_namespace("bench")
    _, drivers = load_drivers()
    for i in range(n):
        cluster.create_node(f"node-{i}", annotations=annotations(i))
    config = SchedulerConfig(http_port=None, qps=qps, burst=burst, lease_namespace="bench",
                             retry_period=0.2, renew_deadline=1.0, lease_duration=2.0)
    scheduler = Scheduler(cluster, [d.rules() for d in drivers], config)
    start = time.perf_counter()
    scheduler.start()
    try:
        while True:
            if len(scheduler.cache.nodes()) == n and scheduler.writer.counters["patches"] >= n:
                break
            if time.perf_counter() - start > 600:
                raise SystemExit("daemon benchmark did not finish in 10 minutes")
            time.sleep(0.05)
        took = time.perf_counter() - start
    finally:
        scheduler.stop(10)
    limit = f"qps {qps:g}, burst {burst}" if qps < 1e6 else "no write limit"
    return (f"daemon: {n} new nodes stamped and registered ({limit})",
            f"{took:.1f} s ({n / took:.0f} nodes/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--daemon-nodes", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = parser.parse_args()
    n, d = (200, 100) if args.quick else (args.nodes, args.daemon_nodes)
    rows = bench_registrar(n)
    rows.append(bench_daemon(d, 200.0, 400))
    rows.append(bench_daemon(d, 1e9, 10**9))
    print("| measurement | result |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
