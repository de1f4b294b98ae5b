"""Generated Nodes for the Node-by-Node differential test (``tests/oracle/test_nodes.py``), and HAMi's
device config in the shapes the test varies.

A ``NodeCase`` is what one Node carries (annotations, status quantities, labels) plus the generator's own
record of what it put there (``tags``: which source of which vendor, which kind of handshake, which kind
of register value), so that the test's exclusions are predicates over what was generated, not a second
reading of the values. Every vendor family HAMi v2.10.0 registers is generated, from every kind of
source (``../shared/notes/hami-vendors-v2.10.md``): register annotations (JSON and legacy, valid and
malformed, and in the other encoding), vendor annotations of their own schema (Enflame DRS, MetaX sGPU),
and capacity quantities (valid, zero, odd spellings, past int64), with handshakes of every kind (absent,
fresh, expired, ``Reported``, ``Deleted``, HAMi v2.4's dotted and Go's ``Time.String()`` layouts,
unparseable, in the near and the far future) and with or without the allocatable count. The generator is
seeded: one seed, one list of Nodes.

Status quantities are written as capacity and allocatable alike (the port's ``patch_node_status``, as
kubelet reports extended resources): every HAMi vendor reads a resource from one of the two only.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "BASE_CONFIG",
    "CONFIG_VARIANTS",
    "NodeCase",
    "Settings",
    "config_text",
    "generate",
    "node_json",
]

#: The device config of HAMi's chart (the ConfigMap), as HAMi's scheduler reads it.
BASE_CONFIG = Path(__file__).resolve().parents[2].parent / "shared" / "hami" / "device-config.yaml"

#: How the differential test varies the device config: exact lines of the chart's config replaced (each
#: must occur exactly once). Resource names move to another domain (so every reader of a resource name
#: is seen following the config), memory factors change (HAMi uses them for allocation, never for
#: registration), and the split count.
CONFIG_VARIANTS: dict[str, dict[str, str]] = {
    "chart": {},
    "renamed": {
        "  resourceCountName: nvidia.com/gpu\n": "  resourceCountName: example.com/gpu\n",
        "  resourceCountName: cambricon.com/vmlu\n": "  resourceCountName: example.com/vmlu\n",
        "  resourceMemoryName: cambricon.com/mlu.smlu.vmemory\n": "  resourceMemoryName: example.com/mlu\n",
        "  resourceCoreName: cambricon.com/mlu.smlu.vcore\n": "  resourceCoreName: example.com/mlu-core\n",
        "  resourceCountName: hygon.com/dcunum\n": "  resourceCountName: example.com/dcu\n",
        '  resourceCountName: "metax-tech.com/gpu"\n': "  resourceCountName: example.com/metax\n",
        '  resourceNameGCU: "enflame.com/gcu"\n': "  resourceNameGCU: example.com/gcu\n",
        '  resourceMemoryName: "mthreads.com/sgpu-memory"\n': "  resourceMemoryName: example.com/mt-mem\n",
        '  resourceCoreName: "mthreads.com/sgpu-core"\n': "  resourceCoreName: example.com/mt-core\n",
        "  resourceCountName: kunlunxin.com/xpu\n": "  resourceCountName: example.com/xpu\n",
        "  resourceVCountName: kunlunxin.com/vxpu\n": "  resourceVCountName: example.com/vxpu\n",
        '  resourceCountName: "aws.amazon.com/neuron"\n': "  resourceCountName: example.com/neuron\n",
        '  resourceCoreName: "aws.amazon.com/neuroncore"\n': "  resourceCoreName: example.com/neuroncore\n",
        '  resourceCountName: "amd.com/gpu"\n': "  resourceCountName: example.com/amd\n",
        "  resourceCountName: vastaitech.com/va\n": "  resourceCountName: example.com/va\n",
        "  resourceCountName: birentech.com/gpu\n": "  resourceCountName: example.com/biren\n",
        "  resourceCountName: iluvatar.ai/MR-V100-vgpu\n": "  resourceCountName: example.com/mr-v100\n",
        "    resourceName: huawei.com/Ascend910B3\n": "    resourceName: example.com/ascend910b3\n",
    },
    "factors": {
        "  memoryFactor: 1\n  deviceSplitCount: 10\n": "  memoryFactor: 4\n  deviceSplitCount: 3\n",
        "  resourceCoreName: hygon.com/dcucores\n  memoryFactor: 1\n": (
            "  resourceCoreName: hygon.com/dcucores\n  memoryFactor: 2\n"
        ),
    },
}


def config_text(variant: str) -> str:
    """The chart's device config with one variant's lines replaced."""
    text = BASE_CONFIG.read_text(encoding="utf-8")
    for old, new in CONFIG_VARIANTS[variant].items():
        found = text.count(old)
        if found != 1:
            raise ValueError(
                f"device config variant {variant!r}: {old!r} occurs {found} times in {BASE_CONFIG}"
            )
        text = text.replace(old, new)
    return text


_SECTION = re.compile(r"^(\w+):\n((?:[ -].*\n|\n)*)", re.MULTILINE)
_FIELD = re.compile(r"^  (\w+): *\"?([^\"\n]*)\"?$", re.MULTILINE)
_LIST_ITEM = re.compile(r"^ *- (?:chipName: .*\n(?: +\w+: .*\n)*)", re.MULTILINE)


@attrs.frozen
class Settings:
    """What the generator needs to know of a device config: the resource names per section, and the
    chips of the per-chip families (Ascend ``vnpus.configs``, ``iluvatars``)."""

    #: ``section -> field -> value`` for the top-level sections (``nvidia``, ``cambricon``, ...).
    sections: Mapping[str, Mapping[str, str]]
    #: Ascend: commonWord -> resourceName.
    ascend: Mapping[str, str]
    #: Iluvatar: commonWord -> resourceCountName.
    iluvatar: Mapping[str, str]

    def get(self, section: str, field: str) -> str:
        return self.sections[section][field]

    @classmethod
    def of(cls, text: str) -> Settings:
        sections: dict[str, dict[str, str]] = {}
        ascend: dict[str, str] = {}
        iluvatar: dict[str, str] = {}
        for match in _SECTION.finditer(text):
            name, body = match.group(1), match.group(2)
            sections[name] = {f.group(1): f.group(2).strip() for f in _FIELD.finditer(body)}
            for item in _LIST_ITEM.finditer(body):
                fields = dict(re.findall(r"(\w+): *\"?([^\"\n]*)\"?", item.group(0)))
                if name == "vnpus":
                    ascend[fields["commonWord"]] = fields["resourceName"]
                elif name == "iluvatars":
                    iluvatar[fields["commonWord"]] = fields["resourceCountName"]
        return cls(sections=sections, ascend=ascend, iluvatar=iluvatar)


@attrs.frozen
class NodeCase:
    """One generated Node: what it carries, and what the generator put there."""

    #: Stem of the Node's name (the family generated first), lower case.
    stem: str
    annotations: Mapping[str, str]
    #: Quantities for ``status.capacity`` and ``status.allocatable`` alike.
    status: Mapping[str, str]
    labels: Mapping[str, str]
    #: The generator's record: ``register:<key>`` / ``handshake:<key>`` / ``score`` / ``source:<key>`` ->
    #: the kind of value generated (see the generators below).
    tags: Mapping[str, str]
    #: Annotation replacements the generator prepared for the exclusions that need them (``None``
    #: removes), by ``<what>:<vendor key>``: e.g. the same devices in the vendor's own encoding.
    replace: Mapping[str, Mapping[str, str | None]] = attrs.field(factory=dict)


def node_json(
    name: str,
    annotations: Mapping[str, str],
    status: Mapping[str, str],
    labels: Mapping[str, str],
) -> dict[str, Any]:
    """A ``v1.Node`` as JSON, as HAMi's lister would hand it over."""
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if labels:
        body["metadata"]["labels"] = dict(labels)
    if annotations:
        body["metadata"]["annotations"] = dict(annotations)
    if status:
        body["status"] = {"capacity": dict(status), "allocatable": dict(status)}
    return body


# ---------------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------------

_GO_STRING_SUFFIX = " +0000 UTC m=+1104711.777756895"


def handshake_value(kind: str, t0: datetime, rng: random.Random | None = None) -> str | None:
    """A handshake annotation value of ``kind``, judged against ``t0`` (aware, local); the same instants
    for the same ``t0`` (``rng`` picks among the spellings of ``reported`` and ``unparseable``)."""
    rng = rng or random.Random(0)
    local = t0.astimezone()
    fresh, expired = local - timedelta(seconds=3), local - timedelta(seconds=600)
    values: dict[str, Callable[[], str | None]] = {
        "absent": lambda: None,
        "fresh": lambda: "Requesting_" + fresh.strftime("%Y-%m-%d %H:%M:%S"),
        "expired": lambda: "Requesting_" + expired.strftime("%Y-%m-%d %H:%M:%S"),
        "expired-fraction": lambda: "Requesting_" + expired.strftime("%Y-%m-%d %H:%M:%S") + ".25",
        "reported": lambda: rng.choice(
            [
                "Reported_" + fresh.strftime("%Y-%m-%d %H:%M:%S"),
                "Reported 2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895",
                "Reported_2024.01.23 04:30:05",
            ]
        ),
        "deleted": lambda: "Deleted_2024-01-02 00:00:00",
        "dotted-fresh": lambda: "Requesting_" + fresh.strftime("%Y.%m.%d %H:%M:%S"),
        "dotted-expired": lambda: "Requesting_" + expired.strftime("%Y.%m.%d %H:%M:%S"),
        "gostring-fresh": lambda: (
            "Requesting_" + fresh.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f") + "123" + _GO_STRING_SUFFIX
        ),
        "gostring-expired": lambda: (
            "Requesting_"
            + expired.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
            + "123"
            + _GO_STRING_SUFFIX
        ),
        "future-near": lambda: "Requesting_" + (local + timedelta(seconds=30)).strftime("%Y-%m-%d %H:%M:%S"),
        "future-far": lambda: "Requesting_" + (local + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S"),
        "unparseable": lambda: rng.choice(["Requesting", "Requesting_soon", "Requesting_", "xRequesting_1"]),
    }
    return values[kind]()


HANDSHAKE_KINDS = (
    "absent",
    "absent",
    "absent",
    "fresh",
    "fresh",
    "expired",
    "expired",
    "expired-fraction",
    "reported",
    "reported",
    "deleted",
    "dotted-fresh",
    "dotted-expired",
    "gostring-fresh",
    "gostring-expired",
    "future-near",
    "future-far",
    "unparseable",
)

#: Allocatable counts: absent, zero, ordinary, odd spellings of integers, and past int64.
COUNTS = (
    None,
    None,
    None,
    "0",
    "0",
    "1",
    "4",
    "8",
    "1k",
    "2Ki",
    "1e3",
    "1000m",
    "9223372036854775807",
    "8Ei",
)


@attrs.frozen
class _Device:
    id: str
    index: int
    count: int
    devmem: int
    devcore: int
    type: str
    numa: int
    mode: str
    health: bool
    custominfo: Mapping[str, Any] | None = None
    mig: bool = False


def _devices(rng: random.Random, prefix: str, model: str) -> list[_Device]:
    out = []
    for i in range(rng.choice([1, 1, 2, 2, 4, 8])):
        out.append(
            _Device(
                id=rng.choice([f"{prefix}-{i}", f"{prefix}-{rng.getrandbits(32):08x}-{i}"]),
                index=rng.choice([i, i, i, 0, 7]),
                count=rng.choice([10, 10, 4, 1, 0, -1, 2**31 - 1]),
                devmem=rng.choice([24576, 32768, 16384, 98304, 0, 2**31 - 1]),
                devcore=rng.choice([100, 100, 50, 0]),
                type=rng.choice([model, model, f"{model}-X", ""]),
                numa=rng.choice([0, 0, 1, -1]),
                mode=rng.choice(["hami-core", "hami-core", "", "mig", "mps"]),
                health=rng.random() < 0.85,
                custominfo=rng.choice([None, None, None, {"a": 1, "b": "x", "c": [1.5, True, None]}]),
                mig=rng.random() < 0.15,
            )
        )
    return out


def _json_device(d: _Device, rng: random.Random) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": d.id,
        "index": d.index,
        "count": d.count,
        "devmem": d.devmem,
        "devcore": d.devcore,
        "type": d.type,
        "numa": d.numa,
        "mode": d.mode,
        "health": d.health,
    }
    if d.mig:
        body["migProfiles"] = [
            {
                "name": "1g.5gb",
                "memoryMB": 4864,
                "core": 15,
                "sliceCount": 1,
                "placements": [{"start": 6, "size": 1}],
            }
        ]
    if d.custominfo is not None:
        body["custominfo"] = dict(d.custominfo)
    # HAMi's encoder omits zero values; some plugins do not.
    return {k: v for k, v in body.items() if v or rng.random() < 0.3}


def encode_json(devices: list[_Device], rng: random.Random) -> str:
    return json.dumps([_json_device(d, rng) for d in devices], separators=(",", ":"))


def encode_legacy(devices: list[_Device], rng: random.Random, *, full: bool = False) -> str:
    out = []
    for d in devices:
        health = "true" if d.health else "false"
        fields = [d.id, str(d.count), str(d.devmem), str(d.devcore), d.type, str(d.numa), health]
        if full or rng.random() < 0.8:
            fields += [str(d.index), d.mode]
        out.append(",".join(fields) + ":")
    return "".join(out)


REGISTER_KINDS = ("valid",) * 8 + ("empty", "null", "malformed", "malformed", "foreign", "null-element")


def register_value(kind: str, encoding: str, devices: list[_Device], rng: random.Random) -> str:
    """A register annotation value of ``kind`` for a vendor of ``encoding`` (``json`` or ``legacy``)."""
    native = encode_json if encoding == "json" else encode_legacy
    if kind == "valid":
        return native(devices, rng)
    if kind in ("foreign", "foreign-native"):
        # The same devices in both encodings: what the legacy encoding carries, all nine fields.
        plain = [attrs.evolve(d, custominfo=None, mig=False) for d in devices]
        json_side = (encoding == "json") == (kind == "foreign-native")
        return encode_json(plain, rng) if json_side else encode_legacy(plain, rng, full=True)
    if kind == "empty":
        return rng.choice(["[]", ":", "::"]) if encoding == "legacy" else "[]"
    if kind == "null":
        return "null" if encoding == "json" else rng.choice(["", "null"])
    if kind == "null-element":
        return "[" + json.dumps(_json_device(devices[0], rng), separators=(",", ":")) + ",null]"
    value = native(devices, rng)
    return rng.choice(
        [
            value[: max(1, len(value) // 2)],
            value + "x",
            '[{"id":"GPU-0","count":"4"}]',
            '[{"id":"GPU-0","count":1.5}]',
            '{"id":"GPU-0"}',
            "GPU-0,10,24576,100,A10,0,true,-1,hami-core:",
            "GPU-0,10,24576,100,A10,0,yes:",
            "GPU-0,10,23308,0,",
            "garbage",
        ]
    )


def score_value(kind: str, devices: list[_Device], rng: random.Random) -> str | None:
    """``hami.io/node-nvidia-score``: absent, valid (some devices, a foreign uuid, a duplicate entry),
    ``null``, ``[]``, or malformed."""
    if kind == "absent":
        return None
    if kind == "null":
        return rng.choice(["null", "[]"])
    if kind == "malformed":
        return rng.choice(
            [
                '[{"uuid":"GPU-0","score":{"GPU-1":"x"}}]',
                '{"uuid":"GPU-0"}',
                "garbage",
                '[{"uuid":"GPU-0","score":{"GPU-1":1.5}}]',
            ]
        )
    entries = []
    for d in devices:
        if rng.random() < 0.7:
            entries.append(
                {"uuid": d.id, "score": {o.id: rng.randrange(0, 100) for o in devices if o is not d}}
            )
    entries.append({"uuid": "GPU-foreign", "score": {"x": 1}})
    if entries and rng.random() < 0.3:
        entries.append({"uuid": entries[0]["uuid"], "score": {"dup": 99}})
    if rng.random() < 0.1:
        entries.append({"uuid": devices[0].id})
    return json.dumps(entries, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------------
# Families
# ---------------------------------------------------------------------------------------------------


@attrs.frozen
class _Annotated:
    """A vendor whose devices come from a register annotation (HAMi's codecs)."""

    #: The generator's family name (``MLU-seed`` for the seed's MLU annotation, else the key).
    family: str
    key: str
    register: str
    encoding: str
    #: ``None``: no handshake (AMD).
    handshake: str | None
    #: The resource whose allocatable count keeps an expired handshake alive (AMD: its capacity gate).
    count: str
    model: str


def annotated_vendors(s: Settings) -> list[_Annotated]:
    out = [
        _Annotated(
            "NVIDIA",
            "NVIDIA",
            "hami.io/node-nvidia-register",
            "json",
            "hami.io/node-handshake",
            s.get("nvidia", "resourceCountName"),
            "NVIDIA-A10",
        ),
        _Annotated(
            "DCU",
            "DCU",
            "hami.io/node-dcu-register",
            "legacy",
            "hami.io/node-handshake-dcu",
            s.get("hygon", "resourceCountName"),
            "DCU-Z100",
        ),
        _Annotated(
            "XPU",
            "XPU",
            "hami.io/node-register-xpu",
            "json",
            "hami.io/node-handshake-xpu",
            s.get("kunlun", "resourceVCountName"),
            "P800",
        ),
        _Annotated(
            "Vastai",
            "Vastai",
            "hami.io/node-va-register",
            "json",
            "hami.io/node-handshake-va",
            s.get("vastai", "resourceCountName"),
            "VA1",
        ),
        _Annotated(
            "Biren",
            "Biren",
            "hami.io/node-biren-register",
            "json",
            "hami.io/node-handshake-biren",
            s.get("biren", "resourceCountName"),
            "BR106",
        ),
        _Annotated(
            "AMD",
            "AMD",
            "hami.io/node-amd-register",
            "json",
            None,
            s.get("amd", "resourceCountName"),
            "MI300",
        ),
        # The seed's MLU annotation: HAMi v2.10 reads none; hami-core reads it beside the capacity.
        _Annotated(
            "MLU-seed",
            "MLU",
            "hami.io/node-mlu-register",
            "legacy",
            "hami.io/node-handshake-mlu",
            s.get("cambricon", "resourceCountName"),
            "MLU370",
        ),
    ]
    for word, resource in s.ascend.items():
        out.append(
            _Annotated(
                word,
                word,
                f"hami.io/node-register-{word}",
                "json",
                f"hami.io/node-handshake-{word}",
                resource,
                word,
            )
        )
    for word, resource in s.iluvatar.items():
        out.append(
            _Annotated(
                word,
                word,
                f"hami.io/node-{word}-register",
                "legacy",
                f"hami.io/node-handshake-{word}",
                resource,
                word,
            )
        )
    return out


_QUANTITY_COUNTS = ("0", "1", "2", "4", "8", "1e1", "16000m", "8Ei", "1e30")
_QUANTITY_MEMORY = (None, "0", "16", "64", "96", "1Ki", "20000000", "100000000", "9223372036854775807", "8Ei")


def _capacity(family: str, s: Settings, rng: random.Random) -> tuple[dict[str, str], dict[str, str], str]:
    """Status quantities and labels of a capacity-derived family, and the kind generated."""
    status: dict[str, str] = {}
    labels: dict[str, str] = {}
    if family == "MLU":
        vcore = rng.choice(["100", "200", "250", "800", "1", "0", "1e3", "8Ei", None])
        memory = rng.choice(_QUANTITY_MEMORY)
        if vcore is not None:
            status[s.get("cambricon", "resourceCoreName")] = vcore
        if memory is not None:
            status[s.get("cambricon", "resourceMemoryName")] = memory
        return status, labels, f"vcore={vcore},mem={memory}"
    if family == "Mthreads":
        cores = rng.choice(["16", "32", "100", "1", "0", "8Ei", None])
        memory = rng.choice(_QUANTITY_MEMORY)
        if cores is not None:
            status[s.get("mthreads", "resourceCoreName")] = cores
        if memory is not None:
            status[s.get("mthreads", "resourceMemoryName")] = memory
        return status, labels, f"cores={cores},mem={memory}"
    if family == "AWSNeuron":
        devices = rng.choice(["1", "2", "16", "0", "8Ei"])
        cores = rng.choice(["2", "4", "32", "0", "3", None])
        status[s.get("awsneuron", "resourceCountName")] = devices
        if cores is not None:
            status[s.get("awsneuron", "resourceCoreName")] = cores
        if rng.random() < 0.7:
            labels["node.kubernetes.io/instance-type"] = rng.choice(["trn1.32xlarge", "inf2.xlarge"])
        return status, labels, f"devices={devices},cores={cores}"
    resource = {
        "kunlun": s.get("kunlun", "resourceCountName"),
        "GCU": s.get("enflame", "resourceNameGCU"),
        "Metax-GPU": s.get("metax", "resourceCountName"),
    }[family]
    count = rng.choice(_QUANTITY_COUNTS)
    status[resource] = count
    return status, labels, f"count={count}"


CAPACITY_FAMILIES = ("MLU", "kunlun", "GCU", "Metax-GPU", "Mthreads", "AWSNeuron")


def _enflame_drs(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["valid"] * 5 + ["no-profile", "bad-capacity", "malformed", "null-element", "empty"])
    profiles = rng.choice(
        [{"1g.6gb": "1", "6g.48gb": "2"}, {"2g.12gb": "3"}, {" 3G.24GB ": "4"}, {"4g": "5"}]
    )
    devices = []
    for i in range(rng.choice([1, 2, 4])):
        devices.append(
            {
                "index": rng.choice([str(i), str(i), "x", ""]),
                "minor": rng.choice([str(i), "", " 7 "]),
                "capacity": rng.choice([6, 6, "6", " 3 ", 6.7]),
            }
        )
    body: dict[str, Any] = {"devices": devices, "profiles": profiles}
    if kind == "no-profile":
        body["profiles"] = rng.choice([{}, {"bad": "1"}])
    elif kind == "bad-capacity":
        devices[0]["capacity"] = rng.choice([0, "abc", None, True, 2**31, -1])
    elif kind == "null-element":
        body["devices"] = [None]
    elif kind == "empty":
        body["devices"] = []
    value = json.dumps(body, separators=(",", ":"))
    if kind == "malformed":
        value = rng.choice([value[: len(value) // 2], "[]", '{"devices":"x"}'])
    return value, kind


def _metax_sgpu(rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(["valid"] * 5 + ["empty", "malformed", "null-element", "null"])
    devices = [
        {
            "uuid": f"GPU-metax-{i}",
            "bdf": f"0000:0{i}:00.0",
            "model": rng.choice(["MXC500", ""]),
            "totalDevCount": rng.choice([16, 4, 0]),
            "totalCompute": rng.choice([100, 50]),
            "totalVRam": rng.choice([65536, 32768]),
            "numa": rng.choice([0, 1]),
            "healthy": rng.random() < 0.85,
            "qosPolicy": rng.choice(["best-effort", "fixed-share", ""]),
            "linkZone": rng.choice([0, 1, 2]),
        }
        for i in range(rng.choice([1, 2, 4]))
    ]
    if kind == "empty":
        return "[]", kind
    if kind == "null":
        return "null", kind
    value = json.dumps(devices, separators=(",", ":"))
    if kind == "null-element":
        value = value[:-1] + ",null]"
    elif kind == "malformed":
        value = rng.choice([value[: len(value) // 2], '[{"uuid":1}]', '{"uuid":"x"}'])
    return value, kind


def _add_annotated(
    vendor: _Annotated,
    t0: datetime,
    rng: random.Random,
    ann: dict[str, str],
    status: dict[str, str],
    tags: dict[str, str],
    replace: dict[str, dict[str, str | None]],
) -> None:
    devices = _devices(rng, vendor.key.lower().replace("-", ""), vendor.model)
    if rng.random() < 0.9:
        kind = rng.choice(REGISTER_KINDS)
        if kind == "null-element" and vendor.encoding == "legacy":
            kind = "malformed"
        ann[vendor.register] = register_value(kind, vendor.encoding, devices, rng)
        tags[f"register:{vendor.key}"] = kind
        if kind == "foreign":
            replace[f"foreign:{vendor.key}"] = {
                vendor.register: register_value("foreign-native", vendor.encoding, devices, rng)
            }
    else:
        tags[f"register:{vendor.key}"] = "absent"
    if vendor.handshake is not None:
        kind = rng.choice(HANDSHAKE_KINDS)
        value = handshake_value(kind, t0, rng)
        if value is not None:
            ann[vendor.handshake] = value
        tags[f"handshake:{vendor.key}"] = kind
    # AMD's liveness is its capacity: mostly a usable one, so that its devices are seen registered.
    count = rng.choice(("2", "4", "1k", "0", None) if vendor.key == "AMD" else COUNTS)
    if count is not None:
        status[vendor.count] = count
    tags[f"count:{vendor.key}"] = str(count)
    if vendor.key == "NVIDIA" and f"register:{vendor.key}" in tags:
        kind = rng.choice(["absent", "absent", "valid", "valid", "valid", "null", "malformed"])
        value = score_value(kind, devices, rng)
        if value is not None:
            ann["hami.io/node-nvidia-score"] = value
        tags["score"] = kind


def generate(
    seed: int, count: int, settings: Settings, t0: datetime, favour: frozenset[str] = frozenset()
) -> list[NodeCase]:
    """``count`` Nodes from ``seed``: each carries one family's source (a second one in a fifth of them,
    nothing in a few), stamps judged against ``t0``. The families of the vendor keys in ``favour`` (those
    hami-core has drivers for) are drawn four times as often as the others."""
    rng = random.Random(seed)
    annotated = annotated_vendors(settings)
    every = [(v.family, v.key) for v in annotated] + [(f, f) for f in CAPACITY_FAMILIES]
    every += [("Enflame", "Enflame"), ("Metax-SGPU", "Metax-SGPU")]
    families = [family for family, key in every for _ in range(4 if key in favour else 1)]
    out = []
    for _ in range(count):
        ann: dict[str, str] = {}
        status: dict[str, str] = {}
        labels: dict[str, str] = {}
        tags: dict[str, str] = {}
        replace: dict[str, dict[str, str | None]] = {}
        roll = rng.random()
        picked = [] if roll < 0.04 else list(dict.fromkeys(rng.sample(families, 2 if roll > 0.8 else 1)))
        for family in picked:
            vendor = next((v for v in annotated if v.family == family), None)
            if vendor is not None:
                _add_annotated(vendor, t0, rng, ann, status, tags, replace)
            elif family in CAPACITY_FAMILIES:
                more, more_labels, kind = _capacity(family, settings, rng)
                status.update(more)
                labels.update(more_labels)
                tags[f"source:{family}"] = kind
            elif family == "Enflame":
                ann["enflame.com/gcu-drs-capacity"], tags["source:Enflame"] = _enflame_drs(rng)
            else:
                ann["metax-tech.com/node-gpu-devices"], tags["source:Metax-SGPU"] = _metax_sgpu(rng)
        stem = (picked[0] if picked else "cpu").lower()
        out.append(
            NodeCase(stem=stem, annotations=ann, status=status, labels=labels, tags=tags, replace=replace)
        )
    return out
