"""The grammar of Kubernetes names (apimachinery's ``util/validation``), for every layer that checks one:
it imports nothing of hami_core, so ``plugins`` and ``kube`` can both use it."""

from __future__ import annotations

import re

__all__ = [
    "is_dns_label",
    "is_dns_subdomain",
    "is_label_value",
    "is_qualified_name",
    "qualified_name_problem",
]

#: Longest DNS label (a namespace name, one part of a subdomain), and longest DNS subdomain.
DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
#: Longest name part of a qualified name, and longest label value.
NAME_MAX = 63

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL_RE = re.compile(_DNS_LABEL, re.ASCII)
_DNS_SUBDOMAIN_RE = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*", re.ASCII)
#: The name part of a qualified name; a label value is this or empty.
_NAME_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", re.ASCII)


def is_dns_label(text: str) -> bool:
    """What a namespace name must be: one lower-case DNS label, at most 63 characters."""
    return len(text) <= DNS_LABEL_MAX and bool(_DNS_LABEL_RE.fullmatch(text))


def is_dns_subdomain(text: str) -> bool:
    """What most object names must be: lower-case DNS labels joined by dots, at most 253 characters."""
    return len(text) <= DNS_SUBDOMAIN_MAX and bool(_DNS_SUBDOMAIN_RE.fullmatch(text))


def is_label_value(text: str) -> bool:
    """A valid label value: empty, or up to 63 of ``[A-Za-z0-9-_.]``, alphanumeric at both ends."""
    return not text or (len(text) <= NAME_MAX and bool(_NAME_RE.fullmatch(text)))


def qualified_name_problem(key: str, *, prefix_required: bool) -> str | None:
    """Why Kubernetes would reject ``key`` as a qualified name (``[prefix/]name``), or ``None``."""
    if key.count("/") > 1:
        return "it has more than one '/'"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return "the prefix before '/' is empty"
        if len(prefix) > DNS_SUBDOMAIN_MAX:
            return f"the prefix is {len(prefix)} characters, at most {DNS_SUBDOMAIN_MAX} allowed"
        if not _DNS_SUBDOMAIN_RE.fullmatch(prefix):
            return f"the prefix {prefix!r} is not a DNS subdomain (lower case labels separated by '.')"
    elif prefix_required:
        return "it needs a domain prefix, as in 'example.com/name'"
    if not name:
        return "the name part is empty"
    if len(name) > NAME_MAX:
        return f"the name part is {len(name)} characters, at most {NAME_MAX} allowed"
    if not _NAME_RE.fullmatch(name):
        return (
            f"the name part {name!r} must be letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def is_qualified_name(text: str) -> bool:
    """A valid label key, annotation key or resource name: ``[prefix/]name``, the prefix optional."""
    return qualified_name_problem(text, prefix_required=False) is None
