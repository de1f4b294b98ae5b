"""The cluster port (``AdminCluster``) over the official ``kubernetes`` client: raw JSON bodies both ways
(``_preload_content=False``, no client models), errors as the port's classes in one line naming the verb
and object. A body the server should never send (not JSON, too deep, the wrong shape, an ERROR event
without a status) is ``Unavailable``, like a 5xx: the fault is the server's, and the answer is a retry."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Self, TypeVar
from urllib.parse import quote

import urllib3
import yaml  # type: ignore[import-untyped]  # the kubeconfig loader's parser; no stubs installed
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from hami_core.kube.port import (
    WATCH_READ_SLACK,
    AdminCluster,
    ClusterError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    Lease,
    NodeList,
    NodeOwners,
    NodePatcher,
    NodeSnapshot,
    NotFound,
    TooLarge,
    Unavailable,
    Untrusted,
    WatchEvent,
)
from hami_core.kube.ratelimit import TokenBucket
from hami_core.kube.wire import (
    lease_body,
    lease_from_json,
    node_owners,
    node_snapshot,
    resource_version_of,
)
from hami_core.protocol.errors import shorten

__all__ = ["KubeCluster", "api_error"]

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"

T = TypeVar("T")


def _flat(text: str, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    return " ".join(text.split())[:limit]


def _excerpt(value: object, limit: int = 120) -> str:
    """``value`` as compact one-line JSON for a message, cut in the middle when long."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    if len(text) > limit:
        half = (limit - 5) // 2
        text = f"{text[:half]} ... {text[-half:]}"
    return text


def _http_status(value: object) -> int | None:
    """``value`` when it is an HTTP status code (an int in 100..599, not a bool), else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
        return value
    return None


def _server_message(exc: ApiException) -> str:
    """The ``message`` of the Status body the server sent, else the HTTP reason; one line either way."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        try:
            status = json.loads(body)
        except (ValueError, RecursionError):
            return _flat(body)
        if isinstance(status, dict) and isinstance(status.get("message"), str):
            return " ".join(status["message"].split())
    return _flat(str(exc.reason or "no reason given"))


#: The message of kube-apiserver's 504 for a resourceVersion newer than its store (client-go's
#: ``isTooLargeResourceVersionError`` reads it too).
_TOO_LARGE = "Too large resource version"


def api_error(action: str, status: int | None, message: str) -> ClusterError:
    """The port's error class for an HTTP ``status`` (``None``: no answer at all)."""
    text = f"{action}: {status} {message}" if status is not None else f"{action}: {message}"
    if status == 404:
        return NotFound(text, status=status)
    if status == 409:
        return Conflict(text, status=status)
    if status == 410:
        return Gone(text, status=status)
    if status in (500, 504) and _TOO_LARGE in message:
        return TooLarge(text, status=status)
    if status in (401, 403):
        return Forbidden(text, status=status)
    if status in (400, 422):
        return Invalid(text, status=status)
    if status is None or status == 429 or status >= 500:
        return Unavailable(text, status=status)
    return ClusterError(text, status=status)


#: What a TLS verification failure says (OpenSSL's reason, Python's ssl and urllib3's host name check).
_UNTRUSTED = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "Hostname mismatch")


def _translate(action: str, exc: BaseException) -> NoReturn:
    text = f"{getattr(exc, 'reason', '')} {exc}"
    if any(marker in text for marker in _UNTRUSTED) and (
        isinstance(exc, urllib3.exceptions.HTTPError | OSError)
        or (isinstance(exc, ApiException) and not _http_status(exc.status))
    ):
        raise Untrusted(
            f"{action}: the API server's certificate cannot be verified ({_flat(text, 200)}): check the "
            "kubeconfig's certificate-authority and server name (in a Pod: the service account's ca.crt)"
        ) from None
    if isinstance(exc, ApiException):
        # status 0: the client never got an answer (it wraps a TLS failure so), which is no HTTP status
        raise api_error(action, _http_status(exc.status), _server_message(exc)) from None
    if isinstance(exc, urllib3.exceptions.LocationValueError):  # a ValueError too; checked at build time
        raise ClusterError(f"{action}: the server URL cannot be used: {_flat(str(exc))}") from None
    if isinstance(exc, ValueError):  # the client's own validation of a typed body (pydantic)
        raise Invalid(f"{action}: the request body was refused before sending: {_flat(str(exc))}") from None
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError):
        raise Unavailable(f"{action}: {type(exc).__name__}: {_flat(str(exc))}") from None
    if isinstance(exc, k8s_config.ConfigException):  # credentials refreshed during the call (exec plugin)
        raise ClusterError(f"{action}: cannot get credentials: {_flat(str(exc))}") from None
    raise exc


#: Connections kept open: the scheduler's --max-in-flight (16), the watch, elector, Events, headroom (the
#: client's default, CPU count x 5, is fewer, and each extra one costs a TLS handshake).
_POOL_SIZE = 32


@functools.cache
def _parameters(method: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(inspect.signature(method).parameters)


def _bad_body(action: str, problem: str) -> Unavailable:
    """A body the server should never have sent (see the module's docstring)."""
    return Unavailable(f"{action}: the server answered with {problem}")


def _parse_json(action: str, data: bytes) -> dict[str, Any]:
    try:
        body = json.loads(data)
    except RecursionError:
        raise _bad_body(action, f"JSON nested too deeply to parse: {shorten(repr(data))}") from None
    except ValueError:
        raise _bad_body(action, f"invalid JSON: {shorten(repr(data))}") from None
    if not isinstance(body, dict):
        raise _bad_body(action, f"{type(body).__name__}, expected an object")
    return body


def _items(action: str, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``items`` of a list body, each an object."""
    items = body.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise _bad_body(action, f"items of type {type(items).__name__}, expected a list")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise _bad_body(action, f"items[{index}] of type {type(item).__name__}, expected an object")
    return items


def _parsed(action: str, parse: Callable[[Mapping[str, Any]], T], obj: Mapping[str, Any]) -> T:
    """``parse(obj)``, with ``wire``'s error about a malformed object reported as a bad body."""
    try:
        return parse(obj)
    except ClusterError as exc:
        raise _bad_body(action, f"a {exc}") from None


def _server_url_problem(url: object) -> str | None:
    """Why urllib3 could not send a request to the server URL ``url``; ``None`` when it could."""
    if not isinstance(url, str) or not url:
        return f"the server URL {_excerpt(url)} is not a URL"
    try:
        parsed = urllib3.util.parse_url(url)
    except urllib3.exceptions.LocationParseError as exc:
        return f"the server URL {shorten(url)} cannot be parsed: {_flat(str(exc))}"
    if parsed.scheme not in (None, "http", "https"):
        return f"the server URL {shorten(url)} does not start with https:// or http://"
    if not parsed.host:
        return f"the server URL {shorten(url)} names no host"
    return None


class KubeCluster(NodePatcher):
    """The port over a ``kubernetes.client.ApiClient``; ``limiter`` is acquired before every request
    (client-go's QPS/Burst). The timeouts bound every non-watch call; a watch's read timeout is its
    ``timeout_seconds`` plus ``WATCH_READ_SLACK``, so a half-open connection is noticed. Each call is one
    request: an ``api_client`` passed in directly must set ``Configuration.retries = False`` itself."""

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
        self._timeout = (connect_timeout, request_timeout)

    @classmethod
    def from_kubeconfig(cls, path: str, *, context: str | None = None, **kwargs: Any) -> Self:
        """From a kubeconfig file (and optionally one of its contexts)."""
        source = f"kubeconfig {path}"
        configuration = k8s.Configuration()
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path, context=context, client_configuration=configuration
            )
        except (k8s_config.ConfigException, OSError) as exc:
            raise ClusterError(f"{source}: {_flat(str(exc), 1000)}") from None
        except yaml.YAMLError as exc:
            raise ClusterError(f"{source}: not valid YAML: {_flat(str(exc))}") from None
        except Exception as exc:  # a file of the wrong shape fails anywhere in the loader: TypeError, ...
            raise ClusterError(
                f"{source}: not a valid kubeconfig: {type(exc).__name__}: {_flat(str(exc))}"
            ) from None
        return cls.from_configuration(configuration, source, **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> Self:
        """From the Pod's service account (``KUBERNETES_SERVICE_HOST`` and the mounted token)."""
        source = "in-cluster config"
        configuration = k8s.Configuration()
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except k8s_config.ConfigException as exc:
            raise ClusterError(f"{source}: {_flat(str(exc), 1000)}") from None
        except Exception as exc:  # an unreadable token or CA file, ...
            raise ClusterError(f"{source}: {type(exc).__name__}: {_flat(str(exc))}") from None
        return cls.from_configuration(configuration, source, **kwargs)

    @classmethod
    def from_configuration(
        cls,
        configuration: k8s.Configuration,
        source: str = "client configuration",
        *,
        pool_size: int = _POOL_SIZE,
        **kwargs: Any,
    ) -> Self:
        """The cluster over ``configuration``, refusing a server URL no request could go to; urllib3's
        retries off (they would stretch a call to 4 x ``request_timeout``: the callers retry)."""
        problem = _server_url_problem(configuration.host)
        if problem is not None:
            raise ClusterError(f"{source}: {problem}")
        configuration.retries = False
        configuration.connection_pool_maxsize = pool_size
        try:
            api_client = k8s.ApiClient(configuration)
        except Exception as exc:  # e.g. a proxy URL urllib3 cannot parse
            raise ClusterError(f"{source}: {type(exc).__name__}: {_flat(str(exc))}") from None
        return cls(api_client, **kwargs)

    def close(self) -> None:
        self.api_client.close()  # type: ignore[no-untyped-call]

    def _call(self, action: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        """One request with the rate limit, the timeouts and the error mapping; the body as JSON."""
        return _parse_json(action, self._call_data(action, method, *args, **kwargs))

    def _call_data(self, action: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> bytes:
        """``_call``, the body as the server sent it."""
        response = self._open(action, method, *args, **kwargs)
        try:
            data: bytes = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            _translate(action, exc)
        finally:
            response.release_conn()
        return data

    def _open(self, action: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``_call``, the response still open (a watch streams it)."""
        if self._limiter is not None:
            self._limiter.acquire()
        kwargs.setdefault("_request_timeout", self._timeout)
        try:
            return method(*args, _preload_content=False, **kwargs)
        except Exception as exc:
            _translate(action, exc)

    def _raw(self, build: Callable[[], Any]) -> Callable[..., Any]:
        """A method for ``_call`` that sends the request ``build()`` serializes, as it is."""

        def send(*, _preload_content: bool, _request_timeout: Any) -> Any:
            return self.api_client._call_with_legacy_options(build(), {}, None, False, _request_timeout, True)

        return send

    def _unvalidated(self, api: Any, method: str, /, **params: Any) -> Callable[..., Any]:
        """``api.method(**params)`` built by the client's serializer, without its validation: that sends a
        Lease time with zero microseconds as a MicroTime the server refuses, and costs a quarter of a
        node patch's CPU."""
        serialize = getattr(api, f"_{method}_serialize")
        arguments = {**dict.fromkeys(_parameters(serialize)), "_host_index": 0, **params}
        return self._raw(lambda: serialize(**arguments))

    def get_node(self, name: str) -> NodeSnapshot:
        action = f"get node {name!r}"
        return _parsed(action, node_snapshot, self._call(action, self._core.read_node, name))

    def list_nodes(
        self, *, label_selector: str = "", limit: int = 500, continue_token: str | None = None
    ) -> NodeList:
        action = "list nodes"
        body = self._call(
            action,
            self._core.list_node,
            label_selector=label_selector or None,
            limit=limit if limit > 0 else None,
            _continue=continue_token or None,
        )
        items = _items(action, body)
        meta = {} if body.get("metadata") is None else body["metadata"]
        if not isinstance(meta, dict):
            raise _bad_body(action, f"metadata of type {type(meta).__name__}, expected an object")
        token = meta.get("continue")
        if token is not None and not isinstance(token, str):  # taken as the last page, it would cut the list
            raise _bad_body(action, f"metadata.continue {_excerpt(token)}, expected a string")
        return NodeList(
            items=tuple(_parsed(action, node_snapshot, item) for item in items),
            resource_version=_parsed(action, lambda obj: resource_version_of(obj, "NodeList"), body),
            continue_token=token or None,
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
        try:
            response = self._open(
                action,
                self._core.list_node,
                watch=True,
                resource_version=resource_version or None,
                label_selector=label_selector or None,
                allow_watch_bookmarks=allow_bookmarks,
                timeout_seconds=timeout_seconds,
                _request_timeout=(self._timeout[0], timeout_seconds + WATCH_READ_SLACK),
            )
        except Gone as gone:
            if gone.status != 410:
                raise
            return KubeWatch(action, None, gone=gone)
        return KubeWatch(action, response)

    def merge_patch_node(
        self, name: str, patch: Mapping[str, Any], *, field_manager: str | None = None
    ) -> NodeSnapshot:
        action = f"patch node {name!r}"
        patch_node = self._unvalidated(
            self._core,
            "patch_node",
            name=name,
            body=dict(patch),
            field_manager=field_manager,
            _content_type=MERGE_PATCH,
        )
        return _parsed(action, node_snapshot, self._call(action, patch_node))

    def node_annotation_managers(self, name: str) -> NodeOwners:
        action = f"get node {name!r}"
        return _parsed(action, node_owners, self._call(action, self._core.read_node, name))

    def get_lease(self, namespace: str, name: str) -> Lease:
        action = f"get lease {namespace}/{name}"
        body = self._call(action, self._coordination.read_namespaced_lease, name, namespace)
        return _parsed(action, lease_from_json, body)

    def create_lease(self, lease: Lease) -> Lease:
        return self._write_lease("create", "create_namespaced_lease", lease)

    def update_lease(self, lease: Lease) -> Lease:
        return self._write_lease("update", "replace_namespaced_lease", lease, name=lease.name)

    def _write_lease(self, verb: str, method: str, lease: Lease, **params: Any) -> Lease:
        action = f"{verb} lease {lease.namespace}/{lease.name}"
        body = lease_body(lease)
        send = self._unvalidated(self._coordination, method, namespace=lease.namespace, body=body, **params)
        return _parsed(action, lease_from_json, self._call(action, send))

    def find_leases(self, name: str) -> tuple[Lease, ...]:
        action = f"list leases named {name!r} in every namespace"
        body = self._call(
            action,
            self._coordination.list_lease_for_all_namespaces,
            field_selector=f"metadata.name={name}",
        )
        leases = [_parsed(action, lease_from_json, item) for item in _items(action, body)]
        return tuple(sorted(leases, key=lambda lease: lease.namespace))

    def delete_lease(self, namespace: str, name: str) -> None:
        action = f"delete lease {namespace}/{name}"
        self._call(action, self._coordination.delete_namespaced_lease, name, namespace)

    def proxy_get(
        self, namespace: str, service: str, path: str, query: Sequence[tuple[str, str]] = ()
    ) -> bytes:
        action = f"get {path} of service {namespace}/{service} through the API server's proxy"
        resource = f"/api/v1/namespaces/{{namespace}}/services/{{name}}/proxy/{quote(path.lstrip('/'))}"
        request = functools.partial(
            self.api_client.param_serialize,
            "GET",
            resource,
            path_params={"namespace": namespace, "name": service},
            query_params=list(query),
            header_params={"Accept": "application/json, text/plain, */*"},
            auth_settings=["BearerToken"],
        )
        return self._call_data(action, self._raw(request))

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        self._call(
            f"create event in {namespace!r}", self._core.create_namespaced_event, namespace, dict(body)
        )


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
        action = self._action
        try:
            event = json.loads(line)
        except RecursionError:
            raise Unavailable(
                f"{action}: watch line nested too deeply to parse: {shorten(repr(line))}"
            ) from None
        except ValueError:
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str) or "object" not in event:
            raise Unavailable(f"{action}: unreadable watch line {shorten(repr(line))}")
        kind, obj = event["type"], event["object"]
        if not isinstance(obj, dict):
            raise Unavailable(f"{action}: watch event {shorten(kind)} without an object")
        if kind == "ERROR":
            message = obj.get("message")
            text = " ".join(message.split()) if isinstance(message, str) else _excerpt(obj)
            code = obj.get("code")
            status = _http_status(code)
            if status is None:
                what = "no code" if code is None else f"code {_excerpt(code)}, which is not an HTTP status"
                raise Unavailable(f"{action}: watch ERROR event with {what}: {text}")
            raise api_error(action, status, text)
        if kind == "BOOKMARK":
            rv = _parsed(action, lambda o: resource_version_of(o, "BOOKMARK"), obj)
            return WatchEvent(type="BOOKMARK", resource_version=rv)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            node = _parsed(action, node_snapshot, obj)
            return WatchEvent(type=kind, resource_version=node.resource_version, node=node)
        log.warning("%s: ignoring a watch event of unknown type %r", self._action, kind)
        return None


if TYPE_CHECKING:  # the type checker proves that KubeCluster implements the whole port
    _PORT: type[AdminCluster] = KubeCluster
