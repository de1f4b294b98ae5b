"""MetaX sGPU and Enflame DRS annotations against HAMi's own ``GetNodeDevices``, case by case.

Both are a vendor's own JSON schema (``[]*MetaxSDeviceInfo``, ``drsCapacitySpec``) that HAMi reads with Go's
``json.Unmarshal``, and both drivers read it with the core's reading of Go's decoder (``parse_json``,
``fold_key``, ``read_int``, ``read_any``). Each case is a value at an edge where Python's ``json`` reads
otherwise or where Go's rules are easy to miss: repeated and case-folded keys, a repeated ``devices``
list decoding into the elements already there, lone surrogate escapes, number forms for an int32 field,
numbers and nesting Go skips in an unknown key. Each case says whether HAMi keeps the vendor (pinned, so
the case keeps meaning what it says), and hami-core must give the same devices or refuse as HAMi does.
A ``null`` MetaX device, where HAMi's scheduler panics, hami-core refuses (spec 1b).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hami_vendor_enflame import DRS_ANNOTATION, drs_gcus
from hami_vendor_metax import SGPU_ANNOTATION, sgpus
from harness.node_cases import config_text, node_json
from harness.oracle import NodeOracle

from hami_core import DecodeError, DeviceInfo, NodeView
from hami_core.protocol.convert import device_to_dict

pytestmark = pytest.mark.oracle

_KEYS = ("id", "index", "count", "devmem", "devcore", "type", "numa", "health", "custominfo")
_VENDORS: dict[str, tuple[str, Callable[[NodeView], list[DeviceInfo]]]] = {
    "Metax-SGPU": (SGPU_ANNOTATION, sgpus),
    "Enflame": (DRS_ANNOTATION, drs_gcus),
}


def _sgpu(extra: str = "", count: str = "4") -> str:
    return f'[{{"uuid":"a","totalDevCount":{count},"healthy":true{extra}}}]'


def _drs(devices: str, profiles: str = '{"4g.16gb":"1"}') -> str:
    return f'{{"devices":{devices},"profiles":{profiles}}}'


#: MetaX sGPU cases: name -> (annotation value, whether HAMi keeps the vendor).
METAX: dict[str, tuple[str, bool]] = {
    "plain": (_sgpu(), True),
    "uuid-twice": (_sgpu(',"uuid":"b"'), True),
    "keys-folded": ('[{"UUID":"a","TOTALdevcount":4,"Healthy":true}]', True),
    "kelvin-key": (_sgpu(',"lin\\u212aZone":3'), True),
    "dotless-i-matches-nothing": ('[{"uu\\u0131d":"a","healthy":true}]', True),
    "lone-surrogate": (_sgpu(',"qosPolicy":"\\ud800x","model":"\\udc00"'), True),
    "lone-surrogate-uuid": ('[{"uuid":"\\ud800","healthy":true}]', True),
    "int-1e2": (_sgpu(count="1e2"), False),
    "int-1.0": (_sgpu(count="1.0"), False),
    "int-minus-zero": (_sgpu(count="-0"), True),
    "int-past-int32": (_sgpu(count="2147483648"), False),
    "int-huge": (_sgpu(count="9" * 400), False),
    "int-null": (_sgpu(count="null"), True),
    "int-string": (_sgpu(count='"4"'), False),
    "unknown-5000-digits": (_sgpu(',"x":' + "9" * 5000), True),
    "unknown-1e400": (_sgpu(',"x":1e400'), True),
    "unknown-nested-3000": (_sgpu(',"x":' + "[" * 3000 + "]" * 3000), True),
    "nested-past-go": (_sgpu(',"x":' + "[" * 10001 + "]" * 10001), False),
    "trailing-data": (_sgpu() + "x", False),
    "null-device": (_sgpu()[:-1] + ",null]", False),
    "top-object": ("{}", False),
}
#: Enflame DRS cases, the same way.
ENFLAME: dict[str, tuple[str, bool]] = {
    "plain": (_drs('[{"index":"1","capacity":4}]'), True),
    "devices-twice": (_drs('[{"index":"1","capacity":4}],"devices":[{"capacity":5}]'), True),
    "devices-null-element": (_drs('[{"index":"1","capacity":4},{"capacity":4}],"devices":[null]'), True),
    "devices-thrice": (
        _drs('[{"index":"1","capacity":4},{"index":"2","capacity":4}],"devices":[{}],"devices":[{},{}]'),
        True,
    ),
    "devices-empty-between": (
        _drs('[{"index":"1","capacity":4}],"devices":[],"devices":[{"capacity":4}]'),
        True,
    ),
    "devices-null-between": (
        _drs('[{"index":"1","capacity":4}],"devices":null,"devices":[{"capacity":4}]'),
        True,
    ),
    "keys-folded": ('{"DEVICES":[{"INDEX":"1","Capacity":4}],"Profiles":{"4g.16gb":"1"}}', True),
    "profiles-twice": (_drs('[{"capacity":4}]', '{"4g.16gb":"1"},"profiles":{"8g.32gb":null}'), True),
    "profiles-null-between": (
        _drs('[{"capacity":4}]', '{"4g.16gb":"1"},"profiles":null,"profiles":{"2g.8gb":"x"}'),
        True,
    ),
    "lone-surrogate-key": (_drs('[{"capacity":4}]', '{"4g.16gb":"1","\\udc00g.\\ud800":"2"}'), True),
    "lone-surrogate-minor": (_drs('[{"minor":"\\ud800","capacity":4}]'), True),
    "capacity-1e2": (_drs('[{"capacity":1e2}]'), True),
    "capacity-fraction": (_drs('[{"capacity":4.9}]'), True),
    "capacity-string": (_drs('[{"capacity":" 7 "}]'), True),
    "capacity-huge": (_drs('[{"capacity":' + "9" * 400 + "}]"), False),
    "capacity-past-float64": (_drs('[{"capacity":[1e400]}]'), False),
    "unknown-5000-digits": (_drs('[{"capacity":4,"x":' + "9" * 5000 + "}]"), True),
    "unknown-nested-3000": (_drs('[{"capacity":4,"y":' + "[" * 3000 + "]" * 3000 + "}]"), True),
    "index-number": (_drs('[{"index":1,"capacity":4}]'), False),
    "profile-id-number": (_drs('[{"capacity":4}]', '{"4g.16gb":1}'), False),
}
CASES = {f"metax-{k}": ("Metax-SGPU", *v) for k, v in METAX.items()}
CASES |= {f"enflame-{k}": ("Enflame", *v) for k, v in ENFLAME.items()}


def _fields(device: dict[str, Any]) -> dict[str, Any]:
    """The fields compared, as JSON holds them (both sides' numbers and maps alike)."""
    fields: dict[str, Any] = json.loads(json.dumps({key: device[key] for key in _KEYS}))
    return fields


@pytest.fixture(scope="module")
def hamis(hami_node_oracle: NodeOracle) -> dict[str, list[dict[str, Any]] | None]:
    """Per case, the devices HAMi keeps (``None``: it does not keep the vendor), from one request."""
    names = list(CASES)
    nodes = [
        node_json(f"n{i}", {_VENDORS[CASES[name][0]][0]: CASES[name][1]}, {}, {})
        for i, name in enumerate(names)
    ]
    _, results = hami_node_oracle.register(config_text("chart"), nodes)
    answers = {}
    for name, result in zip(names, results, strict=True):
        answer = result.vendors[CASES[name][0]]
        answers[name] = [_fields(d) for d in answer.devices or []] if answer.kept else None
    return answers


@pytest.mark.parametrize("name", CASES)
def test_the_driver_reads_the_annotation_as_hami_does(
    hamis: dict[str, list[dict[str, Any]] | None], name: str
) -> None:
    key, value, kept = CASES[name]
    annotation, read = _VENDORS[key]
    node = f"n{list(CASES).index(name)}"
    assert (hamis[name] is not None) == kept, f"HAMi's answer moved: {hamis[name]}"
    try:
        ours = [
            _fields(device_to_dict(d)) for d in read(NodeView(name=node, annotations={annotation: value}))
        ]
    except DecodeError as refused:
        assert hamis[name] is None, f"HAMi keeps {hamis[name]}, we refuse: {refused}"
        assert "\n" not in str(refused)
    else:
        assert ours == hamis[name]
