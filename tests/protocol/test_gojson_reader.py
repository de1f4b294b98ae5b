"""The core's reading of Go's encoding/json for any schema (``parse_json`` and the per-value readers), as
the facade gives it to vendor drivers that read an annotation of their own (MetaX sGPU, Enflame DRS)."""

from __future__ import annotations

import pytest

import hami_core
from hami_core import (
    INT32,
    UINT32,
    DecodeError,
    JsonNumber,
    JsonObject,
    fold_key,
    parse_json,
    read_any,
    read_int,
    type_error,
)
from hami_core.protocol.size import MAX_ANNOTATION_BYTES


def test_the_tree_keeps_what_go_decides_on() -> None:
    """Pairs in order with duplicates, numbers as their text, a lone surrogate escape as U+FFFD."""
    tree = parse_json('[{"a":1,"A":2.50,"a":null},"\\ud800x",true,null,[]]')
    assert tree == [[("a", "1"), ("A", "2.50"), ("a", None)], "\ufffdx", True, None, []]
    assert type(tree[0]) is JsonObject and type(tree[0][1][1]) is JsonNumber


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("[1,]", "JSON syntax error at character offset 3"),
        ("[NaN]", "invalid literal NaN"),
        ("[1", "unexpected end of JSON input"),
        ("[" * 10001 + "]" * 10001, "exceeded max depth 10000"),
        (" " * (MAX_ANNOTATION_BYTES + 1), f"the value is {MAX_ANNOTATION_BYTES + 1} bytes, over"),
    ],
)
def test_what_go_refuses_is_one_line_naming_where(value: str, says: str) -> None:
    with pytest.raises(DecodeError) as refused:
        parse_json(value, "the")
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("key", "folded"),
    [
        ("totalVRam", "TOTALVRAM"),
        ("lin\u212azone", "LINKZONE"),
        ("\u017fcore", "SCORE"),
        ("uu\u0131d", "uu\u0131d"),
    ],
)
def test_a_key_folds_as_go_matches_a_struct_field(key: str, folded: str) -> None:
    """KELVIN SIGN and LONG S reach ASCII; no other non-ASCII letter matches an ASCII name."""
    assert fold_key(key) == folded


@pytest.mark.parametrize(
    ("literal", "kind", "says"),
    [
        ("1e2", INT32, "[0].n: number '1e2' is not an integer for Go int32"),
        ("1.0", INT32, "is not an integer for Go int32"),
        ("2147483648", INT32, "number '2147483648' is out of range for Go int32"),
        ("9" * 5000, INT32, "is out of range for Go int32"),
        ("-0", UINT32, "number '-0' is negative for Go uint32"),
    ],
)
def test_an_integer_is_read_only_as_go_reads_its_type(
    literal: str, kind: hami_core.IntRange, says: str
) -> None:
    with pytest.raises(DecodeError) as refused:
        read_int(JsonNumber(literal), kind, "[0]", "n")
    assert says in str(refused.value)
    assert read_int(JsonNumber("-0"), INT32, "[0]") == 0
    assert read_int(JsonNumber("-2147483648"), INT32, "[0]") == -(2**31)


def test_a_value_of_another_kind_is_named_with_the_go_type() -> None:
    (value,) = parse_json('[{"x":[1,2]}]')
    assert str(type_error("[0]", value, "MetaxSDeviceInfo")) == (
        '[0]: cannot decode an object {"x":[1,2]} into Go MetaxSDeviceInfo'
    )
    with pytest.raises(DecodeError, match=r"\[0\]: cannot decode a string \"4\" into Go int32"):
        read_int("4", INT32, "[0]")


def test_any_is_read_as_go_holds_it() -> None:
    """Numbers as float64 (one past it refused), the last of a repeated key."""
    assert read_any(parse_json('{"a":1,"b":[1e2,"x",null],"a":{"c":true}}'), "v") == {
        "a": {"c": True},
        "b": [100.0, "x", None],
    }
    with pytest.raises(DecodeError, match="v: number '1e400' is out of range for Go float64"):
        read_any(parse_json("[1e400]"), "v")


def test_the_facade_exports_the_reader_from_its_one_home() -> None:
    names = ("JsonNumber", "JsonObject", "fold_key", "parse_json", "read_any", "read_int", "type_error")
    for name in names:
        assert name in hami_core.__all__ and hami_core.home_of(name) == "hami_core.protocol.gojson", name
    for name in ("INT32", "INT64", "UINT32", "UINT64", "IntRange"):
        assert name in hami_core.__all__ and hami_core.home_of(name) == "hami_core.protocol.model", name
    assert hami_core.home_of("member_path") == "hami_core.protocol.errors"
