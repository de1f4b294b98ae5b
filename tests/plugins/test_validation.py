"""Malformed values a driver may return are refused at load, naming the driver and the field."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from plugins.driverkit import Describes, make_spec

from hami_core import CAPACITY, DEVICES, HANDSHAKE, FromNode, LivenessFacts
from hami_core.plugins import DriverError, DriverManager
from hami_core.plugins.validate import annotation_key_problem, resource_name_problem
from hami_core.protocol.codecs import LEGACY_CODEC


class NotCallableEncode:
    name = "half"
    encode = "not a function"

    def decode(self, value: str) -> list[object]:
        return []


class NamelessCodec:
    def encode(self, devices: object) -> str:
        return ""

    def decode(self, value: str) -> list[object]:
        return []


class NoAlive:
    name = "lazy"


BAD_VALUES: list[tuple[str, Any, str]] = [
    ("register_annotation", "hami.io/node acme", "register_annotation 'hami.io/node acme' is not a valid"),
    ("register_annotation", "node acme", "the name part 'node acme' must be letters, digits"),
    ("register_annotation", "hami.io/", "the name part is empty"),
    ("register_annotation", "/node-acme", "the prefix before '/' is empty"),
    ("register_annotation", "hami..io/x", "is not a DNS subdomain"),
    ("register_annotation", "-hami.io/x", "is not a DNS subdomain"),
    ("register_annotation", "hami.io/" + "x" * 64, "the name part is 64 characters, at most 63 allowed"),
    (
        "register_annotation",
        "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 63 + "/x",
        "the prefix is 255 characters, at most 253 allowed",
    ),
    ("register_annotation", "hami.io/-x", "must be letters, digits"),
    ("register_annotation", 42, "register_annotation 42 is not a valid annotation key: it must be a string"),
    (
        "handshake_annotation",
        "hami.io/a/b",
        "handshake_annotation 'hami.io/a/b' is not a valid annotation key: it has more than one '/'",
    ),
    ("handshake_annotation", "hami.io/node-acme-register", "the same key as register_annotation"),
    ("liveness", "sometimes", "liveness rule 'sometimes' is unknown (known: allocatable, capacity, devices"),
    ("liveness", NoAlive(), "is not a rule: it needs a name and alive(facts)"),
    ("count_resource", -1, "count_resource -1 is malformed: it must be a resource name string, got -1 (int)"),
    ("count_resource", 1.5, "count_resource 1.5 is malformed: it must be a resource name string, got 1.5"),
    ("count_resource", True, "it must be a resource name string, got True (bool)"),
    ("count_resource", "gpu", "count_resource 'gpu' is malformed: it needs a domain prefix"),
    ("count_resource", "acme.example/", "the name part is empty"),
    ("encoding", "yaml", "encoding 'yaml' is unknown (known: json, legacy"),
    ("encoding", NotCallableEncode(), "is not a codec: encode not callable"),
    ("encoding", object(), "is not a codec: encode and decode not callable"),
    ("encoding", NamelessCodec(), "is not a codec: it has no name"),
    ("vendor_key", "", "vendor_key '' is malformed"),
    ("vendor_key", "NV IDIA", "vendor_key 'NV IDIA' is malformed"),
    ("writes_reported", "yes", "writes_reported must be True or False, got 'yes'"),
]


def _id_of(value: Any) -> str:
    """A test id that is the same in every process (pytest-xdist workers must collect the same ids)."""
    text = repr(value)
    return type(value).__name__ if " at 0x" in text else f"{text:.30}"


@pytest.mark.parametrize(
    ("field", "value", "expected"), BAD_VALUES, ids=[f"{f}={_id_of(v)}" for f, v, _ in BAD_VALUES]
)
def test_a_malformed_value_is_refused_naming_driver_and_field(field: str, value: Any, expected: str) -> None:
    manager = DriverManager()
    with pytest.raises(DriverError) as caught:
        manager.register(
            Describes(make_spec(**{field: value})), "acme", package="hami-vendor-acme", version="2.0"
        )
    message = str(caught.value)
    assert message.startswith("driver 'acme' (hami-vendor-acme 2.0): "), message
    assert field in message
    assert expected in message
    assert "\n" not in message
    assert manager.report.drivers == ()


@pytest.mark.parametrize("name", ["NVIDIA", "", "-x", "a_b", "x" * 64, 7])
def test_a_malformed_driver_name_is_refused_naming_the_plugin(name: Any) -> None:
    with pytest.raises(
        DriverError, match=r"^plugin 'acme' \(<registered plugin acme>\): driver name .* malformed"
    ):
        DriverManager().register(Describes(make_spec(name=name)), "acme")


def test_upper_case_in_an_annotation_key_is_allowed_as_kubernetes_allows_it() -> None:
    """Kubernetes lower-cases annotation keys before checking them; HAMi's Iluvatar keys rely on it."""
    assert annotation_key_problem("hami.io/node-MR-V100-register") is None
    assert annotation_key_problem("Hami.IO/node") is None
    assert annotation_key_problem("node-acme-register") is None, "the prefix is optional for annotations"
    assert resource_name_problem("iluvatar.ai/MR-V100-vgpu") is None
    assert resource_name_problem("Iluvatar.ai/x") is not None


def test_a_driver_may_bring_its_own_codec_and_liveness_rule() -> None:
    @attrs.frozen
    class Suffixed:
        name: str = "legacy-suffixed"

        def encode(self, devices: Any) -> str:
            return LEGACY_CODEC.encode(devices) + "#"

        def decode(self, value: str) -> Any:
            return LEGACY_CODEC.decode(value.removesuffix("#"))

    @attrs.frozen
    class Strict:
        name: str = "strict"

        def alive(self, facts: LivenessFacts) -> bool:
            return HANDSHAKE.alive(facts) and facts.allocatable > 0

    (driver,) = DriverManager().register(Describes(make_spec(encoding=Suffixed(), liveness=Strict())), "acme")
    assert (driver.encoding, driver.liveness.name) == ("legacy-suffixed", "strict")
    assert driver.rules().codec is driver.codec


def test_a_driver_without_handshake_is_accepted() -> None:
    (driver,) = DriverManager().register(Describes(make_spec(handshake_annotation=None)), "acme")
    assert driver.annotation_keys == ("hami.io/node-acme-register",)
    assert driver.rules().handshake_annotation is None


def test_rules_carry_the_drivers_values() -> None:
    (driver,) = DriverManager().register(Describes(make_spec(liveness="allocatable")), "acme")
    rules = driver.rules()
    assert (
        rules.vendor_key,
        rules.register_annotation,
        rules.handshake_annotation,
        rules.count_resource,
    ) == (
        "ACME",
        "hami.io/node-acme-register",
        "hami.io/node-handshake-acme",
        "acme.example/gpu",
    )
    assert rules.liveness.name == "allocatable"
    assert rules.codec is not None and rules.codec.name == "json"


def _cards(node: Any) -> list[Any]:
    return []


BAD_SOURCES: list[tuple[dict[str, Any], str]] = [
    (
        {"register_annotation": None, "handshake_annotation": None},
        "it names no source of devices: give a register_annotation, from_node, or both",
    ),
    (
        {"register_annotation": None, "from_node": FromNode(_cards, capacity="x.example/c")},
        "handshake_annotation is given without a register_annotation",
    ),
    ({"from_node": "capacity"}, "from_node must be a FromNode, got str"),
    ({"from_node": FromNode(_cards)}, "from_node reads no capacity, allocatable or annotation"),
    (
        {"from_node": FromNode(_cards, labels="zone")},
        "from_node reads no capacity, allocatable or annotation",
    ),
    ({"from_node": FromNode("f", capacity="x.example/c")}, "from_node.devices must be a function"),  # type: ignore[arg-type]
    (
        {"from_node": FromNode(_cards, capacity="x example")},
        "from_node.capacity 'x example' is not a resource",
    ),
    (
        {"from_node": FromNode(_cards, allocatable=["a/b/c"])},
        "from_node.allocatable 'a/b/c' is not a resource",
    ),
    ({"from_node": FromNode(_cards, annotations=["a b"])}, "from_node.annotations 'a b' is not a valid"),
    (
        {"from_node": FromNode(_cards, capacity="c", labels=["-x"])},
        "from_node.labels '-x' is not a valid label",
    ),
    (
        {"from_node": FromNode(_cards, capacity="c", liveness="often")},
        "from_node: liveness rule 'often' is unknown",
    ),
    ({"pair_scores_annotation": "a b"}, "pair_scores_annotation 'a b' is not a valid annotation key"),
    ({"pair_scores_annotation": "hami.io/node-acme-register"}, "the same key as the register or handshake"),
]


@pytest.mark.parametrize(("changes", "expected"), BAD_SOURCES, ids=[e[:40] for _, e in BAD_SOURCES])
def test_a_bad_source_declaration_is_one_line_naming_the_package(
    changes: dict[str, Any], expected: str
) -> None:
    manager = DriverManager()
    with pytest.raises(DriverError) as caught:
        manager.register(Describes(make_spec(**changes)), "acme", package="hami-vendor-acme", version="2.0")
    message = str(caught.value)
    assert message.startswith("driver 'acme' (hami-vendor-acme 2.0): "), message
    assert expected in message and "\n" not in message
    assert manager.report.drivers == ()


def test_a_node_source_alone_is_judged_by_its_own_rule_with_no_annotation() -> None:
    source = FromNode(_cards, capacity="acme.example/vcore", liveness="capacity")
    (driver,) = DriverManager().register(
        Describes(make_spec(register_annotation=None, handshake_annotation=None, from_node=source)), "acme"
    )
    rules = driver.rules()
    assert (rules.register_annotation, rules.handshake_annotation, rules.codec) == (None, None, None)
    assert rules.node_path() is rules and rules.liveness is CAPACITY
    assert driver.annotation_keys == () and driver.sources == ("node",) and driver.encoding is None


def test_both_sources_give_a_node_path_without_the_handshake() -> None:
    (driver,) = DriverManager().register(
        Describes(make_spec(from_node=FromNode(_cards, capacity="acme.example/vcore"))), "acme"
    )
    rules = driver.rules()
    path = rules.node_path()
    assert path is not None and path is not rules
    assert (path.register_annotation, path.handshake_annotation, path.liveness) == (None, None, DEVICES)
    assert rules.liveness.name == "handshake" and driver.sources == ("node", "annotation")


def test_a_count_resource_override_keeps_the_node_source() -> None:
    manager = DriverManager()
    manager.register(Describes(make_spec(from_node=FromNode(_cards, capacity="acme.example/vcore"))), "acme")
    (driver,) = manager.select(None, {"acme": "acme.example/other"})
    path = driver.rules().node_path()
    assert driver.count_resource == "acme.example/other"
    assert path is not None and path.count_resource == "acme.example/other"
