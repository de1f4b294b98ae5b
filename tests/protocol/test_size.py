"""The annotation size limit in its own module: the count is Go's, and the codecs still export it."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hami_core.protocol import codecs, gojson, size
from hami_core.protocol.errors import DecodeError

#: Text as a decoder may be given it: any character, lone surrogates of both kinds included, and raw
#: bytes decoded with ``surrogateescape``.
any_text = st.one_of(
    st.text(st.characters(), max_size=40),
    st.binary(max_size=40).map(lambda raw: raw.decode("utf-8", "surrogateescape")),
    st.lists(
        st.sampled_from(["a", "é", "😀", "\udc80", "\udcff", "\ud800", "\udbff", "\udc7f", "\udfff"])
    ).map("".join),
)


@settings(max_examples=300, deadline=None)
@given(any_text)
@example("\udc80" * 3 + "\ud800")
@example("\ud83d\ude00")  # a surrogate pair in a Python str is two lone surrogates to Go: 6 bytes
def test_size_is_the_count_of_the_bytes_go_holds(value: str) -> None:
    assert size.go_size(value) == len(gojson.go_bytes(value))


def test_the_codecs_module_exports_the_same_limit_and_check() -> None:
    assert codecs.MAX_ANNOTATION_BYTES is size.MAX_ANNOTATION_BYTES == 256 * 1024
    assert codecs.check_size is size.check_size


def test_check_size_names_the_encoding_and_the_size() -> None:
    size.check_size("x" * size.MAX_ANNOTATION_BYTES, "JSON")
    message = r"^legacy value is 262145 bytes, over the 262144-byte annotation limit$"
    with pytest.raises(DecodeError, match=message):
        size.check_size("\ud800" + "\udc80" * (size.MAX_ANNOTATION_BYTES - 2), "legacy")
