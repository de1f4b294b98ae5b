"""The API server's own request accounting: ``apiserver_request_total`` from its ``/metrics``.

A snapshot counts requests by (verb, resource, subresource, code); the difference of two snapshots is
what was asked of the server in between, by everyone. Benchmarks therefore take their snapshots while
the daemon under test is the only client doing anything (their own polling goes to the daemon, and a
long-running watch is only counted when it ends).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["RequestKey", "Requests", "parse_request_totals"]

_SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>.*)\}\s+(?P<value>\S+)\s*$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True, order=True)
class RequestKey:
    verb: str  # GET (one object), LIST, WATCH, POST, PUT, PATCH, DELETE, ...
    resource: str  # "" for non-resource paths such as /metrics
    subresource: str
    code: str


def parse_request_totals(text: str) -> Counter[RequestKey]:
    """Every ``apiserver_request_total`` sample of a Prometheus text exposition."""
    totals: Counter[RequestKey] = Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL.findall(match["labels"])}
        key = RequestKey(
            labels.get("verb", ""),
            labels.get("resource", ""),
            labels.get("subresource", ""),
            labels.get("code", ""),
        )
        totals[key] += round(float(match["value"]))
    return totals


class Requests:
    """Requests the API server counted between two snapshots (``after - before``)."""

    def __init__(self, before: Counter[RequestKey], after: Counter[RequestKey]) -> None:
        diff = Counter(after)
        diff.subtract(before)
        self.counts: Counter[RequestKey] = Counter({k: v for k, v in diff.items() if v > 0})

    def count(
        self,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str = "",
        ok: Callable[[str], bool] | None = None,
    ) -> int:
        """Requests with this verb and resource (``None``: any); ``ok`` filters on the status code."""
        return sum(
            v
            for k, v in self.counts.items()
            if (verb is None or k.verb == verb)
            and (resource is None or k.resource == resource)
            and k.subresource == subresource
            and (ok is None or ok(k.code))
        )

    def by_verb(self, resource: str) -> Counter[str]:
        """Verb -> count for one resource (main resource only, not subresources)."""
        out: Counter[str] = Counter()
        for k, v in self.counts.items():
            if k.resource == resource and not k.subresource:
                out[k.verb] += v
        return out

    def errors(self, resources: Iterable[str]) -> Counter[RequestKey]:
        """Requests on these resources answered with anything but 2xx."""
        wanted = set(resources)
        return Counter(
            {k: v for k, v in self.counts.items() if k.resource in wanted and not k.code.startswith("2")}
        )

    @staticmethod
    def describe(verbs: Counter[str]) -> str:
        """``"2 GET + 3 PATCH"`` (alphabetical), or ``"none"``."""
        return " + ".join(f"{n} {verb}" for verb, n in sorted(verbs.items()) if n) or "none"
