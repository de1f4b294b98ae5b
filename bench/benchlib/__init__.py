"""What the process-level benchmarks (bench/coldstart.py, bench/peer.py) share.

- ``repo``: where the repository is, and the test harness on the import path;
- ``cluster``: a real kube-apiserver for one benchmark run, an HTTP client to it, fast node creation,
  and a watch that records when annotations change;
- ``apimetrics``: the API server's own request accounting (``apiserver_request_total``), diffed;
- ``nodes``: node manifests for each vendor;
- ``proc``: a daemon run as a child process, its CPU time and peak RSS read from ``/proc``;
- ``hami``: HAMi v2.10.0's own scheduler: where its source is, building it, running it with its Lease;
- ``table``: Markdown tables.
"""

from benchlib import repo  # noqa: F401  (first: puts tests/, home of the harness, on sys.path)
