"""The oracle, Node by Node: what HAMi v2.10.0's scheduler registers against what hami-core caches.

The Node oracle (``tests/oracle/nodes/main.go``) sets HAMi's devices up from a device config exactly as
HAMi's scheduler does (``config.LoadConfig`` + ``config.InitDevicesWithConfig``, ``--enable-ascend`` and
``--enable-iluvatar``: 25 vendor keys) and calls every vendor's real ``GetNodeDevices`` and
``CheckHealth`` on each generated Node, against a fake API server that holds the Node (so HAMi's stamp
is seen). hami-core's side is the real scheduler, with every installed driver, on the in-memory cluster
(and one round on the real API server), on a ``FakeClock`` set to the instant the stamps were generated
against; its device cache and the Node's handshakes afterwards are what it registered.

Per (Node, vendor key) both sides give a ``Verdict``: whether the vendor is kept on the Node, its devices
(every field, pair scores included) and whether the handshake was stamped. They must be equal except
where a rule of ``EXCLUSIONS`` (the spec's **beyond HAMi** rules, each named) applies: a rule says what
hami-core must do instead, as HAMi's own answer on the same Node with the rule's replacement, or as a
stated change of HAMi's verdict. Nothing else may differ.

Every vendor key HAMi registers is either compared or in ``NOT_YET_IN_HAMI_CORE``, which the test asserts
exactly: a vendor without a driver there must have none; one with a driver that still disagrees with HAMi
must disagree only where its gap says, and at least once (a vendor that agrees, or that gained a driver,
fails the test until it is taken out of the set).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import pytest
from harness.clock import WatchedClock
from harness.node_cases import (
    CONFIG_VARIANTS,
    NodeCase,
    Settings,
    annotated_vendors,
    config_text,
    generate,
    handshake_value,
    node_json,
)
from harness.oracle import NodeOracle, Oracle, OracleError, VendorAnswer
from harness.scheduler_world import FAST, World

from hami_core.plugins.driver import VendorDriver
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.convert import device_to_dict
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.selector import NodeSelector

pytestmark = pytest.mark.oracle

#: Nodes per device-config variant (in memory); raise it for a deeper local run.
NODES = int(os.environ.get("HAMI_NODE_ORACLE_NODES", "450"))
#: Nodes of the one round on the real API server.
APISERVER_NODES = 120
SEED = int(os.environ.get("HAMI_NODE_ORACLE_SEED", "20261201"))

#: Every vendor key HAMi v2.10.0 registers with its chart's device config and both flags
#: (``../shared/notes/hami-vendors-v2.10.md``).
HAMI_KEYS = frozenset(
    {"NVIDIA", "MLU", "DCU", "kunlun", "XPU", "GCU", "Enflame", "Mthreads", "Metax-GPU", "Metax-SGPU"}
    | {"AWSNeuron", "AMD", "Vastai", "Biren"}
    | {"Ascend910A", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend910B4-1", "Ascend310P", "Ascend910C"}
    | {"MR-V100", "MR-V50", "BI-V150", "BI-V100"}
)


# ---------------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------------


@attrs.frozen
class Verdict:
    """One side's registration of one vendor on one Node."""

    kept: bool
    #: The devices when kept (normalised, see ``_device``); ``None`` when not kept.
    devices: tuple[Any, ...] | None
    stamped: bool

    def dropped(self) -> Verdict:
        return attrs.evolve(self, kept=False, devices=None)


def _numbers(value: Any) -> Any:
    """A free-form JSON value with every number as float (Go decodes numbers in ``map[string]any`` so)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _numbers(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_numbers(v) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    return float(value)


def _device(raw: Mapping[str, Any], scores: Mapping[str, int] | None) -> tuple[Any, ...]:
    """A device as both sides are compared: every field, and its pair scores (``None``: no score entry
    for it; a matching entry's ``null`` score counts as no scores, ``{}``, as in HAMi's use of them)."""
    keys = ("id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health", "devicevendor")
    profiles = tuple(_numbers(p) for p in raw["migProfiles"] or [])
    custom = None if raw["custominfo"] is None else _numbers(raw["custominfo"])
    score = None if scores is None else tuple(sorted(scores.items()))
    return (*(raw[k] for k in keys), profiles, custom, score)


def hami_verdict(answer: VendorAnswer) -> Verdict:
    if not answer.kept:
        return Verdict(kept=False, devices=None, stamped=answer.stamped)
    devices = []
    for raw in answer.devices or []:
        # HAMi's DevicePairScore: the zero value (empty uuid) when no entry matched the device's id.
        score = raw["pair_score"]
        devices.append(_device(raw, None if score["uuid"] == "" else dict(score["score"] or {})))
    return Verdict(kept=True, devices=tuple(devices), stamped=answer.stamped)


def _our_pair_scores(entry: Any) -> Sequence[Mapping[str, int] | None]:
    """The pair scores hami-core keeps beside a vendor's devices (one per device, ``None``: no entry), as
    its cache entry holds them (``/cache/<node>`` shows them); none where it keeps none."""
    return tuple(getattr(entry, "pair_scores", ()))


def our_verdict(
    scheduler: Scheduler,
    driver: VendorDriver | None,
    name: str,
    before: Mapping[str, str],
    after: Mapping[str, str],
) -> Verdict:
    if driver is None:
        return Verdict(kept=False, devices=None, stamped=False)
    entry = scheduler.cache.vendor(name, driver.vendor_key)
    stamped = False
    if driver.handshake_annotation is not None:
        key = driver.handshake_annotation
        now = after.get(key)
        stamped = now is not None and now != before.get(key) and now.startswith("Requesting_")
    if entry is None or not entry.devices:
        return Verdict(kept=False, devices=None, stamped=stamped)
    scores = _our_pair_scores(entry)
    devices = []
    for i, d in enumerate(entry.devices):
        score = scores[i] if i < len(scores) else None
        devices.append(_device(device_to_dict(d), None if score is None else dict(score)))
    return Verdict(kept=True, devices=tuple(devices), stamped=stamped)


# ---------------------------------------------------------------------------------------------------
# The spec's beyond-HAMi rules: the only exclusions
# ---------------------------------------------------------------------------------------------------

_SUFFIX: dict[str, int | Fraction] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "m": Fraction(1, 1000),
}
_SUFFIX |= {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"^(\d+(?:\.\d*)?)(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$")
INT32_MIN, INT32_MAX, INT64_MAX = -(2**31), 2**31 - 1, 2**63 - 1


def go_as_int64(text: str | None) -> int | None:
    """``resource.Quantity.AsInt64`` on one of the generator's quantities: the value when it is an integer
    that fits int64, else ``None`` (written for the generated spellings, independently of hami-core)."""
    if text is None:
        return None
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"not a generated quantity: {text!r}")
    number, exponent, suffix = match.groups()
    value = Fraction(number) * (Fraction(10) ** int(exponent[1:]) if exponent else _SUFFIX[suffix or ""])
    if value.denominator != 1 or not (0 <= value <= INT64_MAX):
        return None
    if not (suffix or "").endswith("i") and len(number.replace(".", "").lstrip("0")) > 18:
        return (
            None  # past ParseQuantity's int64 fast path (18 digits): held as inf.Dec, which AsInt64 refuses
        )
    return int(value)


@attrs.frozen
class Context:
    """What a rule may look at for one (Node, vendor)."""

    case: NodeCase
    key: str
    settings: Settings
    hami: VendorAnswer
    #: HAMi's answer on the Node with this (Node, vendor)'s replacements, when there are any.
    replaced: VendorAnswer | None
    #: HAMi's generic handshake rule on the seed's MLU annotation (the codec oracle), when asked.
    seed_mlu: Verdict | None


def _vendor(settings: Settings, key: str) -> Any:
    return next((v for v in annotated_vendors(settings) if v.key == key), None)


def effective_handshake(kind: str) -> str | None:
    """The handshake kind hami-core reads a generated kind as, where that differs from HAMi: ``""``
    means no stamp at all; ``None`` means as HAMi reads it."""
    return {
        "dotted-fresh": "fresh",
        "gostring-fresh": "fresh",
        "dotted-expired": "expired",
        "gostring-expired": "expired",
        "unparseable": "",
        "future-far": "",
    }.get(kind)


def _carries_vendor(ctx: Context) -> bool:
    vendor = _vendor(ctx.settings, ctx.key)
    return vendor is not None and (
        vendor.register in ctx.case.annotations
        or (vendor.handshake is not None and vendor.handshake in ctx.case.annotations)
    )


def _computed_out_of_range(ctx: Context) -> bool:
    """MLU and Moore Threads memory, computed as HAMi does it, in exact arithmetic: outside int32 (or past
    int64 on the way, where HAMi wraps) it is out of range. AWS Neuron's core mask (2^cores - 1 per device)
    is beyond int32 from 32 cores per device on (HAMi: -1), or with negative cores."""
    s, status = ctx.settings, ctx.case.status
    if ctx.key == "AWSNeuron":
        devices = go_as_int64(status.get(s.get("awsneuron", "resourceCountName")))
        total = go_as_int64(status.get(s.get("awsneuron", "resourceCoreName"))) or 0
        return devices is not None and devices > 0 and (total < 0 or total // devices > 31)
    if ctx.key == "MLU":
        cores = go_as_int64(status.get(s.get("cambricon", "resourceCoreName")))
        memory = go_as_int64(status.get(s.get("cambricon", "resourceMemoryName"))) or 0
        factor, per = 256, 100
    elif ctx.key == "Mthreads":
        cores = go_as_int64(status.get(s.get("mthreads", "resourceCoreName")))
        memory = go_as_int64(status.get(s.get("mthreads", "resourceMemoryName"))) or 0
        factor, per = 512, 16
    else:
        return False
    if not cores:
        return False
    product = memory * factor * per
    return product > INT64_MAX or not (INT32_MIN <= product // cores <= INT32_MAX)


def _mlu_seed_applies(ctx: Context) -> bool:
    return ctx.key == "MLU" and ctx.settings.get("cambricon", "resourceCoreName") not in ctx.case.status


Changes = dict[str, str | None]


def _null_element(case: NodeCase, key: str, settings: Settings, t0: datetime) -> Changes:
    if key == "Metax-SGPU" and case.tags.get("source:Metax-SGPU") == "null-element":
        return {"metax-tech.com/node-gpu-devices": "[x"}
    vendor = _vendor(settings, key)
    if vendor is not None and case.tags.get(f"register:{key}") == "null-element":
        return {vendor.register: "[x"}
    return {}


def _either_encoding(case: NodeCase, key: str, settings: Settings, t0: datetime) -> Changes:
    if case.tags.get(f"register:{key}") == "foreign":
        return dict(case.replace[f"foreign:{key}"])
    return {}


def _bad_score(case: NodeCase, key: str, settings: Settings, t0: datetime) -> Changes:
    if key == "NVIDIA" and case.tags.get("score") == "malformed":
        return {"hami.io/node-nvidia-score": None}
    return {}


def _stamp_as(kinds: tuple[str, ...]) -> Callable[[NodeCase, str, Settings, datetime], Changes]:
    def changes(case: NodeCase, key: str, settings: Settings, t0: datetime) -> Changes:
        vendor = _vendor(settings, key)
        kind = case.tags.get(f"handshake:{key}", "absent")
        if vendor is None or vendor.handshake is None or kind not in kinds:
            return {}
        effective = effective_handshake(kind)
        return {vendor.handshake: handshake_value(effective, t0) if effective else None}

    return changes


@attrs.frozen
class Rule:
    """One beyond-HAMi rule: where it applies, and what hami-core must then do instead of HAMi.

    A rule with ``replace`` applies where it changes something on the Node: hami-core must then do what
    HAMi does on the Node with the changes of every such rule applied (the oracle is asked). A rule with
    ``applies`` and ``expect`` changes HAMi's verdict itself."""

    name: str
    spec: str
    #: The vendor keys the rule can apply to (``None``: any).
    scope: frozenset[str] | None = None
    replace: Callable[[NodeCase, str, Settings, datetime], Changes] | None = None
    applies: Callable[[Context], bool] | None = None
    expect: Callable[[Context, Verdict], Verdict] | None = None


EXCLUSIONS: tuple[Rule, ...] = (
    Rule(
        "mlu-both-sources",
        "spec 1b: without HAMi v2.10's MLU capacity on the Node, the seed's hami.io/node-mlu-register "
        "(either encoding) is read with the handshake rule on hami.io/node-handshake-mlu and the config's "
        "MLU count resource: what HAMi's own codecs and generic CheckHealth give on them (HAMi v2.10 "
        "reads no MLU annotation); the handshake read as the rules below say",
        scope=frozenset({"MLU"}),
        applies=_mlu_seed_applies,
        expect=lambda ctx, v: ctx.seed_mlu if ctx.seed_mlu is not None else v,
    ),
    Rule(
        "null-element",
        "spec 3.2: a JSON list with a null element is a decode error (HAMi's scheduler panics): as HAMi "
        "on the Node with an undecodable value instead",
        replace=_null_element,
    ),
    Rule(
        "either-encoding",
        "spec 3.4: a register value in the other encoding is read: as HAMi on the same devices in the "
        "vendor's own encoding",
        replace=_either_encoding,
    ),
    Rule(
        "nvidia-bad-score-keeps-devices",
        "spec 1b: a malformed hami.io/node-nvidia-score keeps the devices without scores (HAMi refuses "
        "the whole registration): as HAMi on the Node without the score annotation",
        scope=frozenset({"NVIDIA"}),
        replace=_bad_score,
    ),
    Rule(
        "legacy-stamps-expire",
        "spec 4 rule 1: HAMi v2.4's dotted and Go's Time.String() stamps are real stamps that expire "
        "(HAMi cannot parse them: healthy forever): as HAMi on the same instant in its own layout",
        replace=_stamp_as(("dotted-fresh", "dotted-expired", "gostring-fresh", "gostring-expired")),
    ),
    Rule(
        "unparseable-stamp-restamped",
        "spec 4 rule 5: a Requesting value whose time does not parse, or more than a window ahead, is no "
        "stamp (HAMi: healthy forever, never re-stamped): as HAMi on the Node without the handshake",
        replace=_stamp_as(("unparseable", "future-far")),
    ),
    Rule(
        "no-stamp-without-vendor",
        "spec 4 rule 6: a handshake is written only on a Node carrying the vendor's register or handshake "
        "annotation (HAMi stamps every Node once per vendor): stamped becomes false",
        applies=lambda ctx: ctx.hami.handshake_key is not None and not _carries_vendor(ctx),
        expect=lambda ctx, v: attrs.evolve(v, stamped=False),
    ),
    Rule(
        "computed-quantities-in-range",
        "spec 1b: a device field HAMi computes from quantities and wraps to int32 (MLU and Moore Threads "
        "memory, AWS Neuron's core mask) is an error when out of range: not kept",
        scope=frozenset({"MLU", "Mthreads", "AWSNeuron"}),
        applies=_computed_out_of_range,
        expect=lambda ctx, v: v.dropped(),
    ),
    # "aws-neuron-per-node" (spec 1b: cores per device from each Node's own capacity; HAMi fixes them
    # from the first Neuron Node its process sees) needs no rule here: every Node is judged in a fresh
    # HAMi device set. test_aws_neuron_cores_come_from_the_first_node pins HAMi's side of it.
)

_REPLACING = tuple(r for r in EXCLUSIONS if r.replace is not None)


def replacements(
    case: NodeCase, key: str, settings: Settings, t0: datetime
) -> tuple[Changes, tuple[str, ...]]:
    """The changes of every replacing rule that applies to (``case``, ``key``), and their names. None apply
    where the seed's MLU path does (``_seed_mlu`` reads the same values as hami-core does itself)."""
    changes: Changes = {}
    names = []
    if key == "MLU" and settings.get("cambricon", "resourceCoreName") not in case.status:
        return changes, ()
    for rule in _REPLACING:
        if rule.scope is not None and key not in rule.scope:
            continue
        assert rule.replace is not None
        more = rule.replace(case, key, settings, t0)
        if more:
            changes.update(more)
            names.append(rule.name)
    return changes, tuple(names)


def expected(ctx: Context, replaced_by: tuple[str, ...]) -> tuple[Verdict, tuple[str, ...]]:
    """What hami-core must register: HAMi's verdict (on the replaced Node where replacing rules apply)
    with every other applicable rule applied, and the names of the rules used."""
    if replaced_by:
        assert ctx.replaced is not None
        verdict, used = hami_verdict(ctx.replaced), list(replaced_by)
    else:
        verdict, used = hami_verdict(ctx.hami), []
    for rule in EXCLUSIONS:
        if rule.applies is None or (rule.scope is not None and ctx.key not in rule.scope):
            continue
        if rule.applies(ctx):
            assert rule.expect is not None
            verdict = rule.expect(ctx, verdict)
            used.append(rule.name)
    return verdict, tuple(used)


# ---------------------------------------------------------------------------------------------------
# Coverage: every HAMi vendor compared, or named here
# ---------------------------------------------------------------------------------------------------


@attrs.frozen
class Gap:
    """Why a vendor is not compared yet. ``where``: for a vendor with a driver, the Nodes on which it may
    disagree with HAMi (and must, on at least one); ``None``: hami-core has no driver for it."""

    reason: str
    where: Callable[[NodeCase, Settings], bool] | None = None


_NO_DRIVER = "no hami-core driver yet"


NOT_YET_IN_HAMI_CORE: dict[str, Gap] = {}


# ---------------------------------------------------------------------------------------------------
# hami-core's side
# ---------------------------------------------------------------------------------------------------


def hami_core_drivers(text: str) -> list[VendorDriver]:
    """Every installed driver, set up from the device config ``text`` as ``hami scheduler run
    --device-config`` does where hami-core reads HAMi's device config (``DeviceConfig``); before it did,
    the config's count resources are applied as ``--count-resource`` does."""
    try:
        from hami_core.plugins.settings import DeviceConfig  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        settings = Settings.of(text)
        _, installed = load_drivers()
        names = {d.vendor_key: d.name for d in installed}
        wanted = {
            "NVIDIA": settings.get("nvidia", "resourceCountName"),
            "DCU": settings.get("hygon", "resourceCountName"),
            "XPU": settings.get("kunlun", "resourceVCountName"),
            "MLU": settings.get("cambricon", "resourceCountName"),
        }
        overrides = {names[key]: resource for key, resource in wanted.items() if key in names}
        return list(load_drivers(count_resources=overrides)[1])
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "device-config.yaml"
        path.write_text(text, encoding="utf-8")
        config = DeviceConfig.load(path)
    return list(load_drivers(device_config=config)[1])


def run_hami_core(world: World, drivers: Sequence[VendorDriver], t0: datetime) -> Scheduler:
    """One replica with every driver, leading at once, on a fake clock at ``t0``; settled."""
    world.clock = WatchedClock(start=t0)
    options: dict[str, Any] = {
        **FAST,
        "http_port": None,
        "leader_elect": False,
        "lease_namespace": world.namespace,
    }
    replica = Scheduler(
        world.cluster(),
        [d.rules() for d in drivers],
        SchedulerConfig(**options, node_selector=NodeSelector(world.label)),
        clock=world.clock,
    )
    world.replicas.append(replica)
    world.start(replica)
    world.settle(timeout=120.0)
    return replica


# ---------------------------------------------------------------------------------------------------
# One round
# ---------------------------------------------------------------------------------------------------


@attrs.frozen
class Outcome:
    #: (node, key) -> (HAMi's verdict after the rules, ours, the rules used)
    rows: Mapping[tuple[str, str], tuple[Verdict, Verdict, tuple[str, ...]]]
    cases: Mapping[str, NodeCase]
    hami_kept: Counter[str]
    drivers: Mapping[str, VendorDriver]


def _apply(annotations: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    out = dict(annotations)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _seed_mlu(codec: Oracle, case: NodeCase, settings: Settings, t0: datetime) -> Verdict:
    """HAMi's own codecs and generic CheckHealth on the seed's MLU annotation and handshake (the handshake
    read as hami-core reads it; the stamp only where the Node carries either annotation)."""
    register = case.annotations.get("hami.io/node-mlu-register")
    handshake_key = "hami.io/node-handshake-mlu"
    kind = case.tags.get("handshake:MLU", "absent")
    effective = effective_handshake(kind)
    if effective is None:
        handshake = case.annotations.get(handshake_key)
    else:
        handshake = handshake_value(effective, t0) if effective else None
    carries = register is not None or handshake_key in case.annotations
    if not carries:
        return Verdict(kept=False, devices=None, stamped=False)
    resource = settings.get("cambricon", "resourceCountName")
    health = codec.check_health(
        handshake,
        allocatable=case.status.get(resource),
        vendor="MLU",
        handshake_key=handshake_key,
        resource=resource,
    )
    stamped = "patch" in health.actions
    if register is None:
        return Verdict(kept=False, devices=None, stamped=stamped)
    stripped = register.strip(" \t\r\n")
    json_side = stripped.startswith("[") or stripped == "null"
    decoded = codec.decode_json(register) if json_side else codec.decode_legacy(register)
    if not decoded.ok or not decoded.devices or not health.healthy:
        return Verdict(kept=False, devices=None, stamped=stamped)
    devices = tuple(_device({**raw, "devicevendor": "MLU"}, None) for raw in decoded.devices)
    return Verdict(kept=True, devices=devices, stamped=stamped)


def run_round(
    world: World, node_oracle: NodeOracle, codec: Oracle, variant: str, count: int, seed: int
) -> Outcome:
    text = config_text(variant)
    settings = Settings.of(text)
    now = datetime.now().astimezone()
    t0 = now.replace(microsecond=0)
    drivers = {d.vendor_key: d for d in hami_core_drivers(text)}
    cases = generate(seed, count, settings, t0, favour=frozenset(drivers))
    names = [f"{case.stem}-{i:04d}-{uuid.uuid4().hex[:6]}" for i, case in enumerate(cases)]
    by_name = dict(zip(names, cases, strict=True))

    # HAMi first (its clock is the real one: the stamps were made against it a moment ago).
    nodes = [node_json(n, c.annotations, c.status, c.labels) for n, c in by_name.items()]
    keys, answers = node_oracle.register(text, nodes)
    assert set(keys) == HAMI_KEYS, f"HAMi registered {sorted(keys)} from the {variant!r} device config"
    late = max((a.now_after - t0).total_seconds() for a in answers)
    assert late < 50, f"HAMi judged the stamps {late:.0f} s after they were made; their ages are off"
    hami = {a.node: a for a in answers}
    assert list(hami) == names

    replaced_nodes: list[dict[str, Any]] = []
    replaced_index: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {}
    for name, case in by_name.items():
        for key in keys:
            changes, rules = replacements(case, key, settings, t0)
            if changes:
                replaced_index[(name, key)] = (len(replaced_nodes), rules)
                replaced_nodes.append(
                    node_json(name, _apply(case.annotations, changes), case.status, case.labels)
                )
    _, replaced_answers = node_oracle.register(text, replaced_nodes) if replaced_nodes else ((), [])

    # hami-core: the same Nodes, then one scheduler with every driver.
    for name, case in by_name.items():
        world.admin.create_node(
            name, labels={**world.label, **case.labels}, annotations=dict(case.annotations)
        )
        if case.status:
            world.admin.patch_node_status(name, dict(case.status))
    scheduler = run_hami_core(world, list(drivers.values()), t0)

    rows = {}
    kept: Counter[str] = Counter()
    for name, case in by_name.items():
        after = world.annotations(name)
        for key in keys:
            answer = hami[name].vendors[key]
            kept[key] += answer.kept
            index, rules = replaced_index.get((name, key), (None, ()))
            ctx = Context(
                case=case,
                key=key,
                settings=settings,
                hami=answer,
                replaced=None if index is None else replaced_answers[index].vendors[key],
                seed_mlu=_seed_mlu(codec, case, settings, t0) if key == "MLU" and "MLU" in drivers else None,
            )
            want, used = expected(ctx, rules)
            got = our_verdict(scheduler, drivers.get(key), name, case.annotations, after)
            rows[(name, key)] = (want, got, used)
    world.stop_all()
    return Outcome(rows=rows, cases=by_name, hami_kept=kept, drivers=drivers)


def _show(name: str, key: str, case: NodeCase, want: Verdict, got: Verdict, used: tuple[str, ...]) -> str:
    return (
        f"  {name} / {key} (rules: {', '.join(used) or 'none'})\n"
        f"    tags: {dict(case.tags)}\n    annotations: {dict(case.annotations)}\n"
        f"    status: {dict(case.status)}\n"
        f"    HAMi (after rules): {want}\n    hami-core:          {got}"
    )


def check(outcome: Outcome, settings: Settings, *, every_key_seen: bool = True) -> dict[str, int]:
    """Every assertion of the comparison; returns how often each rule was used on compared vendors.
    ``every_key_seen``: also require that HAMi registered every vendor key on some generated Node (the
    generator reaches every family; a round of a few Nodes need not)."""
    installed = set(outcome.drivers)
    assert installed <= HAMI_KEYS, (
        f"hami-core drivers for keys HAMi does not register: {sorted(installed - HAMI_KEYS)}"
    )
    assert set(NOT_YET_IN_HAMI_CORE) <= HAMI_KEYS, sorted(set(NOT_YET_IN_HAMI_CORE) - HAMI_KEYS)
    compared = HAMI_KEYS - set(NOT_YET_IN_HAMI_CORE)
    missing = compared - installed
    assert not missing, (
        f"vendors neither compared (no driver installed) nor in NOT_YET_IN_HAMI_CORE: {sorted(missing)}"
    )
    gained = sorted(k for k, gap in NOT_YET_IN_HAMI_CORE.items() if gap.where is None and k in installed)
    assert not gained, f"{gained} gained a driver: take them out of NOT_YET_IN_HAMI_CORE (or name their gap)"
    never = sorted(k for k in HAMI_KEYS if outcome.hami_kept[k] == 0)
    assert not (every_key_seen and never), (
        f"the generated Nodes never made HAMi register {never}: the generator misses them"
    )

    wrong, outside_gap, gap_seen = [], [], Counter[str]()
    used_rules: Counter[str] = Counter()
    for (name, key), (want, got, used) in outcome.rows.items():
        case = outcome.cases[name]
        gap = NOT_YET_IN_HAMI_CORE.get(key)
        if key in compared:
            used_rules.update(used)
        if want == got:
            continue
        if gap is None:
            wrong.append(_show(name, key, case, want, got, used))
        elif gap.where is not None:
            if gap.where(case, settings):
                gap_seen[key] += 1
            else:
                outside_gap.append(_show(name, key, case, want, got, used))
    total = sum(1 for (_, key) in outcome.rows if key in compared)
    assert not wrong, (
        f"{len(wrong)} of {total} compared (node, vendor) pairs disagree with HAMi:\n" + "\n".join(wrong[:8])
    )
    assert not outside_gap, (
        f"{len(outside_gap)} pairs of NOT_YET vendors disagree outside their named gap:\n"
        + "\n".join(outside_gap[:8])
    )
    agreeing = sorted(
        k
        for k, gap in NOT_YET_IN_HAMI_CORE.items()
        if gap.where is not None and k in installed and not gap_seen[k]
    )
    assert not agreeing, (
        f"{agreeing} agree with HAMi on every generated Node now: take them out of NOT_YET_IN_HAMI_CORE"
    )
    return dict(used_rules)


# ---------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------


def test_node_oracle_sets_up_hamis_vendors(hami_node_oracle: NodeOracle) -> None:
    """With the chart's device config: 14 keys without the two flags, 25 with both (the notes' count)."""
    text = config_text("chart")
    keys, _ = hami_node_oracle.register(text, [], enable_ascend=False, enable_iluvatar=False)
    assert len(keys) == 14 and not any(k.startswith(("Ascend", "MR-", "BI-")) for k in keys), keys
    keys, _ = hami_node_oracle.register(text, [])
    assert set(keys) == HAMI_KEYS


@pytest.mark.parametrize(
    ("config", "says"),
    [("nvidia: [\n", "LoadConfig: yaml"), ("{}\n", "InitDevicesWithConfig: all configurations are empty")],
    ids=["not-yaml", "empty"],
)
def test_node_oracle_names_a_device_config_hami_refuses(
    hami_node_oracle: NodeOracle, config: str, says: str
) -> None:
    """Where HAMi's scheduler would exit (klog.Fatalf), the oracle says why in one line and keeps serving."""
    with pytest.raises(OracleError, match="HAMi refused the device config: ") as refused:
        hami_node_oracle.register(config, [node_json("n", {}, {}, {})])
    assert says in str(refused.value) and "\n" not in str(refused.value)
    keys, _ = hami_node_oracle.register(config_text("chart"), [])
    assert set(keys) == HAMI_KEYS


def test_node_oracle_sees_hamis_stamp(hami_node_oracle: NodeOracle) -> None:
    """HAMi stamps a bare Node once per handshake vendor, in the fake API server; a fresh stamp it leaves."""
    _, [bare] = hami_node_oracle.register(config_text("chart"), [node_json("bare", {}, {}, {})])
    dcu = bare.vendors["DCU"]
    assert (dcu.healthy, dcu.need_update, dcu.actions) == (True, True, ("get", "patch"))
    assert dcu.handshake_after is not None and dcu.handshake_after.startswith("Requesting_")
    assert bare.vendors["MLU"].handshake_key is None and bare.vendors["MLU"].actions == ()
    fresh = bare.now_before.strftime("Requesting_%Y-%m-%d %H:%M:%S")
    _, [node] = hami_node_oracle.register(
        config_text("chart"), [node_json("n", {"hami.io/node-handshake-dcu": fresh}, {}, {})]
    )
    assert node.vendors["DCU"].actions == () and node.vendors["DCU"].handshake_after == fresh


def test_node_oracle_reads_quantities_as_the_api_server_stores_them(hami_node_oracle: NodeOracle) -> None:
    """HAMi's lister gets each quantity in its stored (canonical) form: ``4000m`` arrives as ``4``, which
    AsInt64 reads (it refuses the milli form itself)."""
    node = node_json("n", {}, {"enflame.com/gcu": "4000m", "metax-tech.com/gpu": "8Ei"}, {})
    _, [result] = hami_node_oracle.register(config_text("chart"), [node])
    assert len(result.vendors["GCU"].devices or []) == 4
    assert result.vendors["Metax-GPU"].error is not None  # past int64: AsInt64 refuses it


def test_node_oracle_reports_pair_scores_and_panics(hami_node_oracle: NodeOracle) -> None:
    devices = '[{"id":"GPU-0","count":10,"health":true},{"id":"GPU-1","count":10,"health":true}]'
    scores = '[{"uuid":"GPU-1","score":{"GPU-0":40}},{"uuid":"GPU-1","score":{"x":1}}]'
    annotations = {"hami.io/node-nvidia-register": devices, "hami.io/node-nvidia-score": scores}
    _, [node] = hami_node_oracle.register(config_text("chart"), [node_json("n", annotations, {}, {})])
    got = [d["pair_score"] for d in node.vendors["NVIDIA"].devices or []]
    assert got == [{"uuid": "", "score": None}, {"uuid": "GPU-1", "score": {"GPU-0": 40}}]
    crash = {"hami.io/node-register-xpu": '[{"id":"a"},null]'}
    _, [node] = hami_node_oracle.register(config_text("chart"), [node_json("n", crash, {}, {})])
    assert node.vendors["XPU"].panic is not None and "nil pointer" in node.vendors["XPU"].panic


VECTORS = Path(__file__).resolve().parents[2].parent / "shared" / "vectors" / "hami-unit-test-cases.json"

#: HAMi's unit-tested GetNodeDevices functions, by the vendor key they run as here.
_UNIT_TESTED = {
    "NvidiaGPUDevices": "NVIDIA",
    "DCUDevices": "DCU",
    "IluvatarDevices": "MR-V100",
    "KunlunVDevices": "XPU",
    "ascend.Devices": "Ascend910B3",
    "BirenDevices": "Biren",
    "VastaiDevices": "Vastai",
    "CambriconDevices": "MLU",
    "AMDDevices": "AMD",
    "AWSNeuronDevices": "AWSNeuron",
    "MetaxDevices": "Metax-GPU",
    "MthreadsDevices": "Mthreads",
    "GCUDevices": "GCU",
    "EnflameDevices": "Enflame",
}


def _unit_cases() -> list[Any]:
    cases = json.loads(VECTORS.read_text(encoding="utf-8"))
    chosen = [c for c in cases if c["function"].endswith(".GetNodeDevices")]
    return [pytest.param(c, id=c["source"].split(":", 1)[1]) for c in chosen]


@pytest.mark.parametrize("case", _unit_cases())
def test_node_oracle_matches_hamis_unit_tests(hami_node_oracle: NodeOracle, case: dict[str, Any]) -> None:
    """The Node oracle's wiring against HAMi's own GetNodeDevices unit tests (shared/vectors): the same
    devices (the fields each test names) and the same success or failure. Tests that built a device with
    an empty register key or chip name are run under the chart's key for it."""
    key = _UNIT_TESTED[case["function"].rsplit(".", 1)[0]]
    given, expect = case["input"], case["expect"]
    production = {
        "MR-V100": "hami.io/node-MR-V100-register",
        "Ascend910B3": "hami.io/node-register-Ascend910B3",
    }
    annotations = {(production[key] if k == "" else k): v for k, v in given["annotations"].items()}
    if key == "Ascend910B3" and not given["annotations"]:
        annotations = {}
    status = {k: str(v) for k, v in given.get("capacity", {}).items()}
    node = node_json(given["node_name"] or "node", annotations, status, given.get("labels", {}))
    _, [result] = hami_node_oracle.register(config_text("chart"), [node])
    answer = result.vendors[key]
    assert (answer.error is None) == (expect["error"] is None), (answer.error, expect["error"])
    got = answer.devices or []
    assert len(got) == len(expect["devices"] or [])
    for mine, theirs in zip(got, expect["devices"] or [], strict=True):
        for field, value in theirs.items():
            if field == "pairScore":
                assert mine["pair_score"]["score"] == value
            elif field == "devicevendor" and value == "":
                assert mine[field] == key  # the test's device had no chip name; ours is the chart's
            else:
                assert mine[field] == value, (field, mine)


def test_nvidia_health_is_stateful_per_node(hami_node_oracle: NodeOracle) -> None:
    """Why every Node gets a fresh device set: NVIDIA's CheckHealth remembers each Node's allocatable count
    (``ReportedGPUNum``). In one device set, the same Node seen with 2 GPUs and then 0 is unhealthy at
    once (spec 4.1's allocatable rule); seen with 0 in a fresh set, the generic stamp decides."""
    devices = '[{"id":"GPU-0","count":10,"health":true}]'
    annotations = {"hami.io/node-nvidia-register": devices}
    with_gpus = node_json("n", annotations, {"nvidia.com/gpu": "2"}, {})
    without = node_json("n", annotations, {"nvidia.com/gpu": "0"}, {})
    text = config_text("chart")
    _, one_process = hami_node_oracle.register(text, [with_gpus, without], fresh=False)
    assert [(r.vendors["NVIDIA"].healthy, r.vendors["NVIDIA"].need_update) for r in one_process] == [
        (True, True),
        (False, True),
    ]
    _, [alone] = hami_node_oracle.register(text, [without])
    assert (alone.vendors["NVIDIA"].healthy, alone.vendors["NVIDIA"].need_update) == (True, True)


def test_aws_neuron_cores_come_from_the_first_node(hami_node_oracle: NodeOracle) -> None:
    """HAMi's side of spec 1b's "AWS Neuron per Node": one HAMi process keeps the cores per device of the
    first Neuron Node it sees; a fresh device set per Node (as the differential test judges) does not."""
    first = node_json("a", {}, {"aws.amazon.com/neuron": "2", "aws.amazon.com/neuroncore": "8"}, {})
    second = node_json("b", {}, {"aws.amazon.com/neuron": "2", "aws.amazon.com/neuroncore": "4"}, {})
    text = config_text("chart")
    _, one_process = hami_node_oracle.register(text, [first, second], fresh=False)
    _, fresh = hami_node_oracle.register(text, [first, second])
    counts = [[d["count"] for d in r.vendors["AWSNeuron"].devices or []] for r in one_process]
    assert counts == [[4, 4], [4, 4]]
    assert [[d["count"] for d in r.vendors["AWSNeuron"].devices or []] for r in fresh] == [[4, 4], [2, 2]]


@pytest.mark.parametrize("variant", sorted(CONFIG_VARIANTS))
def test_nodes_agree_with_hami_in_memory(
    memory_world: World, hami_node_oracle: NodeOracle, hami_oracle: Oracle, variant: str
) -> None:
    outcome = run_round(
        memory_world, hami_node_oracle, hami_oracle, variant, NODES, SEED + zlib.crc32(variant.encode())
    )
    settings = Settings.of(config_text(variant))
    used = check(outcome, settings)
    print(f"{variant}: {len(outcome.rows)} (node, vendor) pairs; rules used on compared vendors: {used}")
    compared = HAMI_KEYS - set(NOT_YET_IN_HAMI_CORE)
    reachable = {r.name for r in EXCLUSIONS if r.scope is None or r.scope & compared}
    assert reachable <= set(used), (
        f"rules never exercised on compared vendors: {sorted(reachable - set(used))}"
    )
    assert_check_catches(outcome, settings)


def assert_check_catches(outcome: Outcome, settings: Settings) -> None:
    """The comparison is not vacuous: one compared vendor's devices changed in one field, one stamp not
    made, each alone, fail it."""
    compared = HAMI_KEYS - set(NOT_YET_IN_HAMI_CORE)
    kept = next(k for k, (want, _, _) in outcome.rows.items() if k[1] in compared and want.kept)
    got = outcome.rows[kept][1]
    assert got.devices is not None
    first = got.devices[0]
    changed = attrs.evolve(got, devices=((*first[:2], first[2] + 1, *first[3:]), *got.devices[1:]))
    stamped = next(k for k, (want, _, _) in outcome.rows.items() if k[1] in compared and want.stamped)
    for key, broken in ((kept, changed), (stamped, attrs.evolve(outcome.rows[stamped][1], stamped=False))):
        rows = {**outcome.rows, key: (outcome.rows[key][0], broken, outcome.rows[key][2])}
        with pytest.raises(AssertionError, match=r"compared .* pairs disagree with HAMi"):
            check(attrs.evolve(outcome, rows=rows), settings)


def test_nodes_agree_with_hami_on_the_real_api_server(
    real_world: World, hami_node_oracle: NodeOracle, hami_oracle: Oracle
) -> None:
    outcome = run_round(real_world, hami_node_oracle, hami_oracle, "renamed", APISERVER_NODES, SEED + 1)
    check(outcome, Settings.of(config_text("renamed")), every_key_seen=False)


VENDOR_TABLE = Path(__file__).resolve().parents[2] / "docs" / "vendors.md"


def test_vendor_table_matches_the_comparison() -> None:
    """docs/vendors.md names every HAMi vendor key, and its hami-core driver column says what this test
    compares: a driver's name where one is installed, "not yet" exactly where NOT_YET_IN_HAMI_CORE says
    there is none."""
    _, installed = load_drivers()
    driver_of = {d.vendor_key: d.name for d in installed}
    seen: dict[str, set[str]] = {}
    for line in VENDOR_TABLE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 10 or not cells[0].startswith("`"):
            continue
        for key in re.findall(r"`([^`]+)`", cells[0]):
            seen.setdefault(key, set()).add(cells[8])
    assert set(seen) == HAMI_KEYS, sorted(set(seen) ^ HAMI_KEYS)
    for key, columns in seen.items():
        gap = NOT_YET_IN_HAMI_CORE.get(key)
        for column in columns:
            if gap is not None and gap.where is None:
                assert column.startswith("not yet"), f"{key}: {column!r}, but it has no hami-core driver"
            else:
                assert column.startswith(f"`{driver_of[key]}`"), (
                    f"{key}: {column!r}, driver {driver_of[key]!r}"
                )
