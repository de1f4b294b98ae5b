"""The official-client adapter's own parts: watch line parsing, error mapping, the rate limit, and
failures that need no server. Its behaviour as a cluster is covered by the contract suite."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from harness.admin import AdminKubeCluster
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from hami_core.kube.client import KubeCluster, KubeWatch, _translate, api_error
from hami_core.kube.port import (
    ClusterError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    Lease,
    NotFound,
    TooLarge,
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


def test_a_too_large_resource_version_is_told_from_other_timeouts() -> None:
    """kube-apiserver's ``storage.NewTooLargeResourceVersionError``: a 504 Timeout whose message (and
    cause ``ResourceVersionTooLarge``) says so; the store is behind the watch: list again."""
    too_large = {
        "kind": "Status",
        "code": 504,
        "reason": "Timeout",
        "message": "Too large resource version: 370, current: 211",
        "details": {"causes": [{"type": "ResourceVersionTooLarge", "message": "Too large resource version"}]},
    }
    with pytest.raises(TooLarge, match="Too large resource version: 370, current: 211"):
        list(KubeWatch("watch nodes", FakeResponse([line("ERROR", too_large)])))
    assert isinstance(api_error("list nodes", 504, "Too large resource version: 9, current: 2"), TooLarge)
    assert type(api_error("list nodes", 504, "Timeout: request did not complete")) is Unavailable


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


def _kubeconfig(server: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: c\n  cluster: {{server: {json.dumps(server)}}}\n"
        "users:\n- name: u\n  user: {token: x}\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("garbage", "not a valid kubeconfig: TypeError"),
        ("a: [", "not valid YAML: while parsing"),
        ("clusters: 5", "not a valid kubeconfig: TypeError"),
        (_kubeconfig("https://x").replace('"https://x"', "5"), "not a valid kubeconfig"),
    ],
)
def test_a_malformed_kubeconfig_is_a_one_line_error(tmp_path: Any, text: str, expected: str) -> None:
    path = tmp_path / "bad.kc"
    path.write_text(text)
    with pytest.raises(ClusterError) as caught:
        KubeCluster.from_kubeconfig(str(path))
    assert str(caught.value).startswith(f"kubeconfig {path}: {expected}")
    assert "\n" not in str(caught.value)


def test_an_undecodable_kubeconfig_is_a_one_line_error(tmp_path: Any) -> None:
    path = tmp_path / "bin.kc"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ClusterError, match=rf"^kubeconfig {path}: .*UnicodeDecodeError"):
        KubeCluster.from_kubeconfig(str(path))


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ("ht tp://[bad", "cannot be parsed: Failed to parse"),
        ("https://x:99999", "cannot be parsed"),
        ("localhost:6443", "does not start with https:// or http://"),
        ("https://:6443", "names no host"),
    ],
)
def test_a_server_url_no_request_could_use_is_refused_at_build(
    tmp_path: Any, server: str, problem: str
) -> None:
    path = tmp_path / "url.kc"
    path.write_text(_kubeconfig(server))
    with pytest.raises(ClusterError) as caught:
        KubeCluster.from_kubeconfig(str(path))
    assert type(caught.value) is ClusterError
    assert str(caught.value).startswith(f"kubeconfig {path}: the server URL {server!r} {problem}")


def test_an_in_cluster_server_url_no_request_could_use_is_refused_at_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def load(client_configuration: k8s.Configuration, **_: Any) -> None:
        client_configuration.host = "https://bad host:443"  # KUBERNETES_SERVICE_HOST="bad host"

    monkeypatch.setattr(k8s_config, "load_incluster_config", load)
    with pytest.raises(
        ClusterError, match=r"^in-cluster config: the server URL 'https://bad host:443' cannot"
    ):
        KubeCluster.in_cluster()


class BlackHole:
    """A server that accepts every connection and never answers; counts the connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)  # kept open: the client must time out, not see a close

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


LEASE = Lease(
    name="l",
    namespace="ns",
    holder_identity="me",
    lease_duration_seconds=15,
    acquire_time=datetime(2024, 1, 1, tzinfo=UTC),
    renew_time=datetime(2024, 1, 1, tzinfo=UTC),
    resource_version="1",
)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c: c.list_nodes(), id="GET list_nodes"),
        pytest.param(lambda c: c.get_node("n1"), id="GET get_node"),
        pytest.param(lambda c: c.update_lease(LEASE), id="PUT update_lease"),
        pytest.param(lambda c: c.delete_lease("ns", "l"), id="DELETE delete_lease"),
        pytest.param(lambda c: c.patch_node_annotations("n1", {"a": "1"}), id="PATCH patch_node_annotations"),
    ],
)
def test_a_server_that_never_answers_costs_one_request_and_request_timeout(
    call: Callable[[KubeCluster], Any],
) -> None:
    server = BlackHole()
    configuration = k8s.Configuration()
    configuration.host = server.url
    cluster = KubeCluster.from_configuration(configuration, connect_timeout=0.5, request_timeout=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(Unavailable, match=r"ReadTimeoutError: .*read timeout=0\.5"):
            call(cluster)
        elapsed = time.monotonic() - started
    finally:
        cluster.close()
        server.close()
    # One connection: urllib3 did not retry (each retry would open another, which the server holds).
    assert len(server.held) == 1
    assert elapsed >= 0.4  # the read timeout was waited for, not skipped (a lower bound only: never flaky)


def test_a_tls_failure_is_unavailable_without_a_status() -> None:
    """The client reports a TLS failure as status 0; that is no HTTP status."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)

    def answer_in_plain_http() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = sock.accept()
                with conn:
                    conn.recv(1000)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\nplain http")

    threading.Thread(target=answer_in_plain_http, daemon=True).start()
    configuration = k8s.Configuration()
    configuration.host = f"https://127.0.0.1:{sock.getsockname()[1]}"
    configuration.verify_ssl = False
    cluster = KubeCluster.from_configuration(configuration, connect_timeout=2, request_timeout=2)
    try:
        with pytest.raises(Unavailable, match=r"^list nodes: SSLError") as caught:
            cluster.list_nodes()
    finally:
        cluster.close()
        sock.close()
    assert caught.value.status is None and "\n" not in str(caught.value)


class Canned:
    """An API server that answers every request with the next (status, body) of ``answers``."""

    def __init__(self, answers: list[tuple[int, bytes]]) -> None:
        queue = list(answers)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                status, body = queue.pop(0) if queue else (599, b"")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        configuration = k8s.Configuration()
        configuration.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.cluster = KubeCluster.from_configuration(configuration, connect_timeout=2, request_timeout=5)

    def close(self) -> None:
        self.cluster.close()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canned() -> Iterator[Callable[..., KubeCluster]]:
    servers: list[Canned] = []

    def serve(*bodies: bytes | str, status: int = 200) -> KubeCluster:
        raw = [body.encode() if isinstance(body, str) else body for body in bodies]
        servers.append(Canned([(status, body) for body in raw]))
        return servers[-1].cluster

    yield serve
    for server in servers:
        server.close()


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"items": [5], "metadata": {}}', "items[0] of type int, expected an object"),
        ('{"items": "x", "metadata": {}}', "items of type str, expected a list"),
        (DEEP, "JSON nested too deeply to parse"),
        ('{"items": [], "metadata": [1]}', "metadata of type list, expected an object"),
        ('{"items": [], "metadata": {"continue": 5}}', "metadata.continue 5, expected a string"),
        (
            '{"items": [], "metadata": {"resourceVersion": 5}}',
            "a malformed NodeList metadata.resourceVersion",
        ),
        ('{"items": [{"metadata": {"name": 5}}]}', "a malformed Node: metadata.name is 5"),
        ("[1, 2]", "list, expected an object"),
        ("<html>", "invalid JSON"),
    ],
)
def test_a_malformed_list_body_is_unavailable_naming_what_was_wrong(
    canned: Callable[..., KubeCluster], body: str, problem: str
) -> None:
    cluster = canned(body)
    with pytest.raises(Unavailable) as caught:
        cluster.list_nodes()
    assert str(caught.value).startswith(f"list nodes: the server answered with {problem}")
    assert caught.value.status is None and "\n" not in str(caught.value)


def test_a_malformed_object_body_is_unavailable(canned: Callable[..., KubeCluster]) -> None:
    cluster = canned('{"metadata": {"name": "n1", "annotations": {"a": 1}}}')
    with pytest.raises(Unavailable, match=r"^get node 'n1': the server answered with a malformed Node 'n1'"):
        cluster.get_node("n1")


def test_a_deeply_nested_error_body_is_still_an_error_with_its_status(
    canned: Callable[..., KubeCluster],
) -> None:
    cluster = canned(DEEP, status=500)
    with pytest.raises(Unavailable, match=r"^list nodes: 500 \[\[\[") as caught:
        cluster.list_nodes()
    assert caught.value.status == 500


@pytest.mark.parametrize(
    ("status", "problem"),
    [
        ({"code": True, "message": "x"}, "code true, which is not an HTTP status: x"),
        ({"code": "410", "message": "x"}, 'code "410", which is not an HTTP status: x'),
        ({"code": 0, "message": "x"}, "code 0, which is not an HTTP status: x"),
        ({"code": 1000, "message": "x"}, "code 1000, which is not an HTTP status: x"),
        ({"message": "x"}, "no code: x"),
        ({"code": [1]}, 'code [1], which is not an HTTP status: {"code": [1]}'),
    ],
)
def test_an_error_event_without_an_http_status_is_unavailable(status: dict[str, Any], problem: str) -> None:
    with pytest.raises(Unavailable) as caught:
        list(KubeWatch("watch nodes", FakeResponse([line("ERROR", status)])))
    assert str(caught.value) == f"watch nodes: watch ERROR event with {problem}"
    assert caught.value.status is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (DEEP.encode() + b"\n", "watch line nested too deeply to parse"),
        (b'{"type": "ADDED", "object": ' + DEEP.encode() + b"}\n", "watch line nested too deeply to parse"),
        (b"[1]\n", "unreadable watch line"),
        (b'{"type": 5, "object": {}}\n', "unreadable watch line"),
        (
            line("ADDED", {"metadata": {"name": "n1", "labels": [1]}}),
            "the server answered with a malformed Node",
        ),
    ],
)
def test_a_malformed_watch_line_is_unavailable(data: bytes, problem: str) -> None:
    with pytest.raises(Unavailable) as caught:
        list(KubeWatch("watch nodes", FakeResponse([data])))
    assert str(caught.value).startswith(f"watch nodes: {problem}")
    assert "\n" not in str(caught.value)


class CountingBucket(TokenBucket):
    def __init__(self) -> None:
        super().__init__(qps=1000, burst=1000)
        self.acquired = 0

    def acquire(self) -> float:
        self.acquired += 1
        return super().acquire()


def test_every_request_takes_a_token_and_identities_are_enforced(apiserver: Any) -> None:
    bucket = CountingBucket()
    admin = AdminKubeCluster.from_kubeconfig(apiserver.kubeconfig("admin"), limiter=bucket)
    name = f"client-{uuid.uuid4().hex[:10]}"
    node = admin.create_node(name)
    admin.patch_node_annotations(name, {"a": "1"})
    stream = admin.watch_nodes(resource_version=node.resource_version, timeout_seconds=1)
    stream.close()
    assert bucket.acquired == 3
    reporter = AdminKubeCluster.from_kubeconfig(apiserver.kubeconfig(apiserver.reporter("node-a")))
    with pytest.raises(Forbidden, match="create node"):
        reporter.create_node(f"{name}-x")
    admin.delete_node(name)
    admin.close()
    reporter.close()


def test_a_credentials_failure_during_a_call_is_a_cluster_error() -> None:
    with pytest.raises(ClusterError, match=r"^list nodes: cannot get credentials: exec plugin failed$"):
        _translate("list nodes", k8s_config.ConfigException("exec plugin\nfailed"))
