"""The official-client adapter's own parts: watch line parsing, error mapping, the rate limit, and
failures that need no server. Its behaviour as a cluster is covered by the contract suite."""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from hami_core.kube.client import KubeCluster, KubeWatch, api_error
from hami_core.kube.port import (
    ClusterError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Unavailable,
)
from hami_core.kube.ratelimit import TokenBucket

NODE = {"metadata": {"name": "n1", "uid": "u1", "resourceVersion": "7", "annotations": {"a": "1"}}}


class FakeResponse:
    """Stands in for the urllib3 response of a watch: yields the given chunks, then ends."""

    def __init__(self, chunks: list[bytes], block: threading.Event | None = None) -> None:
        self.chunks = chunks
        self.block = block
        self.released = 0
        self.shut = False

    def stream(self, amt: Any = None, decode_content: Any = None) -> Iterator[bytes]:
        yield from self.chunks
        if self.block is not None:
            self.block.wait(10)

    def shutdown(self) -> None:
        self.shut = True
        if self.block is not None:
            self.block.set()

    def release_conn(self) -> None:
        self.released += 1


def line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def test_watch_lines_split_across_chunks_are_joined() -> None:
    data = line("ADDED", NODE) + line("BOOKMARK", {"metadata": {"resourceVersion": "9"}})
    response = FakeResponse([data[:10], data[10:50], data[50:]])
    events = list(KubeWatch("watch nodes", response))
    assert [(e.type, e.resource_version) for e in events] == [("ADDED", "7"), ("BOOKMARK", "9")]
    assert events[0].node is not None and events[0].node.annotations == {"a": "1"}
    assert response.released >= 1


def test_an_error_event_410_is_gone_and_others_map_by_code() -> None:
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 1 (5)"}
    with pytest.raises(Gone, match="too old resource version"):
        list(KubeWatch("watch nodes", FakeResponse([line("ADDED", NODE), line("ERROR", gone)])))
    broken = {"kind": "Status", "code": 500, "message": "internal\nerror"}
    with pytest.raises(Unavailable, match="500 internal error"):
        list(KubeWatch("watch nodes", FakeResponse([line("ERROR", broken)])))


def test_an_unreadable_watch_line_is_unavailable() -> None:
    with pytest.raises(Unavailable, match="unreadable watch line"):
        list(KubeWatch("watch nodes", FakeResponse([b"{not json\n"])))


def test_a_gone_status_at_open_is_raised_by_iteration() -> None:
    watch = KubeWatch("watch nodes", None, gone=Gone("watch nodes: 410 gone", status=410))
    with pytest.raises(Gone):
        list(watch)
    watch.close()


def test_close_from_another_thread_ends_a_blocked_read() -> None:
    block = threading.Event()
    response = FakeResponse([line("ADDED", NODE)], block=block)
    watch = KubeWatch("watch nodes", response)
    threading.Timer(0.1, watch.close).start()
    events = list(watch)
    assert [e.type for e in events] == ["ADDED"] and response.shut


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (404, NotFound),
        (409, Conflict),
        (410, Gone),
        (401, Forbidden),
        (403, Forbidden),
        (400, Invalid),
        (422, Invalid),
        (429, Unavailable),
        (500, Unavailable),
        (503, Unavailable),
        (None, Unavailable),
        (418, ClusterError),
    ],
)
def test_status_codes_map_to_port_errors(status: int | None, error: type[ClusterError]) -> None:
    err = api_error("patch node 'n1'", status, "the message")
    assert type(err) is error
    assert err.status == status and str(err).startswith("patch node 'n1': ")
    assert "\n" not in str(err)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_server_is_unavailable() -> None:
    configuration = k8s.Configuration()
    configuration.host = f"http://127.0.0.1:{_closed_port()}"
    configuration.retries = 0
    cluster = KubeCluster.from_configuration(configuration, connect_timeout=2, request_timeout=2)
    with pytest.raises(Unavailable, match="patch node 'n1'"):
        cluster.patch_node_annotations("n1", {"a": "1"})
    with pytest.raises(Unavailable, match="watch nodes"):
        cluster.watch_nodes(resource_version="1")
    cluster.close()


def test_a_missing_kubeconfig_is_a_clear_error(tmp_path: Any) -> None:
    with pytest.raises(ClusterError, match="kubeconfig"):
        KubeCluster.from_kubeconfig(str(tmp_path / "missing.kubeconfig"))


class CountingBucket(TokenBucket):
    def __init__(self) -> None:
        super().__init__(qps=1000, burst=1000)
        self.acquired = 0

    def acquire(self) -> float:
        self.acquired += 1
        return super().acquire()


def test_every_request_takes_a_token_and_identities_are_enforced(apiserver: Any) -> None:
    bucket = CountingBucket()
    admin = KubeCluster.from_kubeconfig(apiserver.kubeconfig("admin"), limiter=bucket)
    name = f"client-{uuid.uuid4().hex[:10]}"
    node = admin.create_node(name)
    admin.patch_node_annotations(name, {"a": "1"})
    stream = admin.watch_nodes(resource_version=node.resource_version, timeout_seconds=1)
    stream.close()
    assert bucket.acquired == 3
    reporter = KubeCluster.from_kubeconfig(apiserver.kubeconfig(apiserver.reporter("node-a")))
    with pytest.raises(Forbidden, match="create node"):
        reporter.create_node(f"{name}-x")
    admin.delete_node(name)
    admin.close()
    reporter.close()
