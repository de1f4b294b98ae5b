"""The access rules the real API server is given: who may do what to Nodes, Leases and Events.

These are the rules a production install of hami-core needs, so the API-server tier proves the
scheduler and the reporters work with no more than them.
"""

from __future__ import annotations

from typing import Any

SCHEDULER_USER = "hami-scheduler"
REPORTER_GROUP = "hami:reporters"
REPORTER_PREFIX = "hami-reporter:"
ANNOTATION_PREFIX = "hami.io/"

JSON = dict[str, Any]

RBAC_V1 = "rbac.authorization.k8s.io/v1"
ADMISSION_V1 = "admissionregistration.k8s.io/v1"


def reporter_user(node: str) -> str:
    """The user name of the reporter running on ``node``."""
    return REPORTER_PREFIX + node


def scheduler_cluster_role() -> JSON:
    """Watch and patch Nodes, elect a leader through a Lease, post Events. No delete of Nodes."""
    return {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRole",
        "metadata": {"name": "hami-scheduler"},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]},
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["get", "list", "watch", "create", "update", "delete"],
            },
            {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
        ],
    }


def reporter_cluster_role() -> JSON:
    """Read and patch Nodes; :func:`reporter_policy` narrows this to the caller's own hami.io/ keys."""
    return {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRole",
        "metadata": {"name": "hami-reporter"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
    }


def binding(role: str, subject_kind: str, subject_name: str) -> JSON:
    """A ClusterRoleBinding of ``role`` to one User or Group."""
    return {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject_kind, "name": subject_name}],
    }


_ANNOTATIONS = "(has(%s.metadata.annotations) ? %s.metadata.annotations : {})"
_NEW = _ANNOTATIONS % ("object", "object")
_OLD = _ANNOTATIONS % ("oldObject", "oldObject")


def reporter_policy() -> JSON:
    """A ValidatingAdmissionPolicy: a reporter changes only its own Node, and there only hami.io/ keys.

    RBAC cannot say "your own Node" or "only these annotation keys"; this policy does, for every
    request from the reporter group.
    """
    same_outside_prefix = (
        f"{_NEW}.all(k, k.startsWith('{ANNOTATION_PREFIX}') || (k in {_OLD} && {_OLD}[k] == {_NEW}[k])) && "
        f"{_OLD}.all(k, k.startsWith('{ANNOTATION_PREFIX}') || k in {_NEW})"
    )
    return {
        "apiVersion": ADMISSION_V1,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "hami-reporter-own-node"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["nodes"],
                    }
                ]
            },
            "matchConditions": [
                {"name": "is-reporter", "expression": f"'{REPORTER_GROUP}' in request.userInfo.groups"}
            ],
            "validations": [
                {
                    "expression": f"request.userInfo.username == '{REPORTER_PREFIX}' + object.metadata.name",
                    "message": "a reporter may only change its own Node",
                    "reason": "Forbidden",
                },
                {
                    "expression": same_outside_prefix,
                    "message": f"a reporter may only change {ANNOTATION_PREFIX} annotations",
                    "reason": "Forbidden",
                },
                {
                    "expression": (
                        "object.spec == oldObject.spec && "
                        "(has(object.metadata.labels) ? object.metadata.labels : {}) == "
                        "(has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})"
                    ),
                    "message": "a reporter may not change a Node's spec or labels",
                    "reason": "Forbidden",
                },
            ],
        },
    }


def reporter_policy_binding() -> JSON:
    """Binds :func:`reporter_policy` cluster-wide with the Deny action."""
    return {
        "apiVersion": ADMISSION_V1,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "hami-reporter-own-node"},
        "spec": {"policyName": "hami-reporter-own-node", "validationActions": ["Deny"]},
    }


def objects() -> list[tuple[str, JSON]]:
    """Every object to create, with the collection path to POST it to, in creation order."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    admission = "/apis/admissionregistration.k8s.io/v1"
    return [
        (f"{rbac}/clusterroles", scheduler_cluster_role()),
        (f"{rbac}/clusterrolebindings", binding("hami-scheduler", "User", SCHEDULER_USER)),
        (f"{rbac}/clusterroles", reporter_cluster_role()),
        (f"{rbac}/clusterrolebindings", binding("hami-reporter", "Group", REPORTER_GROUP)),
        (f"{admission}/validatingadmissionpolicies", reporter_policy()),
        (f"{admission}/validatingadmissionpolicybindings", reporter_policy_binding()),
    ]
