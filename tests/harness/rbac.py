"""The access rules the real API server is given: who may do what to Nodes, Leases and Events.

The rules are the chart's: every rule list and the reporter admission policy's body are read from
``charts/hami-core/rbac/``, the files the chart's templates include, so the API-server tier proves the
scheduler and the reporters work with exactly what a production install grants them
(``tests/install/test_rbac_source.py`` checks the rendered chart against this module).

A read-only scheduler (``hami scheduler run --read-only``) gets ``scheduler-nodes-read-only`` alone; the
tests that run one bind :func:`read_only_scheduler_rules` to an identity of their own.

What differs is only the binding. The chart binds the scheduler's Lease rules in its own namespace and
its Event rules in ``default``; here every test runs in a namespace of its own, so the harness binds
the same rules cluster-wide to the token user ``hami-scheduler``. Reporters are what a DaemonSet's pods
really are: the ServiceAccount ``hami-harness/hami-reporter``, each with a token bound to a Pod on its
node (see ``ApiServer.reporter``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

SCHEDULER_USER = "hami-scheduler"
#: Harness identities of reporters are named ``hami-reporter:<node>``; each is a Pod-bound token.
REPORTER_PREFIX = "hami-reporter:"
REPORTER_NAMESPACE = "hami-harness"
REPORTER_SERVICE_ACCOUNT = "hami-reporter"
REPORTER_USER = f"system:serviceaccount:{REPORTER_NAMESPACE}:{REPORTER_SERVICE_ACCOUNT}"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
POLICY_NAME = "hami-reporter-own-node"

JSON = dict[str, Any]

RBAC_V1 = "rbac.authorization.k8s.io/v1"
ADMISSION_V1 = "admissionregistration.k8s.io/v1"

CHART = Path(__file__).resolve().parents[2] / "charts" / "hami-core"
RULE_FILES = CHART / "rbac"


def chart_file(name: str) -> Any:
    """A file of ``charts/hami-core/rbac/`` (without ``.yaml``), parsed."""
    return yaml.safe_load((RULE_FILES / f"{name}.yaml").read_text())


def chart_values() -> Any:
    """The chart's default values (``values.yaml``), parsed."""
    return yaml.safe_load((CHART / "values.yaml").read_text())


def max_value_bytes() -> int:
    """The chart's default cap of a register value a reporter writes (reporter.admissionPolicy)."""
    return int(chart_values()["reporter"]["admissionPolicy"]["maxValueBytes"])


def reporter_annotations(
    vendors: Sequence[str] = (), driver_annotations: Mapping[str, Sequence[Mapping[str, str]]] | None = None
) -> tuple[list[str], list[str]]:
    """The register and handshake keys (each sorted) the policy lets a reporter of ``vendors`` write: the
    chart's table (``rbac/reporter-annotations.yaml``) with ``driver_annotations`` over it, as the chart's
    ``reporter.admissionPolicy.driverAnnotations``; every driver known when ``vendors`` is empty."""
    known = {**chart_file("reporter-annotations"), **(driver_annotations or {})}
    register: set[str] = set()
    handshake: set[str] = set()
    for name in vendors or sorted(known):
        for driver in known[name]:
            register.add(driver["register"])
            if driver.get("handshake"):
                handshake.add(driver["handshake"])
    return sorted(register), sorted(handshake)


def reporter_user(node: str) -> str:
    """The harness identity of the reporter running on ``node`` (the key of its token)."""
    return REPORTER_PREFIX + node


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def reporter_match_expression(namespace: str, service_account: str) -> str:
    """The policy's match condition: requests made with this ServiceAccount's tokens (as the chart's)."""
    return f"request.userInfo.username == '{service_account_user(namespace, service_account)}'"


def scheduler_rules() -> list[JSON]:
    """Every rule the chart grants the scheduler: Nodes, its Lease, Events."""
    return [
        *chart_file("scheduler-nodes"),
        *chart_file("scheduler-leases"),
        *chart_file("scheduler-events"),
    ]


def read_only_scheduler_rules() -> list[JSON]:
    """Every rule the chart grants a read-only scheduler (``scheduler.readOnly``): reading Nodes."""
    return list(chart_file("scheduler-nodes-read-only"))


def scheduler_cluster_role() -> JSON:
    """The chart's scheduler rules in one ClusterRole (bound cluster-wide: tests use many namespaces)."""
    return {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRole",
        "metadata": {"name": "hami-scheduler"},
        "rules": scheduler_rules(),
    }


def reporter_cluster_role() -> JSON:
    """Read and patch Nodes; :func:`reporter_policy` narrows this to the caller's own protocol keys."""
    return {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRole",
        "metadata": {"name": "hami-reporter"},
        "rules": chart_file("reporter-nodes"),
    }


def user(name: str) -> JSON:
    """An RBAC subject: the user ``name``."""
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def binding(role: str, subject: JSON) -> JSON:
    """A ClusterRoleBinding of ``role`` to one subject."""
    return {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }


def reporter_policy(
    namespace: str = REPORTER_NAMESPACE,
    service_account: str = REPORTER_SERVICE_ACCOUNT,
    *,
    vendors: Sequence[str] = (),
    driver_annotations: Mapping[str, Sequence[Mapping[str, str]]] | None = None,
    value_bytes: int | None = None,
) -> JSON:
    """The chart's ValidatingAdmissionPolicy for one reporter ServiceAccount, as its template builds it:
    a reporter changes only the Node its Pod runs on (the node name in its Pod-bound token), and there
    only the register and handshake annotations of ``vendors`` (:func:`reporter_annotations`), each
    value under its cap (``value_bytes``, default the chart's)."""
    spec = dict(chart_file("reporter-policy"))
    register, handshake = reporter_annotations(vendors, driver_annotations)
    cap = max_value_bytes() if value_bytes is None else value_bytes
    spec["variables"] = [
        {"name": "registerKeys", "expression": _json(register)},
        {"name": "handshakeKeys", "expression": _json(handshake)},
        {"name": "maxValueBytes", "expression": str(cap)},
        *spec["variables"],
    ]
    spec["matchConditions"] = [
        {"name": "is-the-reporter", "expression": reporter_match_expression(namespace, service_account)}
    ]
    return {
        "apiVersion": ADMISSION_V1,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": spec,
    }


def _json(value: object) -> str:
    """Compact JSON, as Helm's ``toJson`` writes it: a CEL literal."""
    return json.dumps(value, separators=(",", ":"))


def reporter_policy_binding() -> JSON:
    """Binds :func:`reporter_policy` cluster-wide with the Deny action."""
    return {
        "apiVersion": ADMISSION_V1,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY_NAME},
        "spec": {"policyName": POLICY_NAME, "validationActions": ["Deny"]},
    }


def objects() -> list[tuple[str, JSON]]:
    """Every object to create, with the collection path to POST it to, in creation order."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    admission = "/apis/admissionregistration.k8s.io/v1"
    reporter = {"kind": "ServiceAccount", "name": REPORTER_SERVICE_ACCOUNT, "namespace": REPORTER_NAMESPACE}
    scheduler = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": SCHEDULER_USER}
    return [
        (
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": REPORTER_NAMESPACE}},
        ),
        (
            f"/api/v1/namespaces/{REPORTER_NAMESPACE}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": REPORTER_SERVICE_ACCOUNT}},
        ),
        (f"{rbac}/clusterroles", scheduler_cluster_role()),
        (f"{rbac}/clusterrolebindings", binding("hami-scheduler", scheduler)),
        (f"{rbac}/clusterroles", reporter_cluster_role()),
        (f"{rbac}/clusterrolebindings", binding("hami-reporter", reporter)),
        (f"{admission}/validatingadmissionpolicies", reporter_policy()),
        (f"{admission}/validatingadmissionpolicybindings", reporter_policy_binding()),
    ]
