"""Kubernetes name grammar (hami_core/k8snames.py): each predicate against the API server's own regular
expressions (apimachinery's util/validation), written out here as the reference, over generated names
made mostly of the characters that matter."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hami_core.k8snames import (
    is_dns_label,
    is_dns_subdomain,
    is_label_value,
    is_qualified_name,
    qualified_name_problem,
)

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_QUALIFIED = re.compile(rf"(?:(?P<prefix>{_SUBDOMAIN})/)?(?P<name>{_NAME})", re.ASCII)


def reference_qualified(text: str) -> bool:
    match = _QUALIFIED.fullmatch(text)
    return match is not None and len(match["name"]) <= 63 and len(match["prefix"] or "") <= 253


def reference_label_value(text: str) -> bool:
    return text == "" or (len(text) <= 63 and re.fullmatch(_NAME, text, re.ASCII) is not None)


def reference_dns_label(text: str) -> bool:
    return len(text) <= 63 and re.fullmatch(_LABEL, text, re.ASCII) is not None


def reference_dns_subdomain(text: str) -> bool:
    return len(text) <= 253 and re.fullmatch(_SUBDOMAIN, text, re.ASCII) is not None


#: Short names of the characters that decide validity; long runs of one letter to cross the limits.
names = st.one_of(
    st.text(st.sampled_from("aZ09-_./é\n "), max_size=12),
    st.builds(
        lambda head, run, tail: head + "a" * run + tail,
        st.text(st.sampled_from("a.-/"), max_size=3),
        st.sampled_from([61, 62, 63, 64, 251, 252, 253, 254]),
        st.text(st.sampled_from("a.-/Z"), max_size=3),
    ),
)


@settings(max_examples=500, deadline=None)
@given(names)
@example("a" * 253 + "/" + "b" * 63)
@example("a" * 254 + "/b")
@example("example.com/" + "b" * 64)
@example("٣")  # a non-ASCII digit is not a digit to Kubernetes
def test_predicates_match_the_api_servers_grammar(text: str) -> None:
    assert is_qualified_name(text) == reference_qualified(text)
    assert is_label_value(text) == reference_label_value(text)
    assert is_dns_label(text) == reference_dns_label(text)
    assert is_dns_subdomain(text) == reference_dns_subdomain(text)


@settings(max_examples=300, deadline=None)
@given(names)
def test_a_problem_is_named_exactly_when_the_name_is_invalid(text: str) -> None:
    assert (qualified_name_problem(text, prefix_required=False) is None) == is_qualified_name(text)
    assert (qualified_name_problem(text, prefix_required=True) is None) == (
        "/" in text and is_qualified_name(text)
    )


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("a/b/c", "it has more than one '/'"),
        ("/name", "the prefix before '/' is empty"),
        ("a" * 254 + "/n", "the prefix is 254 characters, at most 253 allowed"),
        (
            "Example.com/n",
            "the prefix 'Example.com' is not a DNS subdomain (lower case labels separated by '.')",
        ),
        ("example.com/", "the name part is empty"),
        ("n" * 64, "the name part is 64 characters, at most 63 allowed"),
        (
            "-n",
            "the name part '-n' must be letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit",
        ),
    ],
)
def test_each_problem_is_one_line_naming_the_part(key: str, problem: str) -> None:
    assert qualified_name_problem(key, prefix_required=False) == problem


def test_a_required_prefix_is_named() -> None:
    assert qualified_name_problem("gpu", prefix_required=True) == (
        "it needs a domain prefix, as in 'example.com/name'"
    )
