"""Why each vendor on a Node is in the state it is in, and what the scheduler does next, in plain words
(docs/observability.md, "Explaining a Node": what each field and note says). No I/O, no clock.

The states are ``protocol/states.py``'s; this module words them for ``/cache``, the doctor, Events and
logs, and every duration in its prose is ``durations.span``'s.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import attrs

from hami_core.durations import span
from hami_core.kube.port import NodeSnapshot
from hami_core.protocol.decide import (
    Decision,
    Observation,
    Reason,
    VendorMemory,
    VendorRules,
    Verdict,
    sign_of_life,
    vendor_absent,
)
from hami_core.protocol.errors import shorten
from hami_core.protocol.evaluate import evaluate, read_node, read_register
from hami_core.protocol.handshake import (
    DEFAULT_WINDOW,
    HandshakeKind,
    StampStanding,
    classify,
    stamp_standing,
)
from hami_core.protocol.marker import fingerprint
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.states import IN_CACHE, VendorState, state_of
from hami_core.scheduler.observe import Observed, observe
from hami_core.scheduler.selector import NodeSelector

__all__ = [
    "CLEANED_UP",
    "READMITTED",
    "REGISTERED",
    "AllocatableFacts",
    "HandshakeFacts",
    "NextStep",
    "NodeExplanation",
    "Note",
    "RegisterFacts",
    "VendorExplanation",
    "VendorState",
    "WriteKind",
    "explain_node",
    "explanation_json",
    "registration_event",
]

_NOTHING_KNOWN = VendorMemory()


class WriteKind(enum.Enum):
    """The handshake write a leader sends now."""

    STAMP = "stamp"
    DELETE = "delete"
    NOTHING = "nothing"


@attrs.frozen(kw_only=True)
class RegisterFacts:
    """The vendor's register annotation on the node, or the inputs of its node source (spec 1b)."""

    #: ``None`` when the devices come from the Node (``VendorExplanation.source`` is ``"node"``).
    annotation: str | None
    present: bool
    #: The value's size in bytes (0 when absent).
    size: int = 0
    #: ``None`` when absent.
    decodes: bool | None = None
    #: How many devices it decodes to; ``None`` when absent or when it does not decode.
    devices: int | None = None
    #: Why it does not decode (the codec's message, naming the position and the bad text).
    error: str | None = None


@attrs.frozen(kw_only=True)
class HandshakeFacts:
    """The vendor's handshake annotation on the node."""

    #: ``None`` for a vendor without a handshake annotation.
    annotation: str | None
    value: str | None
    #: A ``HandshakeKind`` value (``absent`` also for a vendor without a handshake).
    kind: str
    #: A stamp's time, in the scheduler's zone; only for ``stamp``.
    time: datetime | None = None
    #: ``now`` minus the stamp's time (negative: in the future); only for ``stamp``.
    age: timedelta | None = None
    #: A ``StampStanding`` value.
    standing: str = StampStanding.MISSING.value
    #: Why a ``bad-stamp`` is unreadable.
    error: str | None = None


@attrs.frozen(kw_only=True)
class AllocatableFacts:
    """``status.allocatable[<count resource>]``."""

    resource: str
    #: As the Node holds it (``None``: absent).
    raw: str | None
    #: As the decision counts it (absent or not a quantity: 0).
    count: int
    #: The raw value is not a quantity.
    invalid: bool = False


@attrs.frozen(kw_only=True)
class NextStep:
    """The write a leader sends now, and the next moment the decision changes by itself."""

    write: WriteKind
    #: The handshake annotation written or deleted (``None`` for nothing).
    annotation: str | None = None
    #: The stamp written (``None`` for a delete or nothing).
    value: str | None = None
    #: Why, in plain words.
    why: str
    #: When a stamp expires and the decision changes by itself, in the scheduler's zone (``None``: never).
    deadline: datetime | None = None
    #: What happens at ``deadline`` unless something changes before.
    at_deadline: str | None = None


@attrs.frozen
class Note:
    """Something an operator should know: where HAMi reads the node differently, or a caveat."""

    #: A short stable code (their table: docs/observability.md, "Explaining a Node").
    code: str
    text: str


@attrs.frozen(kw_only=True)
class VendorExplanation:
    vendor_key: str
    state: VendorState
    #: One sentence on the state.
    summary: str
    #: The error while degraded (decode error, or the liveness rule's failure).
    error: str | None
    register: RegisterFacts
    handshake: HandshakeFacts
    allocatable: AllocatableFacts
    #: The name of the vendor's liveness rule.
    liveness: str
    #: ``Observed.source``: ``"annotation"`` or ``"node"``.
    source: str
    next: NextStep
    notes: tuple[Note, ...]
    #: The decision core's own answer, exactly as the scheduler gets it.
    decision: Decision

    @property
    def reason(self) -> Reason:
        return self.decision.reason

    @property
    def verdict(self) -> Verdict:
        return self.decision.verdict


@attrs.frozen(kw_only=True)
class NodeExplanation:
    node: str
    #: False when there is no Node (deleted).
    present: bool
    uid: str
    resource_version: str
    selected: bool
    #: The node selector, as ``k=v,...`` (empty: every node).
    selector: str
    now: datetime
    window: timedelta
    #: Judged with the scheduler's memory of earlier evaluations (False: with none, as ``hami doctor``).
    remembered: bool
    vendors: tuple[VendorExplanation, ...]


# --- words ------------------------------------------------------------------------------------------------


def _devices(count: int) -> str:
    return f"{count} device" if count == 1 else f"{count} devices"


#: The layout HAMi v2.10 parses (Go's ``time.DateTime``, optional fraction); anything else it cannot read.
_HAMI_LAYOUT = re.compile(r"\d{4}-\d{2}-\d{2} +\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?", re.ASCII)


def _stamp_layout(value: str) -> str | None:
    """The name of a parsed stamp's layout when HAMi cannot parse it, else ``None``."""
    text = value.partition("_")[2]
    if _HAMI_LAYOUT.fullmatch(text):
        return None
    if re.match(r"\d{4}\.", text):
        return "the dotted layout of HAMi up to v2.4 ('YYYY.MM.DD HH:MM:SS')"
    return "Go's Time.String() layout (with a zone, perhaps a monotonic clock reading)"


# --- the explanation --------------------------------------------------------------------------------------

MemorySource = Mapping[str, VendorMemory] | Callable[[str], VendorMemory] | None


def explain_node(
    name: str,
    node: NodeSnapshot | None,
    vendors: Sequence[VendorRules],
    memory: MemorySource,
    *,
    selector: NodeSelector,
    now: datetime,
    window: timedelta = DEFAULT_WINDOW,
    mono: float | None = None,
    wall_step_at: float | None = None,
) -> NodeExplanation:
    """Explain every vendor of ``vendors`` on the Node ``name`` as shown (``node=None``: deleted).
    ``mono`` and ``wall_step_at``: the scheduler's monotonic clock, and its last wall-clock step, as the
    scheduler decides with them (``decide``); ``None`` for a process of its own (the doctor).

    ``memory`` is what the scheduler remembers of each vendor on this node (by vendor key, or a function
    of the vendor key); ``None`` explains with nothing remembered, as a scheduler that has just started
    would judge, and says where that matters. ``now`` is the scheduler's clock (aware, in its zone: stamps
    without a zone are read in it).
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"explain_node: now must be an aware datetime in the scheduler's zone, got {now!r}")
    selected = node is not None and selector.matches(node.labels)
    recall = memory if callable(memory) else lambda key: (memory or {}).get(key, _NOTHING_KNOWN)
    case = functools.partial(_Case, now=now, window=window, selector=selector, remembered=memory is not None)
    explained = []
    for declared in vendors:
        seen = observe(name, node, declared, selected=selected)
        known = recall(declared.vendor_key)
        decision = evaluate(
            seen.observation,
            known,
            now=now,
            rules=seen.rules,
            window=window,
            mono=mono,
            wall_step_at=wall_step_at,
            view=seen.view,
        )
        explained.append(_explain_vendor(case(seen, known, decision)))
    return NodeExplanation(
        node=name,
        present=node is not None,
        uid=node.uid if node else "",
        resource_version=node.resource_version if node else "",
        selected=selected,
        selector=str(selector),
        now=now,
        window=window,
        remembered=memory is not None,
        vendors=tuple(explained),
    )


@attrs.define(slots=False)
class _Case:
    """Everything one vendor's explanation is made of: the scheduler's observation and its own decision,
    and what the prose reads of them."""

    seen: Observed
    memory: VendorMemory
    decision: Decision
    now: datetime = attrs.field(kw_only=True)
    window: timedelta = attrs.field(kw_only=True)
    selector: NodeSelector = attrs.field(kw_only=True)
    #: Judged with the scheduler's memory (False: with none, as ``hami doctor``).
    remembered: bool = attrs.field(kw_only=True)

    def __attrs_post_init__(self) -> None:
        self.obs, self.rules = self.seen.observation, self.seen.rules
        # the vendor key, its handshake annotation (for prose) and its count resource
        self.vendor, self.res = self.rules.vendor_key, self.rules.count_resource
        self.hs = self.rules.handshake_annotation or "(no handshake annotation)"
        self.signs = _signs_of_life(self.rules)
        observed = self.obs.handshake if self.rules.handshake_annotation else None
        self.handshake = classify(observed, tz=self.now.tzinfo or UTC)  # now is aware: explain_node checks it
        self.standing = stamp_standing(self.handshake, now=self.now, window=self.window)
        self.state = state_of(self.decision.reason)
        self.age = self.now - self.handshake.time if self.handshake.time is not None else None


def _signs_of_life(rules: VendorRules) -> str:
    """The signs of life that readmit a cleaned-up vendor (spec 4.2), in the one wording of them."""
    handshake = rules.handshake_annotation
    report = f"the plugin reports in {handshake}, " if handshake else ""
    return f"{report}allocatable {rules.count_resource} is above 0, or the register value changes"


def _explain_vendor(case: _Case) -> VendorExplanation:
    rules, seen, handshake = case.rules, case.seen, case.handshake
    return VendorExplanation(
        vendor_key=rules.vendor_key,
        state=case.state,
        summary=_summary(case),
        error=case.decision.error,
        register=_register_facts(case),
        handshake=HandshakeFacts(
            annotation=rules.handshake_annotation,
            value=case.obs.handshake if rules.handshake_annotation else None,
            kind=handshake.kind.value,
            time=handshake.time.astimezone(case.now.tzinfo) if handshake.time is not None else None,
            age=case.age,
            standing=case.standing.value,
            error=handshake.error,
        ),
        allocatable=AllocatableFacts(
            resource=case.res,
            raw=seen.allocatable_raw,
            count=case.obs.allocatable,
            invalid=seen.allocatable_invalid,
        ),
        liveness=rules.liveness.name,
        source=seen.source,
        next=_next_step(case),
        notes=tuple(_notes(case)),
        decision=case.decision,
    )


def _register_facts(case: _Case) -> RegisterFacts:
    """The register value's facts, from what the scheduler already read of it where it can."""
    annotation, value = case.rules.register_annotation, case.obs.register
    if value is None:
        return RegisterFacts(annotation=annotation, present=False)
    seen = fingerprint(value)
    for known in (case.decision.memory, case.memory):
        if known.register == seen:
            decoded: tuple[DeviceInfo, ...] | str = known.devices or ()
            break
        if known.degraded_value == seen and known.degraded is not None:
            decoded = known.degraded
            break
    else:  # not applied by the decision (not judged, or dead): read as the scheduler would on readmission
        decoded = _read(case, value)
    error = decoded if isinstance(decoded, str) else None
    return RegisterFacts(
        annotation=annotation,
        present=True,
        size=len(value.encode("utf-8", "surrogatepass")),
        decodes=error is None,
        devices=len(decoded) if error is None else None,
        error=error,
    )


def _read(case: _Case, value: str) -> tuple[DeviceInfo, ...] | str:
    """The register ``value`` (or the node source) read as the scheduler reads it: devices, or the error."""
    view = case.seen.view
    return (
        read_node(view, case.rules) if view is not None else read_register(value, case.rules, case.obs.node)
    )


_REGISTERS = {Reason.REGISTERED: "registers now", Reason.UPDATED: "takes the new register value"}


def _summary(case: _Case) -> str:
    d, state = case.decision, case.state
    vendor = case.vendor
    if state is VendorState.REGISTERED:
        what = _REGISTERS.get(d.reason) if case.remembered else None
        return f"registered with {_devices(len(d.memory.devices or ()))}" + (
            f" (the scheduler {what})" if what else ""
        )
    if state is VendorState.DEGRADED:
        if d.verdict is Verdict.RULE_FAILED:
            return "degraded: the driver's liveness rule failed, so nothing is judged (see error)"
        keep = "nothing to schedule on"
        if d.memory.registered:
            keep = f"the cache keeps the last good list ({_devices(len(d.memory.devices or ()))})"
        if case.rules.register_annotation is None:
            return f"degraded: the driver's function of the Node gives no devices (see devices); {keep}"
        return f"degraded: the register value does not decode (see register); {keep}"
    if state is VendorState.AWAITING_SIGN_OF_LIFE:
        if d.reason is Reason.CLEANED_UP:
            return f"cleaned up now; {vendor} then waits for a sign of life"
        if d.verdict is Verdict.DEAD:
            return "found dead before it ever registered here; waiting for a sign of life"
        return "cleaned up earlier; waiting for a sign of life"
    if state is VendorState.NO_DEVICES:
        return "not registered: its register annotation lists no devices"
    if state is VendorState.NOT_PRESENT:
        if d.reason is Reason.UNREGISTERED_ABSENT:
            return "unregistered: its register annotation is gone"
        if case.obs.handshake is not None and case.rules.handshake_annotation:
            return f"not on this node: a {case.hs} annotation, but no {case.rules.register_annotation}"
        return "not on this node"
    if state is VendorState.NOT_SELECTED:
        return f"the node is outside the node selector {case.selector}: the scheduler keeps nothing of it"
    return "the Node is deleted: everything about it is forgotten"


def _dead_why(case: _Case) -> str:
    """Why the liveness rule says dead, in words."""
    rule = case.rules.liveness.name
    age = case.age
    if rule == "allocatable" and case.memory.allocatable_seen and case.obs.allocatable == 0:
        return (
            f"allocatable {case.res} was above 0 and is now 0 (the allocatable rule: once the count has "
            "been seen, liveness is the count)"
        )
    if rule in ("handshake", "allocatable") and case.standing is StampStanding.EXPIRED and age is not None:
        return f"its stamp expired {span(age - case.window)} ago and allocatable {case.res} is 0"
    stamp, count = case.standing.value, case.obs.allocatable
    return f"the liveness rule '{rule}' says dead (stamp {stamp}, allocatable {case.res} {count})"


def _stamp_why(case: _Case) -> str:
    """Why a stamp is written now."""
    if case.memory.awaiting_sign_of_life:
        sign = _sign_of_life(case.obs, case.memory, case.rules, now=case.now)
        return (
            f"{sign} is a sign of life after the cleanup: {case.vendor} is readmitted "
            "and a fresh window starts"
        )
    h = case.handshake
    value = shorten(h.value or "")
    if h.kind is HandshakeKind.ABSENT:
        return f"the node carries {case.vendor}'s register annotation and no stamp"
    if h.kind is HandshakeKind.REPORT:
        if (h.value or "").startswith("Deleted"):
            return f"{value} is the cleanup mark of HAMi up to v2.9, not a stamp"
        return f"the plugin's report {value} is answered with a stamp"
    if h.kind is HandshakeKind.BAD_STAMP:
        return f"{value} names no time that can be read ({h.error}): it counts as no stamp"
    age = case.age
    if age is not None and age < timedelta(0):
        return f"the stamp {value} lies {span(age)} ahead, more than a window: it counts as no stamp"
    return f"the handshake {value} is no usable stamp"


def _alive_why(case: _Case) -> str:
    """Why the vendor is alive (the verdicts that keep it)."""
    d = case.decision
    age = case.age
    if d.verdict is Verdict.FRESH and age is not None:
        left = case.window - age
        return (
            f"the stamp is fresh ({span(age)} old, {span(left)} left)"
            if age >= timedelta(0)
            else f"the stamp is fresh (it names a moment {span(age)} ahead)"
        )
    if d.verdict is Verdict.KEPT_BY_ALLOCATABLE and age is not None:
        return (
            f"the stamp expired {span(age - case.window)} ago, but allocatable {case.res} is "
            f"{case.obs.allocatable}, which keeps {case.vendor} alive"
        )
    if d.verdict is Verdict.NO_HANDSHAKE:
        return (
            f"{case.vendor} has no handshake annotation; its liveness rule '{case.rules.liveness.name}' "
            f"keeps it (allocatable {case.res} {case.obs.allocatable})"
        )
    return f"the liveness verdict is {d.verdict.value}"


def _at_deadline(case: _Case) -> str:
    keeps = f"the plugin reports in {case.hs} or allocatable {case.res} is above 0 before then"
    if case.decision.memory.registered:
        return f"the stamp expires: unless {keeps}, {case.vendor} is cleaned up (the handshake deleted)"
    return (
        f"the stamp expires: unless {keeps}, {case.vendor} is judged dead; there is nothing to clean, "
        "and from then on it registers here only on a sign of life"
    )


def _next_step(case: _Case) -> NextStep:
    d, kind = case.decision, _write_kind(case.decision)
    if d.write is None:
        why = "nothing to write: " + _nothing_why(case)
    else:
        why = f"{kind.value} {d.write.annotation} now: "
        why += _stamp_why(case) if kind is WriteKind.STAMP else _delete_why(case)
    deadline = d.recheck_at if kind is not WriteKind.DELETE else None
    return NextStep(
        write=kind,
        annotation=d.write.annotation if d.write is not None else None,
        value=d.write.value if d.write is not None else None,
        why=why,
        deadline=deadline.astimezone(case.now.tzinfo) if deadline is not None else None,
        at_deadline=_at_deadline(case) if deadline is not None else None,
    )


def _delete_why(case: _Case) -> str:
    if case.decision.reason is Reason.CLEANED_UP:
        return (
            f"{case.vendor} is cleaned up: {_dead_why(case)}; its devices leave the cache, and it comes back "
            f"only when {case.signs}"
        )
    return (
        f"{case.vendor} was cleaned up and the node still shows {shorten(case.obs.handshake or '')}, the "
        "value judged then (the delete was not sent, or has not landed)"
    )


def _nothing_why(case: _Case) -> str:
    d = case.decision
    vendor = case.vendor
    if d.reason is Reason.NODE_DELETED:
        return "the Node is deleted"
    if d.reason is Reason.NOT_SELECTED:
        return f"the node does not match the node selector {case.selector}"
    if d.verdict is Verdict.RULE_FAILED:
        return f"the liveness rule failed, so nothing is judged: {d.error}"
    if d.reason is Reason.AWAITING_SIGN_OF_LIFE and d.verdict is Verdict.DEAD:
        return (
            f"{_dead_why(case)}, but {vendor} never got into the cache here: there is nothing to clean "
            f"and the stamp is left as it is; it registers when {case.signs}"
        )
    if d.reason is Reason.AWAITING_SIGN_OF_LIFE:
        return (
            f"{vendor} was cleaned up and has shown no sign of life since; a stamp is not one, so none "
            f"is written; it comes back when {case.signs}"
        )
    if d.verdict is Verdict.UNSTAMPED:
        return f"the node carries neither {case.rules.register_annotation} nor {case.hs}"
    why = _alive_why(case)
    if d.verdict is Verdict.KEPT_BY_ALLOCATABLE:
        why += f"; it is cleaned up once allocatable {case.res} drops to 0"
    elif d.verdict is Verdict.FRESH and d.recheck_at is None and case.obs.allocatable > 0:
        why += f"; when it expires, allocatable {case.res} ({case.obs.allocatable}) keeps {vendor}"
    if d.reason is Reason.NO_VENDOR:
        why += f"; the node carries no {case.rules.register_annotation}, so there is nothing to register"
    return why


def _notes(case: _Case) -> Iterator[Note]:
    h = case.handshake
    value = shorten(h.value or "")
    vendor = case.vendor
    if case.seen.allocatable_invalid:
        raw = shorten(case.seen.allocatable_raw or "")
        yield Note("allocatable-invalid", f"allocatable {case.res}={raw} is not a quantity: it counts as 0")
    if not (case.obs.present and case.obs.selected) or case.rules.handshake_annotation is None:
        return
    is_stamp = h.kind in (HandshakeKind.STAMP, HandshakeKind.BAD_STAMP)
    if is_stamp and case.obs.register is None and not case.decision.memory.registered:
        register = case.rules.register_annotation
        text = (
            f"{case.hs} holds a scheduler stamp ({value}), but the node has no {register}: "
            "HAMi's scheduler stamps every node for every vendor, CPU-only ones included. The stamp says "
            f"nothing about {vendor} here; without its register annotation nothing is registered"
        )
        yield Note("hami-stamp-without-vendor", text)
    stamp = h.kind is HandshakeKind.STAMP and h.value is not None
    layout = _stamp_layout(h.value or "") if stamp else None
    if layout is not None:
        text = (
            f"{value} is in {layout}, which HAMi v2.10 cannot parse: HAMi counts it as healthy forever "
            f"and never cleans {vendor} up through it; hami-core reads it as a stamp that expires"
        )
        yield Note("hami-cannot-parse", text)
    elif stamp and case.age is not None and case.standing is StampStanding.MISSING:
        text = (
            f"{value} lies {span(case.age)} ahead: HAMi counts it as healthy until then; hami-core "
            "counts a stamp more than a window ahead as no stamp and stamps again"
        )
        yield Note("hami-far-future", text)
    if h.kind is HandshakeKind.BAD_STAMP:
        text = (
            f"{value} is a Requesting value without a readable time: HAMi counts it as healthy forever and "
            f"never cleans {vendor} up through it; hami-core counts it as no stamp and stamps again"
        )
        yield Note("hami-cannot-parse", text)
    if h.kind is HandshakeKind.REPORT and (h.value or "").startswith("Deleted"):
        text = (
            f"{value} is the mark HAMi up to v2.9 wrote on cleanup; HAMi v2.10 and hami-core both count it "
            "as no stamp"
        )
        yield Note("hami-deleted-mark", text)
    memory = case.memory
    if (
        case.remembered
        and memory.awaiting_sign_of_life
        and h.kind is HandshakeKind.STAMP
        and fingerprint(h.value) != memory.handshake_at_cleanup
    ):
        age = f", {span(case.age)} old" if case.age is not None and case.age >= timedelta(0) else ""
        text = (
            f"{vendor} was cleaned up here and has shown no sign of life since, yet the node carries a "
            f"stamp hami-core did not write ({value}{age}): HAMi's scheduler stamps a vendor again after "
            "cleaning it up and re-adds its devices, then cleans it again a window later (its flapping). A "
            f"stamp is not a sign of life: hami-core keeps {vendor} out until {case.signs}"
        )
        yield Note("hami-flapping", text)
    if not case.remembered:
        yield from _without_memory(case)


def _without_memory(case: _Case) -> list[Note]:
    """What a scheduler with a past on this node would do differently: one that has the vendor registered,
    or one that cleaned it up when the node looked as it does now and waits for a sign of life."""
    obs = case.obs
    state = case.state
    if state in (VendorState.NOT_SELECTED, VendorState.NODE_DELETED) or vendor_absent(obs, _NOTHING_KNOWN):
        return []
    pasts: list[tuple[str, VendorMemory]] = []
    if obs.register is not None:
        decoded = _read(case, obs.register)
        if not isinstance(decoded, str) and decoded:
            registered = VendorMemory(devices=decoded, register=fingerprint(obs.register))
            pasts.append((f"has {case.vendor} registered here", registered))
    report = obs.handshake if case.handshake.kind is HandshakeKind.REPORT else None
    cleaned = VendorMemory(
        awaiting_sign_of_life=True,
        register_at_cleanup=fingerprint(obs.register),
        handshake_at_cleanup=fingerprint(report),
    )
    pasts.append((f"cleaned {case.vendor} up here when the node looked as it does now", cleaned))
    actual = (state in IN_CACHE, _write_kind(case.decision))
    others = []
    for who, memory in pasts:
        then = evaluate(obs, memory, now=case.now, rules=case.rules, window=case.window, view=case.seen.view)
        if (state_of(then.reason) in IN_CACHE, _write_kind(then)) != actual:
            others.append(f"a scheduler that {who} would {_would(case, then)}")
    if not others:
        return []
    text = (
        "hami doctor has no memory of earlier evaluations and judges as a scheduler that has just started: "
        + "; ".join(others)
        + f". A running scheduler's /cache/{obs.node} view knows which applies"
    )
    return [Note("no-memory", text)]


def _write_kind(decision: Decision) -> WriteKind:
    """The kind of handshake write a decision makes."""
    if decision.write is None:
        return WriteKind.NOTHING
    return WriteKind.STAMP if decision.write.value is not None else WriteKind.DELETE


def _would(case: _Case, then: Decision) -> str:
    """What another decision does, as the end of "a scheduler that ... would ..."."""
    kind = _write_kind(then)
    if kind is WriteKind.DELETE:
        return f"clean it up now (delete {case.hs})"
    state = state_of(then.reason)
    if kind is WriteKind.STAMP:
        return f"stamp {case.hs} now"
    if state is VendorState.AWAITING_SIGN_OF_LIFE:
        alone = (
            " (a stamp alone, such as HAMi's, does not readmit it)"
            if case.handshake.kind is HandshakeKind.STAMP
            else ""
        )
        return f"keep it out and write nothing until {case.signs}{alone}"
    return f"write nothing and show it {state.value}"


# --- the Events' words ---------------------------------------------------------------------------------


def _sign_of_life(obs: Observation, memory: VendorMemory, rules: VendorRules, *, now: datetime) -> str:
    """Which sign of life readmitted a vendor (spec 4.2), as the decision core found it."""
    reported = (
        rules.handshake_annotation is not None
        and classify(obs.handshake, tz=now.tzinfo or UTC).kind is HandshakeKind.REPORT
    )
    sign = sign_of_life(obs, memory, reported=reported)
    if sign == "allocatable":
        return f"allocatable {rules.count_resource} is {obs.allocatable}"
    if sign == "report":
        return f"the plugin's report {shorten(obs.handshake or '')}"
    return f"a new value of {_source_words(rules)}"


def _source_words(rules: VendorRules) -> str:
    """Where a vendor's devices come from, for messages: its register annotation, or the Node's inputs."""
    if rules.register_annotation is not None:
        return rules.register_annotation
    source = rules.node_source
    inputs = [] if source is None else [*source.capacity, *source.allocatable, *source.annotations]
    return f"the Node ({', '.join(inputs)})"


def _handshake_words(obs: Observation, rules: VendorRules, *, now: datetime, window: timedelta) -> str:
    """What the handshake showed when a vendor was judged, for a cleanup's message."""
    if rules.handshake_annotation is None:
        return "the vendor has no handshake"
    handshake = classify(obs.handshake, tz=now.tzinfo or UTC)  # now is aware: decide() checks it
    if handshake.kind is HandshakeKind.ABSENT:
        return f"no {rules.handshake_annotation} annotation"
    if handshake.kind is HandshakeKind.STAMP and handshake.time is not None:
        age = span(max(0, round((now - handshake.time).total_seconds())))
        return f"the scheduler's stamp is {age} old (window {span(window)})"
    if handshake.kind is HandshakeKind.BAD_STAMP:
        return f"the stamp {shorten(obs.handshake or '')} does not parse"
    return f"the handshake is {shorten(obs.handshake or '')}, not a stamp"


#: The Event reasons of a vendor's registration changing on a node this replica already knew: a Warning when
#: it is cleaned up, Normal when it registers, or comes back after a sign of life.
CLEANED_UP = "HamiVendorCleanedUp"
REGISTERED = "HamiVendorRegistered"
READMITTED = "HamiVendorReadmitted"


def registration_event(
    obs: Observation,
    memory: VendorMemory,
    decision: Decision,
    rules: VendorRules,
    *,
    now: datetime,
    window: timedelta,
    seen_before: bool,
) -> tuple[Literal["Normal", "Warning"], str, str] | None:
    """The Event a decision is worth, as (type, reason, message), or ``None``. A registration found on the
    first sight of a Node object is how the node was, not news: only a change this replica saw happen is
    worth an Event (a scheduler that starts posts none for the nodes it finds registered)."""
    vendor = rules.vendor_key
    if decision.reason is Reason.CLEANED_UP:  # the rule, the stamp, the count, what follows
        allocatable = f"allocatable {rules.count_resource} is {obs.allocatable}"
        if obs.allocatable == 0 and memory.allocatable_seen:
            allocatable += " (it was above 0)"
        stamp = _handshake_words(obs, rules, now=now, window=window)
        message = (
            f"{vendor} cleaned up by the {rules.liveness.name!r} liveness rule: {stamp}, {allocatable}; "
            f"its {_devices(len(memory.devices or ()))} left the device cache until "
            f"{_signs_of_life(rules)}"
        )
        return "Warning", CLEANED_UP, message
    count = _devices(len(decision.devices or ()))
    if decision.reason is Reason.REGISTERED and memory.awaiting_sign_of_life:
        sign = _sign_of_life(obs, memory, rules, now=now)
        return "Normal", READMITTED, f"{vendor} is back after a sign of life ({sign}): {count} registered"
    if decision.reason is Reason.REGISTERED and seen_before:
        return "Normal", REGISTERED, f"{vendor} registered {count} from {_source_words(rules)}"
    return None


# --- JSON -------------------------------------------------------------------------------------------------


def _plain(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return round(value.total_seconds(), 3)
    return value.value if isinstance(value, enum.Enum) else value


def _facts_json(facts: attrs.AttrsInstance, **renamed: str) -> dict[str, object]:
    """Facts as JSON, field by field in their order (``renamed``: field -> JSON key)."""
    return {renamed.get(f.name, f.name): _plain(getattr(facts, f.name)) for f in attrs.fields(type(facts))}


def _vendor_json(e: VendorExplanation) -> dict[str, Any]:
    """One vendor's explanation as JSON (``/cache/<node>`` and ``hami doctor --json``)."""
    return {
        "vendor": e.vendor_key,
        "state": e.state.value,
        "summary": e.summary,
        "reason": e.reason.value,
        "verdict": e.verdict.value,
        "error": e.error,
        "liveness": e.liveness,
        "source": e.source,
        "register": _facts_json(e.register, size="bytes"),
        "handshake": _facts_json(e.handshake, age="age_seconds"),
        "allocatable": _facts_json(e.allocatable, raw="value"),
        "next": _facts_json(e.next),
        "notes": [_facts_json(n) for n in e.notes],
    }


def explanation_json(explanation: NodeExplanation) -> dict[str, Any]:
    """A node's explanation as JSON; ``vendors`` is keyed by vendor key."""
    body = _facts_json(explanation, now="judged_at", window="window_seconds")
    body["window_seconds"] = explanation.window.total_seconds()  # unrounded
    body["vendors"] = {v.vendor_key: _vendor_json(v) for v in explanation.vendors}
    return body
