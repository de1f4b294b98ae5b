"""The ``Cluster`` port over the official ``kubernetes`` client (37.x).

The client does authentication, TLS and the HTTP calls; bodies are raw JSON both ways. Every call passes
``_preload_content=False`` and parses the response with ``json.loads`` into the port's snapshots, so no
client model object is ever built for a Node, and a watch is read line by line from the open response.
Errors become the port's ``ClusterError`` classes with a one-line message naming the verb and object.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from hami_core.kube.port import (
    ClusterError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    Lease,
    NodeList,
    NodeSnapshot,
    NotFound,
    Unavailable,
    WatchEvent,
)
from hami_core.kube.ratelimit import TokenBucket
from hami_core.kube.wire import lease_body, lease_from_json, node_snapshot, resource_version_of
from hami_core.protocol.errors import shorten

__all__ = ["KubeCluster", "api_error"]

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"


def _server_message(exc: ApiException) -> str:
    """The ``message`` of the Status body the server sent, else the HTTP reason."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        try:
            status = json.loads(body)
        except ValueError:
            return " ".join(body.split())[:300]
        if isinstance(status, dict) and isinstance(status.get("message"), str):
            return " ".join(status["message"].split())
    return str(exc.reason or "no reason given")


def api_error(action: str, status: int | None, message: str) -> ClusterError:
    """The port's error class for an HTTP ``status`` (``None``: no answer at all)."""
    text = f"{action}: {status} {message}" if status is not None else f"{action}: {message}"
    if status == 404:
        return NotFound(text, status=status)
    if status == 409:
        return Conflict(text, status=status)
    if status == 410:
        return Gone(text, status=status)
    if status in (401, 403):
        return Forbidden(text, status=status)
    if status in (400, 422):
        return Invalid(text, status=status)
    if status is None or status == 429 or status >= 500:
        return Unavailable(text, status=status)
    return ClusterError(text, status=status)


def _translate(action: str, exc: BaseException) -> NoReturn:
    if isinstance(exc, ApiException):
        raise api_error(action, exc.status, _server_message(exc)) from None
    if isinstance(exc, ValueError):  # the client's own validation of a typed body (pydantic)
        detail = " ".join(str(exc).split())[:300]
        raise Invalid(f"{action}: the request body was refused before sending: {detail}") from None
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
        detail = " ".join(str(exc).split())[:300]
        raise Unavailable(f"{action}: {type(exc).__name__}: {detail}") from None
    raise exc


def _read_json(action: str, response: Any) -> dict[str, Any]:
    try:
        data = response.data
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        _translate(action, exc)
    finally:
        response.release_conn()
    try:
        body = json.loads(data)
    except ValueError:
        raise ClusterError(
            f"{action}: the server answered with invalid JSON: {shorten(repr(data))}"
        ) from None
    if not isinstance(body, dict):
        raise ClusterError(f"{action}: the server answered with {type(body).__name__}, expected an object")
    return body


class KubeCluster:
    """The port over a ``kubernetes.client.ApiClient``.

    ``limiter`` (optional) is acquired before every request, like client-go's QPS/Burst.
    ``connect_timeout`` and ``request_timeout`` bound every non-watch call; a watch's read timeout is its
    ``timeout_seconds`` plus 30 s so a half-open connection cannot hang it forever.
    """

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        limiter: TokenBucket | None = None,
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
    ) -> None:
        self.api_client = api_client
        self._core = k8s.CoreV1Api(api_client)
        self._coordination = k8s.CoordinationV1Api(api_client)
        self._limiter = limiter
        self._connect_timeout = connect_timeout
        self._timeout = (connect_timeout, request_timeout)

    @classmethod
    def from_configuration(cls, configuration: k8s.Configuration, **kwargs: Any) -> KubeCluster:
        """Over an already built client ``Configuration``."""
        return cls(k8s.ApiClient(configuration), **kwargs)

    @classmethod
    def from_kubeconfig(cls, path: str, *, context: str | None = None, **kwargs: Any) -> KubeCluster:
        """From a kubeconfig file (and optionally one of its contexts)."""
        configuration = k8s.Configuration()
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path, context=context, client_configuration=configuration
            )
        except (k8s_config.ConfigException, OSError, ValueError) as exc:
            raise ClusterError(f"kubeconfig {path}: {' '.join(str(exc).split())}") from None
        return cls.from_configuration(configuration, **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> KubeCluster:
        """From the Pod's service account (``KUBERNETES_SERVICE_HOST`` and the mounted token)."""
        configuration = k8s.Configuration()
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except k8s_config.ConfigException as exc:
            raise ClusterError(f"in-cluster config: {' '.join(str(exc).split())}") from None
        return cls.from_configuration(configuration, **kwargs)

    def close(self) -> None:
        self.api_client.close()  # type: ignore[no-untyped-call]

    def _call(self, action: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        """One request with the rate limit, the timeouts and the error mapping; the body as JSON."""
        if self._limiter is not None:
            self._limiter.acquire()
        kwargs.setdefault("_request_timeout", self._timeout)
        try:
            response = method(*args, _preload_content=False, **kwargs)
        except Exception as exc:
            _translate(action, exc)
        return _read_json(action, response)

    # -- nodes: read ----------------------------------------------------------------------------------

    def get_node(self, name: str) -> NodeSnapshot:
        """One Node (the reporter reads its own; the scheduler never GETs a single Node)."""
        return node_snapshot(self._call(f"get node {name!r}", self._core.read_node, name))

    def list_nodes(
        self, *, label_selector: str = "", limit: int = 500, continue_token: str | None = None
    ) -> NodeList:
        body = self._call(
            "list nodes",
            self._core.list_node,
            label_selector=label_selector or None,
            limit=limit if limit > 0 else None,
            _continue=continue_token or None,
        )
        items = body.get("items") or []
        if not isinstance(items, list):
            raise ClusterError("list nodes: the server answered with items that are not a list")
        meta = body.get("metadata") or {}
        token = meta.get("continue") or None
        return NodeList(
            items=tuple(node_snapshot(item) for item in items),
            resource_version=resource_version_of(body, "NodeList"),
            continue_token=token if isinstance(token, str) else None,
        )

    def watch_nodes(
        self,
        *,
        resource_version: str,
        label_selector: str = "",
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> KubeWatch:
        action = f"watch nodes from resourceVersion {resource_version or '(now)'}"
        if self._limiter is not None:
            self._limiter.acquire()
        try:
            response = self._core.list_node(
                watch=True,
                resource_version=resource_version or None,
                label_selector=label_selector or None,
                allow_watch_bookmarks=allow_bookmarks,
                timeout_seconds=timeout_seconds,
                _preload_content=False,
                _request_timeout=(self._connect_timeout, timeout_seconds + 30),
            )
        except ApiException as exc:
            if exc.status != 410:
                _translate(action, exc)
            return KubeWatch(action, None, gone=api_error(action, exc.status, _server_message(exc)))
        except Exception as exc:
            _translate(action, exc)
        return KubeWatch(action, response)

    # -- nodes: write ---------------------------------------------------------------------------------

    def merge_patch_node(self, name: str, patch: Mapping[str, Any]) -> NodeSnapshot:
        """One JSON merge patch of the Node itself (status changes are ignored by the server).

        Not part of the port; ``metadata.resourceVersion`` in ``patch`` is a precondition.
        """
        body = self._call(
            f"patch node {name!r}", self._core.patch_node, name, dict(patch), _content_type=MERGE_PATCH
        )
        return node_snapshot(body)

    def patch_node_annotations(
        self, name: str, changes: Mapping[str, str | None], *, resource_version: str | None = None
    ) -> NodeSnapshot:
        metadata: dict[str, Any] = {"annotations": dict(changes)}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return self.merge_patch_node(name, {"metadata": metadata})

    def patch_node_status(self, name: str, allocatable: Mapping[str, str | None]) -> NodeSnapshot:
        changes = dict(allocatable)
        body = self._call(
            f"patch node status {name!r}",
            self._core.patch_node_status,
            name,
            {"status": {"allocatable": changes, "capacity": changes}},
            _content_type=MERGE_PATCH,
        )
        return node_snapshot(body)

    def create_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> NodeSnapshot:
        metadata: dict[str, Any] = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
        return node_snapshot(self._call(f"create node {name!r}", self._core.create_node, body))

    def delete_node(self, name: str) -> None:
        self._call(f"delete node {name!r}", self._core.delete_node, name)

    # -- leases ---------------------------------------------------------------------------------------

    def get_lease(self, namespace: str, name: str) -> Lease:
        action = f"get lease {namespace}/{name}"
        return lease_from_json(self._call(action, self._coordination.read_namespaced_lease, name, namespace))

    def create_lease(self, lease: Lease) -> Lease:
        action = f"create lease {lease.namespace}/{lease.name}"
        body = lease_body(lease)
        return lease_from_json(
            self._call(action, self._coordination.create_namespaced_lease, lease.namespace, body)
        )

    def update_lease(self, lease: Lease) -> Lease:
        action = f"update lease {lease.namespace}/{lease.name}"
        method = self._coordination.replace_namespaced_lease
        return lease_from_json(self._call(action, method, lease.name, lease.namespace, lease_body(lease)))

    # -- events ---------------------------------------------------------------------------------------

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        self._call(
            f"create event in {namespace!r}", self._core.create_namespaced_event, namespace, dict(body)
        )

    def events(self, namespace: str) -> list[dict[str, Any]]:
        """The Events of ``namespace`` as raw JSON. Not part of the port; for tests and tools."""
        body = self._call(f"list events in {namespace!r}", self._core.list_namespaced_event, namespace)
        items = body.get("items") or []
        return [item for item in items if isinstance(item, dict)]


class KubeWatch:
    """An open watch response, read line by line. ``close()`` from another thread ends the iteration."""

    def __init__(self, action: str, response: Any, *, gone: ClusterError | None = None) -> None:
        self._action = action
        self._response = response
        self._gone = gone
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        response = self._response
        if response is None:
            return
        with contextlib.suppress(ValueError, RuntimeError, OSError):
            response.shutdown()  # wakes a reader blocked in recv() on another thread
        with contextlib.suppress(urllib3.exceptions.HTTPError, OSError):
            response.release_conn()

    def __iter__(self) -> Iterator[WatchEvent]:
        if self._gone is not None:
            raise self._gone
        try:
            for line in self._lines():
                if self._closed.is_set():
                    return
                event = self._parse(line)
                if event is not None:
                    yield event
        finally:
            self._response.release_conn()

    def _lines(self) -> Iterator[bytes]:
        buffer = b""
        try:
            for chunk in self._response.stream(amt=None, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                yield from (line for line in lines if line.strip())
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if self._closed.is_set():
                return
            _translate(self._action, exc)
        if buffer.strip() and not self._closed.is_set():
            yield buffer

    def _parse(self, line: bytes) -> WatchEvent | None:
        try:
            event = json.loads(line)
            kind, obj = event["type"], event["object"]
        except (ValueError, KeyError, TypeError):
            raise Unavailable(f"{self._action}: unreadable watch line {shorten(repr(line))}") from None
        if not isinstance(obj, dict):
            raise Unavailable(f"{self._action}: watch event {kind!r} without an object")
        if kind == "ERROR":
            code = obj.get("code")
            message = obj["message"] if isinstance(obj.get("message"), str) else json.dumps(obj)
            raise api_error(self._action, code if isinstance(code, int) else 500, " ".join(message.split()))
        if kind == "BOOKMARK":
            return WatchEvent(type="BOOKMARK", resource_version=resource_version_of(obj, "BOOKMARK"))
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            node = node_snapshot(obj)
            return WatchEvent(type=kind, resource_version=node.resource_version, node=node)
        log.warning("%s: ignoring a watch event of unknown type %r", self._action, kind)
        return None
