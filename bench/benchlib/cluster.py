"""A real kube-apiserver for one benchmark run, and what the benchmark itself asks of it.

``BenchCluster.start(workdir)`` starts etcd and kube-apiserver with the test harness
(``tests/harness/apiserver.py``) and stops them on exit. The benchmark talks to the server as ``admin``
over a keep-alive connection pool (urllib3): node creation from many threads, patches, lists, the
server's ``/metrics``, and an ``AnnotationWatch`` that timestamps changes of chosen annotations.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import urllib3
from harness.apiserver import ApiServer, ApiServerError, start_apiserver, stop_apiserver

from benchlib.apimetrics import RequestKey, parse_request_totals

__all__ = ["AnnotationChange", "AnnotationWatch", "BenchCluster", "BenchError"]


class BenchError(RuntimeError):
    """The benchmark cannot go on: a clear, one-line reason."""


class BenchCluster:
    """The API server of one run, seen as ``admin``."""

    def __init__(self, server: ApiServer, pool_size: int = 32) -> None:
        self.server = server
        self._headers = {"Authorization": f"Bearer {server.token('admin')}", "Accept": "application/json"}
        self._pool = urllib3.PoolManager(
            num_pools=2,
            maxsize=pool_size,
            block=True,
            ca_certs=str(server.ca_file),
            retries=False,
            timeout=urllib3.Timeout(connect=10, read=60),
        )

    @classmethod
    @contextmanager
    def start(cls, workdir: Path) -> Iterator[BenchCluster]:
        try:
            server = start_apiserver(workdir)
        except ApiServerError as exc:
            raise BenchError(f"the API server did not start: {exc}") from exc
        cluster = cls(server)
        try:
            yield cluster
        finally:
            cluster._pool.clear()
            stop_apiserver(server)

    def kubeconfig(self, identity: str = "admin") -> str:
        return self.server.kubeconfig(identity)

    # -- plain requests ---------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        ok: Iterable[int] = (200, 201),
    ) -> Any:
        """One call; the decoded JSON answer. Any status not in ``ok`` is a ``BenchError``."""
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        resp = self._pool.request(method, self.server.url + path, body=data, headers=headers)
        if resp.status not in set(ok):
            text = resp.data.decode(errors="replace")[:300]
            raise BenchError(f"{method} {path} answered {resp.status}: {text}")
        return json.loads(resp.data) if resp.data else None

    def create_nodes(self, manifests: Sequence[Mapping[str, Any]], workers: int = 16) -> float:
        """Create every node (many at once); returns the seconds it took."""
        started = time.monotonic()

        def create(manifest: Mapping[str, Any]) -> None:
            self.request("POST", "/api/v1/nodes", manifest, ok=(201,))

        with ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(create, manifests):
                pass
        return time.monotonic() - started

    def create_node(self, manifest: Mapping[str, Any]) -> None:
        self.request("POST", "/api/v1/nodes", manifest, ok=(201,))

    def patch_annotations(self, node: str, annotations: Mapping[str, str | None]) -> None:
        """A JSON merge patch of the node's annotations (``None`` deletes a key)."""
        patch = {"metadata": {"annotations": dict(annotations)}}
        self.request(
            "PATCH", f"/api/v1/nodes/{quote(node)}", patch, content_type="application/merge-patch+json"
        )

    def list_nodes(self) -> tuple[list[dict[str, Any]], str]:
        """Every node (paged), and the resourceVersion of the list."""
        items: list[dict[str, Any]] = []
        token, version = "", ""
        while True:
            page = self.request("GET", f"/api/v1/nodes?limit=1000&continue={quote(token)}")
            items += page.get("items") or []
            version = page["metadata"]["resourceVersion"]
            token = page["metadata"].get("continue") or ""
            if not token:
                return items, version

    def events_about(self, node: str, event_type: str = "Warning") -> list[dict[str, Any]]:
        """Core Events about a node (the API server keeps Events about Nodes in ``default``)."""
        selector = quote(f"involvedObject.kind=Node,involvedObject.name={node},type={event_type}")
        events = self.request("GET", f"/api/v1/namespaces/default/events?fieldSelector={selector}")
        return list(events["items"])

    def request_totals(self) -> Counter[RequestKey]:
        """The server's ``apiserver_request_total`` right now."""
        resp = self._pool.request("GET", self.server.url + "/metrics", headers=self._headers)
        if resp.status != 200:
            raise BenchError(f"GET /metrics answered {resp.status}")
        return parse_request_totals(resp.data.decode())

    # -- the leader Lease HAMi's scheduler waits for ----------------------------------------------------

    def put_lease(self, namespace: str, name: str, holder: str, duration: int) -> None:
        """Create the Lease held by ``holder``, or renew it (one request either way once it exists)."""
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        patch = {"spec": {"holderIdentity": holder, "leaseDurationSeconds": duration, "renewTime": now}}
        try:
            self.request("PATCH", f"{path}/{name}", patch, content_type="application/merge-patch+json")
        except BenchError as exc:
            if " 404:" not in str(exc):
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {**patch["spec"], "acquireTime": now},
            }
            self.request("POST", path, body, ok=(201,))

    def watch(self, keys: Iterable[str]) -> AnnotationWatch:
        return AnnotationWatch(self, keys)

    def _stream(self, path: str) -> urllib3.BaseHTTPResponse:
        resp = self._pool.request(
            "GET",
            self.server.url + path,
            headers=self._headers,
            preload_content=False,
            timeout=urllib3.Timeout(connect=10, read=None),
        )
        if resp.status != 200:
            body = resp.read().decode(errors="replace")[:300]
            resp.release_conn()
            raise BenchError(f"GET {path} answered {resp.status}: {body}")
        return resp


@dataclass(frozen=True)
class AnnotationChange:
    """One watched annotation of one node changed (``value`` ``None``: removed) at ``at`` (monotonic)."""

    at: float
    node: str
    key: str
    value: str | None


@dataclass
class _NodeState:
    values: dict[str, str] = field(default_factory=dict)


class AnnotationWatch:
    """Watches Nodes from a list and records every change of the chosen annotations, with its time.

    The list happens in ``start`` (one LIST, before any measurement window opens); the watch itself is
    one long request, which the API server counts only when it ends, after ``stop``.
    """

    def __init__(self, cluster: BenchCluster, keys: Iterable[str]) -> None:
        self._cluster = cluster
        self._keys = frozenset(keys)
        self._lock = threading.Lock()
        self._nodes: dict[str, _NodeState] = {}
        self.changes: list[AnnotationChange] = []
        self._resp: urllib3.BaseHTTPResponse | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> AnnotationWatch:
        items, version = self._cluster.list_nodes()
        for item in items:
            self._observe(item, time.monotonic(), record=False)
        self._version = version
        self._thread = threading.Thread(target=self._run, name="bench-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        resp = self._resp
        if resp is not None:
            resp.shutdown()
        if self._thread is not None:
            self._thread.join(10)

    def check(self) -> None:
        """Raise if the watch broke (its record would be incomplete from then on)."""
        if self.error is not None:
            raise BenchError(f"the benchmark's node watch failed: {self.error}")

    def snapshot(self) -> dict[str, dict[str, str]]:
        with self._lock:
            return {name: dict(state.values) for name, state in self._nodes.items()}

    def _observe(self, obj: Mapping[str, Any], at: float, record: bool = True) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        annotations = meta.get("annotations") or {}
        state = self._nodes.setdefault(name, _NodeState())
        for key in self._keys:
            new = annotations.get(key)
            if state.values.get(key) != new:
                if record:
                    self.changes.append(AnnotationChange(at, name, key, new))
                if new is None:
                    state.values.pop(key, None)
                else:
                    state.values[key] = new

    def _run(self) -> None:
        try:
            while not self._stopping:
                path = (
                    f"/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=3600"
                    f"&resourceVersion={self._version}"
                )
                self._resp = self._cluster._stream(path)
                buffer = b""
                for chunk in self._resp.stream(65536, decode_content=True):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            self._event(json.loads(line), time.monotonic())
                self._resp.release_conn()
        except Exception as exc:  # a stop shuts the socket down under the reader: that is no error
            if not self._stopping:
                self.error = exc

    def _event(self, event: Mapping[str, Any], at: float) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise BenchError(f"watch error: {obj}")
        self._version = str((obj.get("metadata") or {}).get("resourceVersion", self._version))
        if kind == "BOOKMARK":
            return
        with self._lock:
            if kind == "DELETED":
                self._nodes.pop(str(obj["metadata"]["name"]), None)
            else:
                self._observe(obj, at)
