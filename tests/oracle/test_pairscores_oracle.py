"""NVIDIA pair scores (``hami.io/node-nvidia-score``) against HAMi's own ``DecodePairScores``, case by case.

Each case is a value at the edges of Go's ``json.Unmarshal`` into ``[]DevicePairScore``: field names in
Go's case folding, repeated keys (a repeated ``score`` adds to the map already there), ``null`` (leaves
the uuid as it was, sets the map to nil), number forms, escapes, invalid UTF-8, nesting and trailing
data. Both sides must accept and refuse the same values and, when accepted, give the same entries in
order. A nil and an empty score map count as the same: HAMi only reads from it. There is no exclusion:
spec 1b (a malformed score keeps the devices, without scores) is about what the registrar does with a
refusal, not about which values are refused.
"""

from __future__ import annotations

import pytest
from harness.oracle import Oracle

from hami_core.protocol.errors import DecodeError
from hami_core.protocol.pairscores import decode_pair_scores

pytestmark = pytest.mark.oracle


def _one(**fields: str) -> str:
    """A list of one entry with uuid ``a``, then ``fields`` (name: JSON text) in order."""
    return '[{"uuid":"a",' + ",".join(f'"{key}":{value}' for key, value in fields.items()) + "}]"


def _scored(score: str) -> str:
    return f'[{{"uuid":"a","score":{score}}}]'


#: Case name -> value (``bytes``: sent as they are, for invalid UTF-8; ours reads them as a str with
#: ``surrogateescape``, the project's form of bytes that are not UTF-8).
CASES: dict[str, str | bytes] = {
    # HAMi's own format and the empty forms
    "hami-format": '[{"uuid":"GPU-0","score":{"GPU-1":80,"GPU-2":-3}},{"uuid":"GPU-1","score":{"GPU-0":80}}]',
    "top-null": "null",
    "top-empty-array": "[]",
    "null-element": "[null]",
    "empty-object-element": "[{}]",
    "uuid-null": '[{"uuid":null}]',
    "score-null": _scored("null"),
    "score-empty": _scored("{}"),
    "score-value-null": _scored('{"b":null}'),
    "uuid-duplicated-across-entries": '[{"uuid":"a","score":{"b":1}},{"uuid":"a","score":{"b":2}}]',
    # field names: Go folds case with simple Unicode folding (K~KELVIN SIGN, s~LONG S, nothing else)
    "name-upper": '[{"UUID":"a","SCORE":{"b":1}}]',
    "name-mixed": '[{"uuId":"a","sCoRe":{"b":1}}]',
    "name-long-s": '[{"uuid":"a","\u017fcore":{"b":1}}]',
    "name-long-s-escaped": '[{"uuid":"a","\\u017fcore":{"b":1}}]',
    "name-long-s-upper-rest": '[{"uuid":"a","\u017fCORE":{"b":1}}]',
    "name-kelvin-matches-nothing": '[{"uuid":"a","\u212ascore":{"b":1}}]',
    "name-dotless-i": '[{"uu\u0131d":"a"}]',
    "name-dotted-capital-i": '[{"uu\u0130d":"a"}]',
    "name-fullwidth": '[{"\uff55\uff55\uff49\uff44":"a"}]',
    "name-escaped-ascii": '[{"\\u0075uid":"a","\\u0073core":{"b":1}}]',
    "name-trailing-space": '[{"uuid ":"a","score ":{"b":1}}]',
    "name-empty": '[{"":"a","uuid":"b"}]',
    # repeated keys: the last uuid wins, but null leaves it; the score map is added to, or reset by null
    "uuid-twice": '[{"uuid":"a","uuid":"b"}]',
    "uuid-twice-any-case": '[{"uuid":"a","UUID":"b"}]',
    "uuid-then-null": '[{"uuid":"a","uuid":null}]',
    "uuid-then-null-any-case": '[{"uuid":"a","Uuid":null}]',
    "uuid-bad-then-good": '[{"uuid":5,"uuid":"a"}]',
    "uuid-good-then-bad": '[{"uuid":"a","uuid":[]}]',
    "score-twice-merges": _one(score='{"b":1,"c":2}', Score='{"c":3,"d":4}'),
    "score-twice-long-s-merges": '[{"uuid":"a","score":{"b":1},"\u017fcore":{"d":4}}]',
    "score-then-empty-keeps": _one(score='{"b":1}', SCORE="{}"),
    "score-then-null-resets": _one(score='{"b":1}', Score="null"),
    "score-null-then-score": _one(score="null", Score='{"b":1}'),
    "score-reset-then-merge": '[{"uuid":"a","score":{"b":1},"score":null,"score":{"c":2}}]',
    "score-value-then-null": _one(score='{"b":5}', Score='{"b":null}'),
    "score-bad-then-good": _one(score="[]", Score='{"b":1}'),
    "score-good-then-bad": _one(score='{"b":1}', Score='{"c":"x"}'),
    "score-key-twice": _scored('{"b":1,"b":2}'),
    "bad-entry-then-good": '[{"uuid":1},{"uuid":"a"}]',
    # scores are Go ints (int64): integer literals only
    "score-minus-zero": _scored('{"b":-0}'),
    "score-int64-max": _scored('{"b":9223372036854775807}'),
    "score-int64-min": _scored('{"b":-9223372036854775808}'),
    "score-above-int64": _scored('{"b":9223372036854775808}'),
    "score-below-int64": _scored('{"b":-9223372036854775809}'),
    "score-huge": _scored('{"b":1' + "0" * 400 + "}"),
    "score-exponent-upper": _scored('{"b":1E2}'),
    "score-exponent-lower": _scored('{"b":1e2}'),
    "score-exponent-zero": _scored('{"b":0e0}'),
    "score-fraction": _scored('{"b":1.0}'),
    "score-minus-zero-fraction": _scored('{"b":-0.0}'),
    "score-leading-zero": _scored('{"b":01}'),
    "score-plus-sign": _scored('{"b":+1}'),
    "score-string": _scored('{"b":"1"}'),
    "score-bool": _scored('{"b":true}'),
    "score-array": _scored('{"b":[1]}'),
    "score-object": _scored('{"b":{"c":1}}'),
    "score-nan": _scored('{"b":NaN}'),
    "score-infinity": _scored('{"b":-Infinity}'),
    "score-map-is-array": _scored("[]"),
    "score-map-is-number": _scored("1"),
    "score-map-is-string": _scored('"x"'),
    "uuid-number": '[{"uuid":5}]',
    "uuid-fraction": '[{"uuid":2.5}]',
    "uuid-bool": '[{"uuid":false}]',
    "uuid-object": '[{"uuid":{}}]',
    # unknown fields are skipped unchecked, however deep (Go nests up to 10000 levels)
    "unknown-fields": '[{"uuid":"a","id":7,"other":[1,2.5,{"x":1e999}],"devicepairscore":null}]',
    "unknown-nested-2000": '[{"uuid":"a","x":' + "[" * 2000 + "]" * 2000 + "}]",
    "unknown-nested-too-deep": '[{"uuid":"a","x":' + "[" * 10000 + "]" * 10000 + "}]",
    # strings: escapes, surrogates (a lone one is U+FFFD to Go), raw controls, invalid UTF-8
    "uuid-escapes": '[{"uuid":"\\u0047PU-\\n\\"\\\\\\/\\t"}]',
    "uuid-surrogate-pair": '[{"uuid":"\\ud83d\\ude00"}]',
    "uuid-lone-high-surrogate": '[{"uuid":"\\ud800"}]',
    "uuid-lone-low-surrogate": '[{"uuid":"x\\udc00y"}]',
    "uuid-swapped-surrogates": '[{"uuid":"\\ude00\\ud83d"}]',
    "score-key-lone-surrogate": _scored('{"\\udc00":1,"\\ufffd":2}'),
    "uuid-raw-unicode": '[{"uuid":"GPU-\u00e9\u2028\U0001f600"}]',
    "uuid-raw-tab": '[{"uuid":"a\tb"}]',
    "uuid-bad-escape": '[{"uuid":"\\x41"}]',
    "uuid-invalid-utf8": b'[{"uuid":"a\xffb\xc3"}]',
    "score-key-invalid-utf8": b'[{"uuid":"a","score":{"\xe2\x82":1}}]',
    "name-invalid-utf8": b'[{"uu\xffid":"a"}]',
    "overlong-utf8": b'[{"uuid":"\xc0\xaf"}]',
    # syntax around the value
    "empty-text": "",
    "only-blanks": " \t\r\n",
    "blanks-around": ' \n[ { "uuid" : "a" , "score" : { "b" : 1 } } ]\t\r\n',
    "trailing-data": "[] x",
    "trailing-second-value": "[][]",
    "trailing-null": "null null",
    "trailing-comma-array": '[{"uuid":"a"},]',
    "trailing-comma-object": '[{"uuid":"a",}]',
    "cut-short": '[{"uuid":"a"',
    "cut-in-string": '[{"uuid":"a',
    "byte-order-mark": "\ufeff[]",
    "non-breaking-space": "[\u00a0]",
    "single-quotes": "[{'uuid':'a'}]",
    "top-object": '{"uuid":"a"}',
    "top-string": '"x"',
    "top-number": "1",
    "top-true": "true",
    "element-number": "[1]",
    "element-array": "[[]]",
    "element-string": '["a"]',
}


def _ours(value: str | bytes) -> list[tuple[str, dict[str, int]]] | None:
    text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
    try:
        entries = decode_pair_scores(text)
    except DecodeError as exc:
        assert "\n" not in str(exc), f"a refusal is one line: {exc}"
        return None
    return [(entry.id, dict(entry.scores)) for entry in entries]


def _theirs(hami_oracle: Oracle, value: str | bytes) -> list[tuple[str, dict[str, int]]] | None:
    answer = hami_oracle.decode_pair_scores(value)
    assert answer.panic is None, answer.panic
    if not answer.ok:
        return None
    return [(entry["uuid"], dict(entry["score"] or {})) for entry in answer.pair_scores or []]


@pytest.mark.parametrize("value", CASES.values(), ids=CASES.keys())
def test_pair_scores_decode_as_hamis_decode_pair_scores(hami_oracle: Oracle, value: str | bytes) -> None:
    theirs = _theirs(hami_oracle, value)
    assert _ours(value) == theirs, "HAMi " + ("refuses it" if theirs is None else f"gives {theirs}")
