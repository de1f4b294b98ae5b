"""How ``hami doctor`` reads a running scheduler's JSON: at a URL, or through the API server's service
proxy (no port-forward; ``get`` on ``services/proxy``); else one line saying why not."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

import attrs

from hami_core.k8snames import is_dns_label
from hami_core.kube.access import describe_error
from hami_core.kube.port import AdminCluster, ClusterError

__all__ = ["DEFAULT_SERVICE", "SchedulerEndpoint", "Unanswered", "parse_service_ref"]

#: The scheduler's Service and port name as the chart names them for a release called ``hami-core``.
DEFAULT_SERVICE = "hami-core-scheduler:http"
#: How long the doctor waits for a scheduler's answer.
TIMEOUT = 5.0


def parse_service_ref(text: str) -> tuple[str, str]:
    """``NAMESPACE/NAME[:PORT]`` -> (namespace, ``NAME[:PORT]``); ``ValueError`` in one line."""
    namespace, sep, service = text.partition("/")
    name, _, port = service.partition(":")
    if not sep or not name:
        raise ValueError(f"{text!r} is not NAMESPACE/NAME or NAMESPACE/NAME:PORT")
    if not is_dns_label(namespace):
        raise ValueError(f"{text!r}: {namespace!r} is not a valid namespace name (a lower-case DNS label)")
    if not is_dns_label(name) or (port and not ((port.isascii() and port.isdigit()) or is_dns_label(port))):
        raise ValueError(f"{text!r}: {service!r} is not a Service name with an optional port name or number")
    return namespace, service


@attrs.frozen(kw_only=True)
class SchedulerEndpoint:
    """A scheduler's HTTP endpoint: ``url`` (direct), or ``service`` reached through ``cluster``."""

    url: str | None = None
    #: (namespace, ``NAME[:PORT]``)
    service: tuple[str, str] | None = None
    cluster: AdminCluster = attrs.field(eq=False, repr=False)

    @property
    def where(self) -> str:
        if self.url is not None:
            return self.url
        assert self.service is not None
        return f"service {self.service[0]}/{self.service[1]} (through the API server)"

    def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> dict[str, Any] | Unanswered:
        """``GET path`` as a JSON object, or why not (unreachable, an HTTP error, not JSON)."""
        try:
            body = json.loads(self._get(path, query))
        except Unanswered as exc:
            return exc
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads
            return Unanswered(f"{self.where} {path} did not answer with JSON (not a hami-core scheduler?)")
        if not isinstance(body, dict):
            return Unanswered(f"{self.where} {path} did not answer with a JSON object")
        return body

    def _get(self, path: str, query: Sequence[tuple[str, str]]) -> bytes:
        if self.url is not None:
            target = self.url + quote(path) + (f"?{urlencode(list(query))}" if query else "")
            try:
                with urllib.request.urlopen(target, timeout=TIMEOUT) as response:
                    data: bytes = response.read()
                    return data
            except urllib.error.HTTPError as exc:
                raise Unanswered(f"{target} answered HTTP {exc.code}", code=exc.code) from None
            except OSError as exc:  # a URLError, or a socket's
                reason = getattr(exc, "reason", exc)
                raise Unanswered(f"the scheduler at {self.url} is not reachable: {reason}") from None
        assert self.service is not None
        namespace, service = self.service
        try:
            return self.cluster.proxy_get(namespace, service, path, query)
        except ClusterError as exc:
            raise Unanswered(describe_error(exc), code=exc.status) from None


class Unanswered(Exception):
    """Why a scheduler's endpoint gave no answer to use (one line); ``code``: the HTTP status, if any."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
