"""One source of truth for the access rules: the chart's rbac/ files are what the chart renders and what
the test harness grants, so every API-server test runs with the chart's rules."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from harness import rbac
from install.kit import IN_TREE, find, template

from hami_core.plugins import load_drivers

RULE_FILES = {
    "scheduler-nodes", "scheduler-leases", "scheduler-events", "scheduler-nodes-read-only",
    "reporter-nodes", "reporter-policy", "reporter-annotations",
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
    installed = ["registerKeys", "handshakeKeys", "maxValueBytes"]
    assert [v["name"] for v in harness["variables"][:3]] == installed
    body = {k: v for k, v in harness.items() if k != "matchConditions"}
    assert {**body, "variables": body["variables"][3:]} == rbac.chart_file("reporter-policy")


def test_the_drivers_table_is_the_drivers_own_annotations() -> None:
    """rbac/reporter-annotations.yaml is what the in-tree drivers say they write (the chart cannot ask
    them), so the policy never refuses a key a driver of this repository writes, nor allows another."""
    _, drivers = load_drivers(None, {})
    in_tree = [d for d in drivers if d.package.startswith("hami-vendor-")]
    assert {d.name for d in in_tree} == set(IN_TREE)
    # a driver whose devices come from the Node has nothing for a reporter to write
    assert rbac.chart_file("reporter-annotations") == {
        d.name: [{"register": d.register_annotation, "handshake": d.handshake_annotation}]
        if d.register_annotation is not None
        else []
        for d in in_tree
    }


@pytest.mark.parametrize(
    ("values", "vendors", "extra"),
    [
        ([], (), None),
        (["--set", "vendors={mlu,nvidia}"], ("mlu", "nvidia"), None),
        (
            ["--set-json", 'reporter.admissionPolicy.driverAnnotations={"acme": [{"register": "acme.io/r"},'
             ' {"register": "acme.io/r2", "handshake": "acme.io/h2"}]}', "--set", "vendors={acme,dcu}"],
            ("acme", "dcu"),
            {"acme": [{"register": "acme.io/r"}, {"register": "acme.io/r2", "handshake": "acme.io/h2"}]},
        ),
    ],
)  # fmt: skip
def test_the_policy_allows_the_selected_drivers_keys_as_the_harness_builds_it(
    helm: Path, values: list[str], vendors: tuple[str, ...], extra: dict[str, list[dict[str, str]]] | None
) -> None:
    objects = template(helm, "--set", "reporter.enabled=true", *values, release="gpu", namespace="accel")
    policy = find(objects, "ValidatingAdmissionPolicy", "gpu-hami-core-reporter-own-node")
    built = rbac.reporter_policy("accel", "gpu-hami-core-reporter", vendors=vendors, driver_annotations=extra)
    assert policy["spec"] == built["spec"]
    installed = {v["name"]: v["expression"] for v in policy["spec"]["variables"][:3]}
    if vendors == ("mlu", "nvidia"):
        assert installed == {
            "registerKeys": '["hami.io/node-mlu-register","hami.io/node-nvidia-register"]',
            "handshakeKeys": '["hami.io/node-handshake","hami.io/node-handshake-mlu"]',
            "maxValueBytes": "32768",
        }


def test_a_selected_driver_without_known_annotations_fails_the_install_with_its_name(helm: Path) -> None:
    done = subprocess.run(
        [helm, "template", "r", rbac.CHART, "--set", "reporter.enabled=true", "--set", "vendors={mlu,acme}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert 'the annotations of the driver "acme" (vendors) are not known' in done.stderr
    assert "reporter.admissionPolicy.driverAnnotations" in done.stderr


POLICY = "/reporter/admissionPolicy"


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        (["--set", "reporter.admissionPolicy.maxValueBytes=300000"], f"{POLICY}/maxValueBytes"),
        (["--set", "reporter.admissionPolicy.maxValueBytes=32k"], f"{POLICY}/maxValueBytes"),
        (["--set-json", 'reporter.admissionPolicy.driverAnnotations={"acme": [{"handshake": "acme.io/h"}]}'],
         f"{POLICY}/driverAnnotations/acme/0"),
        (["--set-json", 'reporter.admissionPolicy.driverAnnotations={"acme": "acme.io/r"}'],
         f"{POLICY}/driverAnnotations/acme"),
    ],
)  # fmt: skip
def test_bad_policy_values_are_refused_naming_the_value(
    helm: Path, values: list[str], complaint: str
) -> None:
    done = subprocess.run(
        [helm, "template", "x", rbac.CHART, "--set", "reporter.enabled=true", *values],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert complaint in done.stderr, done.stderr
