"""What a refusal of the API server means, for an operator: which permission is missing, or which
admission policy said no (and, for the reporter's own, what it allows), and where the project's RBAC is.

A 403 from RBAC carries the request's attributes in its Status message (the API server's
``forbiddenMessage``: ``User "U" cannot VERB resource "R" in API group "G" in the namespace "N"`` or
``... at the cluster scope``); ``missing_permission`` reads them back. ``explain`` turns any ``Forbidden``
(401 or 403) into one line that says what to do.
"""

from __future__ import annotations

import json
import re

import attrs

from hami_core.kube.port import ClusterError, Forbidden

__all__ = [
    "RBAC_HINT",
    "REPORTER_POLICY_HINT",
    "REPORTER_POLICY_SUFFIX",
    "Permission",
    "describe_error",
    "explain",
    "missing_permission",
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
    """A Go ``%q`` string's content (JSON's escapes are the common subset)."""
    try:
        value = json.loads(f'"{text}"')
    except ValueError:
        return text
    return value if isinstance(value, str) else text


@attrs.frozen(kw_only=True)
class Permission:
    """One RBAC permission a request needed and did not have."""

    user: str
    verb: str
    #: ``nodes``, ``leases``, ``nodes/status`` (with its subresource), or a path for a non-resource URL.
    resource: str
    #: The API group (``""`` for the core group, e.g. Nodes and core Events).
    group: str = ""
    #: ``None`` for a cluster-scoped request.
    namespace: str | None = None

    def describe(self) -> str:
        group = f" (API group {self.group})" if self.group else ""
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"user {self.user!r} may not {self.verb} {self.resource}{group} {where}"


def missing_permission(error: BaseException) -> Permission | None:
    """The permission a 403 from RBAC names in its message; ``None`` for any other error."""
    if not isinstance(error, Forbidden):
        return None
    text = str(error)
    match = _RBAC.search(text)
    if match is not None:
        user, verb, resource, group, namespace = match.groups()
        return Permission(
            user=_unquote(user),
            verb=verb,
            resource=_unquote(resource),
            group=_unquote(group),
            namespace=_unquote(namespace) if namespace is not None else None,
        )
    match = _PATH.search(text)
    if match is not None:
        user, verb, path = match.groups()
        return Permission(user=_unquote(user), verb=verb, resource=f"path {_unquote(path)}")
    return None


def explain(error: BaseException) -> str | None:
    """One line on what a ``Forbidden`` means and what to do; ``None`` for any other error."""
    if not isinstance(error, Forbidden):
        return None
    permission = missing_permission(error)
    if permission is not None:
        return f"missing RBAC permission: {permission.describe()}; {RBAC_HINT}"
    text = str(error)
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
