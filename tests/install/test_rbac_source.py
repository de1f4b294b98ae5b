"""One source of truth for the access rules: the chart's rbac/ files are what the chart renders and what
the test harness grants, so every API-server test runs with the chart's rules."""

from __future__ import annotations

from pathlib import Path

from harness import rbac
from install.kit import find, template

RULE_FILES = {
    "scheduler-nodes", "scheduler-leases", "scheduler-events", "scheduler-nodes-read-only",
    "reporter-nodes", "reporter-policy",
}  # fmt: skip


def test_the_rule_files_are_the_ones_in_use() -> None:
    assert {p.stem for p in rbac.RULE_FILES.glob("*.yaml")} == RULE_FILES


def test_the_chart_renders_the_rule_files(helm: Path) -> None:
    objects = template(helm, "--set", "reporter.enabled=true", release="gpu", namespace="accel")
    nodes = find(objects, "ClusterRole", "gpu-hami-core-scheduler")
    assert nodes["rules"] == rbac.chart_file("scheduler-nodes")
    leases = find(objects, "Role", "gpu-hami-core-scheduler-leases")
    assert leases["metadata"]["namespace"] == "accel"
    assert leases["rules"] == rbac.chart_file("scheduler-leases")
    events = find(objects, "Role", "gpu-hami-core-scheduler-events")
    assert events["metadata"]["namespace"] == "default"
    assert events["rules"] == rbac.chart_file("scheduler-events")
    reporter = find(objects, "ClusterRole", "gpu-hami-core-reporter")
    assert reporter["rules"] == rbac.chart_file("reporter-nodes") == rbac.reporter_cluster_role()["rules"]
    policy = find(objects, "ValidatingAdmissionPolicy", "gpu-hami-core-reporter-own-node")
    assert policy["spec"] == rbac.reporter_policy("accel", "gpu-hami-core-reporter")["spec"]


def test_the_harness_grants_the_scheduler_exactly_the_charts_rules(helm: Path) -> None:
    objects = template(helm, "--set", "scheduler.checkHamiLease=off")
    charted = [rule for o in objects if o["kind"] in ("ClusterRole", "Role") for rule in o["rules"]]
    assert sorted(map(repr, charted)) == sorted(map(repr, rbac.scheduler_cluster_role()["rules"]))


def test_a_read_only_install_grants_exactly_the_read_only_file(helm: Path) -> None:
    """scheduler.readOnly: the chart renders the read-only rules and nothing else for the scheduler (also
    not the get on HAMi's Lease), and they are what the harness grants its read-only schedulers."""
    objects = template(helm, "--set", "scheduler.readOnly=true", release="gpu", namespace="accel")
    roles = [o for o in objects if o["kind"] in ("ClusterRole", "Role")]
    names = [(o["kind"], o["metadata"]["name"]) for o in roles]
    assert names == [("ClusterRole", "gpu-hami-core-scheduler")]
    assert roles[0]["rules"] == rbac.chart_file("scheduler-nodes-read-only")
    assert roles[0]["rules"] == rbac.read_only_scheduler_rules()
    # The read-only rules are the read part of the full ones, on the same resource.
    (full,) = rbac.chart_file("scheduler-nodes")
    (read,) = rbac.read_only_scheduler_rules()
    assert (read["apiGroups"], read["resources"]) == (full["apiGroups"], full["resources"])
    assert set(read["verbs"]) == {"get", "list", "watch"}


def test_the_harness_policy_differs_from_the_charts_only_in_whom_it_matches() -> None:
    harness = rbac.reporter_policy()["spec"]
    assert harness["matchConditions"] == [
        {
            "name": "is-the-reporter",
            "expression": f"request.userInfo.username == '{rbac.REPORTER_USER}'",
        }
    ]
    assert {k: v for k, v in harness.items() if k != "matchConditions"} == rbac.chart_file("reporter-policy")
