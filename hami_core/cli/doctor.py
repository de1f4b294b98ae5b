"""``hami doctor``: what the scheduler sees on a Node, what it will do next, and why, by the scheduler's
own ``explain_node()``, as a scheduler that has just started (no memory); with the Lease and the running
scheduler's ``/cache`` view to compare. It writes nothing."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any, TypeVar
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs
import click

from hami_core.cli.cluster import all_nodes, cluster_options, connect, read_mapping
from hami_core.cli.leases import LeaseSearch, find_scheduler_leases, lease_options
from hami_core.cli.options import DURATION, default_of, parsed
from hami_core.cli.reach import DEFAULT_SERVICE, SchedulerEndpoint, Unanswered, parse_service_ref
from hami_core.cli.vendors import driver_options, drivers_from_options, table
from hami_core.clock import SYSTEM
from hami_core.durations import check_seconds, span
from hami_core.k8snames import is_dns_subdomain
from hami_core.kube.access import describe_error
from hami_core.kube.port import (
    AdminCluster,
    Cluster,
    ClusterError,
    Lease,
    NodeSnapshot,
    NotFound,
    Unavailable,
)
from hami_core.kube.wire import node_snapshot
from hami_core.plugins import VendorDriver
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.errors import shorten
from hami_core.protocol.states import KEPT_STATES, parse_states
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.explain import (
    NodeExplanation,
    VendorExplanation,
    VendorState,
    explain_node,
    explanation_json,
)
from hami_core.scheduler.selector import NodeSelector, parse_node_selector

__all__ = ["doctor", "load_node_file", "parse_timezone"]

#: The scheduler's own default window (its config owns it), for a doctor that has no scheduler to ask.
_DEFAULT_WINDOW: float = default_of(SchedulerConfig, "handshake_window")
#: How long the doctor waits for the API server.
REQUEST_TIMEOUT = 10.0
F = TypeVar("F", bound=Callable[..., object])
_WIDTH = 100


def parse_timezone(text: str) -> tzinfo:
    """``local``, ``UTC``, an offset (``+08:00``, ``-0530``) or an IANA zone name (``Asia/Shanghai``)."""
    value = text.strip()
    if value.lower() == "local":
        zone = SYSTEM.now().tzinfo
        assert zone is not None
        return zone
    if value.upper() in ("UTC", "Z"):
        return UTC
    if value[:1] in "+-" and len(value) > 1:
        digits = value[1:].replace(":", "")
        if digits.isascii() and digits.isdigit() and len(digits) in (2, 4):
            hours, minutes = int(digits[:2]), int(digits[2:] or 0)
            if hours <= 23 and minutes <= 59:
                sign = -1 if value[0] == "-" else 1
                return timezone(sign * timedelta(hours=hours, minutes=minutes))
        raise ValueError(f"{text!r} is not a UTC offset like +08:00")
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long for a file name
        raise ValueError(
            f"{text!r} is not 'local', 'UTC', an offset like +08:00 or a known zone name"
        ) from None


def _scheduler_url(value: str) -> str | None:
    parts = urlsplit(value)
    if value and (parts.scheme not in ("http", "https") or not parts.netloc):
        raise ValueError(f"{value!r} is not an http:// or https:// URL of a scheduler's endpoint")
    return value.rstrip("/") or None


def _moment(text: str, zone: tzinfo) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a time like 2026-11-30T12:00:00+08:00", param_hint="'--at'"
        ) from None
    return moment.replace(tzinfo=zone) if moment.tzinfo is None else moment.astimezone(zone)


def _quantities_as_text(obj: dict[str, Any]) -> dict[str, Any]:
    """YAML written by hand may leave a count unquoted (``nvidia.com/gpu: 8``): a quantity is text."""
    status = obj.get("status")
    allocatable = status.get("allocatable") if isinstance(status, dict) else None
    if isinstance(allocatable, dict):
        fixed = {
            k: str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for k, v in allocatable.items()
        }
        obj = {**obj, "status": {**status, "allocatable": fixed}}  # type: ignore[dict-item]
    return obj


def load_node_file(path: str, name: str | None = None) -> NodeSnapshot:
    """The Node in a file of ``kubectl get node(s) -o yaml|json`` (``-``: stdin; ``name`` picks one of a
    List); anything else is a ``click.UsageError`` naming the file and what was wrong."""
    source, path = path, "standard input" if path == "-" else path
    try:
        data = read_mapping(source, "a Node", syntax="YAML or JSON", shape="an object")
    except ValueError as exc:
        raise click.UsageError(f"{path}: {exc}") from None
    kind = data.get("kind")
    if kind in ("List", "NodeList"):
        listed = data.get("items") or []
        if not isinstance(listed, list):
            raise click.UsageError(f"{path}: a {kind} whose items are not a list")
        items = [i for i in listed if isinstance(i, dict) and i.get("kind", "Node") == "Node"]
        names = [str(m.get("name")) if isinstance(m := i.get("metadata"), dict) else "" for i in items]
        if name is not None:
            if name not in names:
                raise click.UsageError(f"{path}: no Node {name!r} in the list (it holds {len(items)} Nodes)")
            data = items[names.index(name)]
        elif len(items) == 1:
            data = items[0]
        else:
            raise click.UsageError(f"{path}: a list of {len(items)} Nodes: name the one to examine")
    elif kind != "Node":
        shown = f"a {kind}" if isinstance(kind, str) and kind else "an object without a kind"
        raise click.UsageError(f"{path}: not a Node: it holds {shown}")
    try:
        node = node_snapshot(_quantities_as_text(data))
    except ClusterError as exc:
        raise click.UsageError(f"{path}: not a Node: {exc}") from None
    if name is not None and node.name != name:
        raise click.UsageError(f"{path}: holds Node {node.name!r}, not {name!r}")
    return node


def _renewed_until(lease: Lease | None) -> tuple[datetime | None, datetime | None]:
    """When the Lease was last renewed (else acquired), and until when that holds."""
    if lease is None:
        return None, None
    renewed, duration = lease.renew_time or lease.acquire_time, lease.lease_duration_seconds
    return renewed, renewed + timedelta(seconds=duration) if renewed and duration else None


def lease_summary(search: LeaseSearch, now: datetime) -> str:
    """Who holds the scheduler's leader Lease, as far as the search tells (of several, the last renewed)."""
    lease = search.latest
    if search.error is not None:
        where = f"Lease {search.namespace}/{search.name}" if search.namespace else f"Lease {search.name}"
        return f"{where}: cannot be read: {search.error}"
    if lease is None:
        return search.none_found()
    where, holder = f"Lease {lease.namespace}/{lease.name}", lease.holder_identity
    if not holder:
        return f"{where}: released: no replica holds it (a leader that stopped hands it over this way)"
    renewed_at, until = _renewed_until(lease)
    if renewed_at is None or until is None:
        return f"{where}: held by {holder} (no renew time or duration recorded)"
    renewed = f"renewed {span(now - renewed_at)} ago"
    if until > now:
        return f"{where}: held by {holder}, {renewed}, valid until {_clock(until, now)}"
    return (
        f"{where}: held by {holder} but expired {span(now - until)} ago ({renewed}): no replica "
        "is leading now, so nothing is written"
    )


def lease_json(search: LeaseSearch, now: datetime) -> dict[str, Any]:
    lease = search.latest
    renewed, until = _renewed_until(lease)
    holder = lease.holder_identity if lease is not None else None
    return {
        "namespace": lease.namespace if lease is not None else search.namespace,
        "name": search.name,
        "found": lease is not None,
        "holder": holder,
        "renewed_at": renewed.astimezone(now.tzinfo).isoformat() if renewed else None,
        "valid_until": until.astimezone(now.tzinfo).isoformat() if until else None,
        "held": bool(holder) and until is not None and until > now,
        "error": search.error,
        "summary": lease_summary(search, now),
    }


def fetch_scheduler_view(endpoint: SchedulerEndpoint, node: str) -> dict[str, Any] | str:
    """The scheduler's ``/cache/<node>``, or why there is none (one line)."""
    body = endpoint.get_json(f"/cache/{node}")
    if isinstance(body, Unanswered):
        if body.code == 404 and "services " not in str(body):  # the scheduler's 404, not the Service's
            where = endpoint.where
            return f"the scheduler at {where} watches no Node {node!r} (not seen yet, or another cluster)"
        return str(body)
    if not isinstance(body.get("vendors"), dict):
        return (
            f"{endpoint.where} /cache/{node} did not answer with a scheduler's view (no vendors; an older "
            "hami-core?)"
        )
    return body


@attrs.frozen(kw_only=True)
class Settings:
    """What the doctor judges with: the running scheduler's settings, a flag given winning."""

    window: timedelta
    selector: NodeSelector
    zone: tzinfo
    #: (namespace, name) of the scheduler's Lease (``None``: it runs without leader election).
    lease: tuple[str, str] | None = None
    #: Where the scheduler's settings were read (``None``: no scheduler was asked).
    source: str | None = None
    #: Why the scheduler's settings could not be read (``None``: they were, or none was asked).
    error: str | None = None

    @property
    def from_scheduler(self) -> bool:
        return self.source is not None and self.error is None

    def describe(self) -> str:
        if self.source is None:
            return "settings: the doctor's own (no scheduler found to ask: see --scheduler-service)"
        if self.error is not None:
            return (
                f"settings: the doctor's own; the scheduler's could not be read ({self.source}: {self.error})"
            )
        return f"settings: the running scheduler's, read from {self.source}"

    def to_json(self) -> dict[str, Any]:
        return {
            "from_scheduler": self.from_scheduler,
            "source": self.source,
            "error": self.error,
            "window_seconds": self.window.total_seconds(),
            "selector": str(self.selector),
            "timezone": str(self.zone),
            "lease": {"namespace": self.lease[0], "name": self.lease[1]} if self.lease else None,
        }


def scheduler_settings(endpoint: SchedulerEndpoint | None, flags: Mapping[str, Any]) -> Settings:
    """Each flag given, else the scheduler's ``/status`` when ``endpoint`` answers, else the defaults."""
    theirs: dict[str, Any] = {}
    error = None
    if endpoint is not None:
        status = endpoint.get_json("/status")
        if isinstance(status, Unanswered):
            error = str(status)
        elif not isinstance(status.get("settings"), dict):
            error = "its /status has no settings (an older hami-core?)"
        else:
            theirs = status["settings"]
    try:
        window = (
            _window_seconds(theirs["handshake_window_seconds"])
            if "handshake_window_seconds" in theirs
            else None
        )
        selector = parse_node_selector(_text(theirs, "node_selector")) if "node_selector" in theirs else None
        zone = parse_timezone(_text(theirs, "timezone")) if "timezone" in theirs else None
        lease = _lease_named(theirs.get("lease"))
    except (TypeError, ValueError) as exc:
        error, window, selector, zone, lease = f"its settings do not read: {exc}", None, None, None, None
    given = flags["node_selector"]
    return Settings(
        window=timedelta(seconds=flags["handshake_window"] or window or _DEFAULT_WINDOW),
        selector=given if given is not None else selector or NodeSelector({}),
        zone=flags["zone"] or zone or parse_timezone("local"),
        lease=lease,
        source=endpoint.where if endpoint is not None else None,
        error=error,
    )


def _window_seconds(value: object) -> float:
    """A scheduler's ``/status`` window, as ``check_seconds`` takes it; ``ValueError`` when not one."""
    check_seconds("handshake_window_seconds", value)  # type: ignore[arg-type]  # checks the type itself
    return float(value)  # type: ignore[arg-type]


def _text(settings: Mapping[str, Any], key: str) -> str:
    """The string setting ``key`` of a scheduler's ``/status``; ``ValueError`` naming it when not one."""
    value = settings[key]
    if not isinstance(value, str):
        raise ValueError(f"{key} {shorten(json.dumps(value))} is not a string")
    return value


def _lease_named(lease: object) -> tuple[str, str] | None:
    """The Lease a scheduler's ``/status`` names, as (namespace, name); ``ValueError`` when unreadable."""
    if lease is None:
        return None
    if isinstance(lease, dict) and all(isinstance(lease.get(key), str) for key in ("namespace", "name")):
        return lease["namespace"], lease["name"]
    raise ValueError(f"lease {shorten(json.dumps(lease))} names no namespace and name")


def _differs_why(
    mine: VendorExplanation, state: object, view: Mapping[str, Any], explanation: NodeExplanation
) -> str:
    if view.get("resource_version") != explanation.resource_version:
        return (
            f"the scheduler judged resourceVersion {view.get('resource_version')}, the doctor read "
            f"{explanation.resource_version}: a change on its way to the scheduler's watch (or since)"
        )
    if view.get("selected") != explanation.selected:
        return (
            f"the scheduler's node selector is {view.get('selector') or 'empty'!r}, the doctor's "
            f"{explanation.selector or 'empty'!r}: give the doctor the scheduler's --node-selector"
        )
    awaiting = VendorState.AWAITING_SIGN_OF_LIFE
    if state == awaiting.value and mine.state is not awaiting:
        return (
            f"the scheduler remembers cleaning {mine.vendor_key} up here and waits for a sign of "
            "life; the doctor has no memory of earlier evaluations: the scheduler's view is the one that "
            "counts"
        )
    if state in (VendorState.REGISTERED.value, VendorState.DEGRADED.value) and mine.state is awaiting:
        return (
            f"the scheduler has {mine.vendor_key} in its cache from earlier evaluations; the doctor, "
            "with no memory of them, finds it dead before it ever registered: the scheduler's view is "
            "the one that counts"
        )
    return (
        f"judged at different moments (scheduler {view.get('judged_at')}, doctor "
        f"{explanation.now.isoformat()}) or with different settings (window, time zone)"
    )


def compare_with_scheduler(
    explanation: NodeExplanation, url: str, view: Mapping[str, Any] | str
) -> dict[str, Any]:
    """Whether a scheduler's ``/cache/<node>`` view (or why there is none) agrees with the doctor's
    explanation, vendor by vendor (``agrees``: ``None`` when there was nothing to compare)."""
    facts = ("identity", "leader", "this_replica_writes", "resource_version")
    if isinstance(view, str):
        return {"url": url, "error": view, **dict.fromkeys(facts), "agrees": None, "vendors": {}}
    vendors: dict[str, dict[str, Any]] = {}
    for mine in explanation.vendors:
        key, theirs = mine.vendor_key, view["vendors"].get(mine.vendor_key)
        doctor = {"state": mine.state.value, "write": mine.next.write.value}
        scheduler: dict[str, Any] = {"state": None, "write": None}
        agrees: bool | None = None
        why: str | None = f"the scheduler does not run the driver of {key}"
        if isinstance(theirs, dict):
            planned = theirs.get("next")
            scheduler = {
                "state": theirs.get("state"),
                "write": planned.get("write") if isinstance(planned, dict) else None,
            }
            agrees = scheduler == doctor
            why = None if agrees else _differs_why(mine, scheduler["state"], view, explanation)
        vendors[key] = {"agrees": agrees, "scheduler": scheduler, "doctor": doctor, "why": why}
    compared = [v["agrees"] for v in vendors.values() if v["agrees"] is not None]
    agrees = all(compared) if compared else None
    return {
        "url": url,
        "error": None,
        **{k: view.get(k) for k in facts},
        "agrees": agrees,
        "vendors": vendors,
    }


def _clock(moment: datetime, now: datetime) -> str:
    """A moment in the doctor's zone, ``YYYY-MM-DD HH:MM:SS +HH:MM``."""
    return moment.astimezone(now.tzinfo).strftime("%Y-%m-%d %H:%M:%S %z").replace("+0000", "UTC")


def _register_cell(e: VendorExplanation) -> str:
    r = e.register
    if not r.present:
        return "absent"
    if r.error is not None:
        return "does not decode"
    return f"{r.devices} device" + ("" if r.devices == 1 else "s")


def _handshake_cell(e: VendorExplanation) -> str:
    h = e.handshake
    if h.annotation is None:
        return "none (no handshake)"
    if h.kind == "stamp" and h.age is not None:
        when = f"{span(h.age)} old" if h.age >= timedelta(0) else f"{span(h.age)} ahead"
        return f"stamp, {when} ({h.standing})"
    return h.kind


def _allocatable_cell(e: VendorExplanation) -> str:
    a = e.allocatable
    shown = "absent" if a.raw is None else a.raw if not a.invalid else f"{a.raw!r} (not a quantity)"
    return f"{a.resource}={shown}"


def _wrap(text: str, first: str, rest: str) -> list[str]:
    wrap = textwrap.wrap
    return wrap(text, _WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False,
                break_long_words=False)  # fmt: skip


def _wrapped(label: str, text: str) -> list[str]:
    head = f"  {label:<11} "
    return _wrap(text, head, " " * len(head)) or [head.rstrip()]


def _vendor_details(e: VendorExplanation, now: datetime) -> list[str]:
    lines = _wrap(f"{e.vendor_key}: {e.summary}", "", "  ")
    r, h = e.register, e.handshake
    if e.state is VendorState.NOT_PRESENT and not (r.present or h.value is not None or e.notes):
        return lines
    rows: list[tuple[str, str]] = []
    if e.source == "node":
        rows.append(
            ("source", "the Node (the driver's function of its capacity, allocatable, annotations, labels)")
        )
        if r.error is not None:
            rows.append(("devices", f"do not compute: {r.error}"))
        elif r.present:
            rows.append(("devices", _register_cell(e)))
    else:
        sized = f"{r.annotation} ({r.size} bytes)"
        register = (
            f"{sized}: {_register_cell(e)}" if r.error is None else f"{sized} does not decode: {r.error}"
        )
        rows += [
            ("source", "the register annotation"),
            ("register", register if r.present else f"{r.annotation}: absent"),
        ]
    if h.annotation is None:
        handshake = "the vendor has no handshake annotation"
    elif h.value is None:
        handshake = f"{h.annotation}: absent"
    else:
        handshake = f"{h.annotation} = {shorten(h.value)}: {_handshake_cell(e)}"
        handshake += f", stamped {_clock(h.time, now)}" if h.time is not None else ""
        handshake += f"; {h.error}" if h.error is not None else ""
    rows += [
        ("handshake", handshake),
        ("allocatable", _allocatable_cell(e)),
        ("verdict", f"{e.verdict.value} (liveness rule {e.liveness}); reason {e.reason.value}"),
        ("next", e.next.why),
    ]
    if e.next.deadline is not None:
        left = span(e.next.deadline - now)
        rows.append(("deadline", f"{_clock(e.next.deadline, now)} (in {left}): {e.next.at_deadline}"))
    rows += [("note", note.text) for note in e.notes]
    return lines + [line for label, text in rows for line in _wrapped(label, text)]


def render(
    explanation: NodeExplanation,
    *,
    file: str | None,
    lease: LeaseSearch | None,
    agreement: dict[str, Any] | None,
    settings: Settings | None,
    as_json: bool,
) -> str:
    """The examination as the table and its details, or as one JSON object."""
    e = explanation
    now = e.now
    if as_json:
        body = explanation_json(e)
        body["source"] = {"kind": "cluster" if file is None else "file", "file": file}
        body["settings"] = settings.to_json() if settings is not None else None
        body["lease"] = lease_json(lease, now) if lease is not None else None
        body["scheduler"] = agreement
        return json.dumps(body, indent=2)
    where = f"from {file}" if file is not None else "from the cluster"
    lines = [f"Node {e.node} ({where}; uid {e.uid or '-'}, resourceVersion {e.resource_version or '-'})"]
    if not e.selector:
        selected = "no node selector: every node is judged"
    else:
        selected = f"{'matches' if e.selected else 'does NOT match'} the node selector {e.selector}"
    lines.append(f"judged at {_clock(now, now)}, handshake window {span(e.window)}; {selected}")
    if settings is not None:
        lines.append(settings.describe())
    if lease is not None:
        lines.append(lease_summary(lease, now))
    lines += ["no memory of earlier evaluations: judged as a scheduler that has just started would", ""]
    header = ("VENDOR", "STATE", "REGISTER", "HANDSHAKE", "ALLOCATABLE", "VERDICT", "NEXT WRITE")
    rows = [header] + [
        (
            v.vendor_key,
            v.state.value,
            _register_cell(v),
            _handshake_cell(v),
            _allocatable_cell(v),
            v.verdict.value,
            v.next.write.value,
        )
        for v in e.vendors
    ]
    lines += table(rows)
    for vendor in e.vendors:
        lines += ["", *_vendor_details(vendor, now)]
    if agreement is not None:
        lines += ["", *_agreement_text(agreement)]
    return "\n".join(lines)


def _agreement_text(agreement: Mapping[str, Any]) -> list[str]:
    url = agreement["url"]
    if agreement["error"] is not None:
        return [f"Scheduler {url}: no view to compare: {agreement['error']}"]
    role = "leader" if agreement["leader"] else "not the leader"
    writes = (
        "sends its writes"
        if agreement["this_replica_writes"]
        else "sends no writes (shows what a leader would send)"
    )
    verdict = {True: "agrees", False: "DIFFERS", None: "nothing to compare"}[agreement["agrees"]]
    lines = [
        f"Scheduler {url} ({agreement['identity']}, {role}, {writes}; resourceVersion "
        f"{agreement['resource_version']}): {verdict}"
    ]
    for key, v in agreement["vendors"].items():
        (state, write), (doctor_state, doctor_write) = v["scheduler"].values(), v["doctor"].values()
        if v["agrees"] is None:
            lines += _wrapped(key, v["why"] or "")
        elif v["agrees"]:
            lines += _wrapped(key, f"agrees: {doctor_state}, next write {doctor_write}")
        else:
            text = f"differs: scheduler {state}, next write {write}; doctor {doctor_state}, next write "
            lines += _wrapped(key, f"{text}{doctor_write}: {v['why']}")
    return lines


@click.group("doctor")
def doctor() -> None:
    """Explain what the scheduler sees and does, from the cluster or an exported object; writes nothing."""


def judging_options(command: F) -> F:
    """The scheduler's settings the doctor judges with, and where to find the scheduler."""
    options = [
        click.option(
            "--node-selector",
            envvar="HAMI_NODE_SELECTOR",
            callback=parsed(parse_node_selector),
            metavar="K=V,...",
            help="The scheduler's node selector. Default: the running scheduler's (see "
            "--scheduler-service), else none. Env: HAMI_NODE_SELECTOR.",
        ),
        click.option(
            "--handshake-window",
            envvar="HAMI_HANDSHAKE_WINDOW",
            type=DURATION,
            default=None,
            help=f"The scheduler's handshake window. Default: the running scheduler's, else "
            f"{span(_DEFAULT_WINDOW)}. Env: HAMI_HANDSHAKE_WINDOW.",
        ),
        click.option(
            "--timezone",
            "zone",
            envvar="HAMI_DOCTOR_TIMEZONE",
            default=None,
            callback=parsed(parse_timezone),
            metavar="ZONE",
            help="The scheduler's time zone, in which stamps without a zone are read: 'local', "
            "'UTC', an offset (+08:00) or a zone name (Asia/Shanghai). Default: the running "
            "scheduler's, else local. Env: HAMI_DOCTOR_TIMEZONE.",
        ),
        lease_options,
        click.option(
            "--scheduler-service",
            callback=parsed(lambda value: parse_service_ref(value) if value else None),
            metavar="NAMESPACE/NAME[:PORT]",
            help="The running scheduler's Service, reached through the API server's service proxy "
            f"(no port-forward; needs get on services/proxy). Default: {DEFAULT_SERVICE} in the "
            "namespace of its Lease.",
        ),
        click.option(
            "--scheduler-url",
            callback=parsed(_scheduler_url),
            metavar="URL",
            help="The running scheduler's status endpoint, reached directly (e.g. "
            "http://127.0.0.1:9396 with a port-forward), instead of --scheduler-service.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def judging(
    cluster: AdminCluster, flags: Mapping[str, Any]
) -> tuple[Settings, LeaseSearch, SchedulerEndpoint | None]:
    """From ``judging_options``: the settings, the Lease, and the scheduler to compare with: the one at the
    URL or Service given (even when it fails), else the chart's Service in the namespace of the Lease
    found when its settings could be read, else none."""
    namespace, url, service = flags["lease_namespace"], flags["scheduler_url"], flags["scheduler_service"]
    lease = find_scheduler_leases(cluster, flags["lease_name"], namespace)
    found, named = lease.latest, url is not None or service is not None
    if not named and found is not None:
        service = (found.namespace, DEFAULT_SERVICE)
    endpoint = SchedulerEndpoint(url=url, service=service, cluster=cluster) if url or service else None
    settings = scheduler_settings(endpoint, flags)
    own = (found.namespace, found.name) if found is not None else (namespace, lease.name)
    if settings.lease is not None and namespace is None and settings.lease != own:
        # the running scheduler says which Lease is its own
        lease = find_scheduler_leases(cluster, settings.lease[1], settings.lease[0])
    return settings, lease, endpoint if named or settings.from_scheduler else None


def _explain(
    snapshot: NodeSnapshot, rules: Sequence[VendorRules], settings: Settings, now: datetime
) -> NodeExplanation:
    window, selector = settings.window, settings.selector
    return explain_node(snapshot.name, snapshot, rules, None, selector=selector, now=now, window=window)


def _drivers(flags: Mapping[str, Any]) -> tuple[VendorDriver, ...]:
    return drivers_from_options(flags["vendors"], flags["count_resources"], flags["device_config"])[1]


def _live(flags: Mapping[str, Any]) -> AdminCluster:
    return connect(flags["kubeconfig"], flags["context"], request_timeout=REQUEST_TIMEOUT)


@doctor.command("node")
@click.argument("name", required=False)
@click.option(
    "--from-file",
    "from_file",
    metavar="FILE",
    help="Examine a Node exported with 'kubectl get node NAME -o yaml' (or -o json; '-' reads "
    "stdin) instead of reading it from the cluster. A list of Nodes works too: NAME picks "
    "one.",
)
@cluster_options
@driver_options
@judging_options
@click.option(
    "--at",
    "at",
    metavar="TIME",
    help="Judge as of TIME (e.g. 2026-11-30T12:00:00+08:00; without an offset, in --timezone) "
    "instead of now: for a Node exported earlier.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def node(name: str | None, from_file: str | None, at: str | None, as_json: bool, **flags: Any) -> None:
    """Explain one Node: for each selected driver, the register annotation (present, decodes, devices, or
    the decode error and where), the handshake (value, kind, age), the allocatable count, the verdict, the
    state, and what the scheduler will do next and why. From the cluster it judges with the running
    scheduler's settings (window, node selector, time zone, Lease: its /status, read through the API
    server's service proxy), says who holds the leader Lease, and whether that scheduler's /cache view
    agrees.

    Exit status: 0 when the Node was examined, 1 when the cluster could not be read, 2 for bad usage or a
    file that does not hold a Node.
    """
    if name is None and from_file is None:
        raise click.UsageError("give a Node NAME, or --from-file FILE")
    if from_file is not None and (
        flags["scheduler_url"] is not None or flags["scheduler_service"] is not None
    ):
        raise click.UsageError(
            "--scheduler-url and --scheduler-service compare with the live Node: leave out --from-file"
        )
    if name is not None and not is_dns_subdomain(name):
        raise click.BadParameter(
            f"{name!r} is not a Node name (a lower-case DNS subdomain)", param_hint="'NAME'"
        )
    drivers = _drivers(flags)
    lease, endpoint = None, None
    if from_file is not None:
        snapshot = load_node_file(from_file, name)
        settings = scheduler_settings(None, flags)  # a file is judged with the flags given, as always
    else:
        assert name is not None
        cluster = _live(flags)
        snapshot = _get_node(cluster, name)
        settings, lease, endpoint = judging(cluster, flags)
    now = _moment(at, settings.zone) if at is not None else SYSTEM.now().astimezone(settings.zone)
    explanation = _explain(snapshot, [d.rules() for d in drivers], settings, now)
    agreement = None
    if endpoint is not None:
        view = fetch_scheduler_view(endpoint, snapshot.name)
        agreement = compare_with_scheduler(explanation, endpoint.where, view)
    shown = settings if from_file is None else None
    click.echo(
        render(explanation, file=from_file, lease=lease, agreement=agreement, settings=shown, as_json=as_json)
    )


def _get_node(cluster: Cluster, name: str) -> NodeSnapshot:
    try:
        return cluster.get_node(name)
    except NotFound:
        raise click.ClickException(f"node {name!r} not found in the cluster") from None
    except Unavailable as exc:
        raise click.ClickException(f"cannot reach the API server: {exc}") from None
    except ClusterError as exc:
        raise click.ClickException(describe_error(exc)) from None


def _states(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> frozenset[VendorState]:
    try:
        return parse_states(",".join(value)) if value else frozenset()
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def fleet_states(
    cluster: AdminCluster,
    rules: Sequence[VendorRules],
    settings: Settings,
    scheduler: Mapping[str, Any] | None,
) -> dict[str, dict[str, dict[str, str]]]:
    """node -> vendor -> ``{"state", "source"}`` of what each Node carries: the scheduler's state where
    its ``/cache`` has one (it remembers cleanups), else the doctor's."""
    now = SYSTEM.now().astimezone(settings.zone)
    theirs: Mapping[str, Any] = (scheduler or {}).get("nodes") or {}
    fleet: dict[str, dict[str, dict[str, str]]] = {}
    for snapshot in all_nodes(cluster):
        vendors: dict[str, dict[str, str]] = {}
        for vendor in _explain(snapshot, rules, settings, now).vendors:
            entry = theirs.get(snapshot.name)
            known = entry.get(vendor.vendor_key) if isinstance(entry, dict) else None
            if isinstance(known, dict) and isinstance(known.get("state"), str):
                vendors[vendor.vendor_key] = {"state": known["state"], "source": "scheduler"}
            elif vendor.state is not VendorState.NOT_PRESENT or vendor.handshake.value is not None:
                vendors[vendor.vendor_key] = {"state": vendor.state.value, "source": "doctor"}
        fleet[snapshot.name] = vendors
    return fleet


@doctor.command("nodes")
@cluster_options
@driver_options
@judging_options
@click.option(
    "--state",
    "wanted",
    multiple=True,
    callback=_states,
    metavar="STATE[,STATE]",
    help="Only Nodes where a vendor is in one of these states (registered, degraded, "
    "awaiting-sign-of-life, no-devices, not-present, not-selected); repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the lines.")
def nodes(wanted: frozenset[VendorState], as_json: bool, **flags: Any) -> None:
    """Every Node, one line each: the state of each vendor it carries anything of. The running scheduler's
    states are used where it has one (it remembers what it cleaned up: awaiting-sign-of-life); the others
    are judged by the doctor as for 'hami doctor node', with the scheduler's settings when it answers.

    Exit status: 0 when the Nodes were listed, 1 when the cluster could not be read, 2 for bad usage.
    """
    drivers = _drivers(flags)
    cluster = _live(flags)
    settings, lease, endpoint = judging(cluster, flags)
    kept = ",".join(state.value for state in KEPT_STATES)
    answer = endpoint.get_json("/cache", [("state", kept)]) if endpoint is not None else None
    view = answer if isinstance(answer, dict) and isinstance(answer.get("nodes"), dict) else None
    view_error = str(answer) if isinstance(answer, Unanswered) else None
    if isinstance(answer, dict) and view is None and endpoint is not None:
        view_error = (
            f"{endpoint.where} /cache did not answer with a scheduler's view (no nodes; an older hami-core?)"
        )
    try:
        fleet = fleet_states(cluster, [d.rules() for d in drivers], settings, view)
    except ClusterError as exc:
        raise click.ClickException(describe_error(exc)) from None
    shown = {
        name: states
        for name, states in fleet.items()
        if not wanted or any(s["state"] in {state.value for state in wanted} for s in states.values())
    }
    if as_json:
        body = {
            "nodes": shown,
            "states": sorted(state.value for state in wanted) or None,
            "settings": settings.to_json(),
            "lease": lease_json(lease, SYSTEM.now().astimezone(settings.zone)),
            "scheduler": {"where": settings.source, "error": view_error},
        }
        click.echo(json.dumps(body, indent=2))
        return
    click.echo(settings.describe())
    if view_error is not None:
        click.echo(f"states: the doctor's own judgement, without the scheduler's memory ({view_error})")
    width = max(map(len, shown)) if shown else 0
    for name, states in shown.items():
        cells = [
            f"{key}={s['state']}" + ("" if s["source"] == "scheduler" else "*") for key, s in states.items()
        ]
        click.echo(f"{name.ljust(width)}  {' '.join(cells) or '-'}")
    filtered = f" ({len(shown)} shown)" if wanted else ""
    click.echo(f"{len(fleet)} nodes{filtered}; * judged by the doctor, not from the scheduler's memory")
