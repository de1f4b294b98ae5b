"""What a refusal of the API server means, for an operator: which permission is missing, or which
admission policy said no (and, for the reporter's own, what it allows), and where the project's RBAC is.

A 403 from RBAC carries the request's attributes in its Status message (the API server's
``forbiddenMessage``: ``User "U" cannot VERB resource "R" in API group "G" in the namespace "N"`` or
``... at the cluster scope``), read back here. ``explain`` turns any ``Forbidden`` (401 or 403) into one
line that says what to do.
"""

from __future__ import annotations

import json
import re

from hami_core.kube.port import ClusterError, Forbidden

__all__ = [
    "RBAC_HINT",
    "REPORTER_POLICY_HINT",
    "REPORTER_POLICY_SUFFIX",
    "describe_error",
    "explain",
]

#: Where the permissions each daemon needs are written down.
RBAC_HINT = "the chart's RBAC grants each daemon what it needs (charts/hami-core)"
#: How the chart's (and the test harness's) reporter admission policy is named: ``<prefix>reporter-own-node``.
REPORTER_POLICY_SUFFIX = "reporter-own-node"
#: What that policy allows, and where it is set.
REPORTER_POLICY_HINT = (
    "a reporter may change only its own Node's register and handshake annotations of the drivers the "
    "chart selects, each value under a size cap (the chart's reporter.admissionPolicy, docs/operations.md)"
)

_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_RBAC = re.compile(
    rf"User {_QUOTED} cannot (\S+) resource {_QUOTED} in API group {_QUOTED}"
    rf"(?: in the namespace {_QUOTED}| at the cluster scope)"
)
_PATH = re.compile(rf"User {_QUOTED} cannot (\S+) path {_QUOTED}")
_POLICY = re.compile(r"ValidatingAdmissionPolicy '([^']*)'(?: with binding '[^']*')? denied request")
_WEBHOOK = re.compile(r'admission webhook "([^"]*)" denied the request')


def _unquote(text: str) -> str:
    """A Go ``%q`` string's content (JSON's escapes are the common subset); ``_QUOTED``'s match holds no
    unescaped quote, so JSON reads it as one string or refuses it."""
    try:
        return str(json.loads(f'"{text}"'))
    except ValueError:
        return text


def explain(error: BaseException) -> str | None:
    """One line on what a ``Forbidden`` means and what to do; ``None`` for any other error. A permission
    reads ``user 'U' may not VERB R (API group G) in namespace N`` (or ``cluster-wide``; a non-resource URL
    as ``path P``)."""
    if not isinstance(error, Forbidden):
        return None
    text = str(error)
    permission = None
    if (match := _RBAC.search(text)) is not None:
        user, verb, resource, group, namespace = match.groups()
        in_group = f" (API group {_unquote(group)})" if group else ""
        where = f"in namespace {_unquote(namespace)}" if namespace else "cluster-wide"
        permission = f"{verb} {_unquote(resource)}{in_group} {where}"
    elif (match := _PATH.search(text)) is not None:
        user, verb, path = match.groups()
        permission = f"{verb} path {_unquote(path)} cluster-wide"
    if permission is not None:
        return f"missing RBAC permission: user {_unquote(user)!r} may not {permission}; {RBAC_HINT}"
    if error.status == 401:
        return (
            "the API server did not accept the credentials (401 Unauthorized): check the kubeconfig's "
            "user (token, client certificate) or the Pod's service account token"
        )
    match = _POLICY.search(text) or _WEBHOOK.search(text)
    if match is not None:
        line = f"refused by the admission policy {match.group(1)!r}, not for a missing RBAC permission"
        return f"{line}; {REPORTER_POLICY_HINT}" if match.group(1).endswith(REPORTER_POLICY_SUFFIX) else line
    return f"forbidden; {RBAC_HINT}"


def describe_error(error: ClusterError) -> str:
    """``str(error)``, and for a ``Forbidden`` what it means (``explain``) after it."""
    explanation = explain(error)
    return f"{error}; {explanation}" if explanation is not None else str(error)
