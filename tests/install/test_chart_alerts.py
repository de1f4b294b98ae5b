"""The chart's PrometheusRule, run by promtool: each alert fires on the series that mean its trouble, and
only then; each one says why and links its runbook in docs/observability.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.apiserver import REPO_ROOT
from install.kit import find, run, template

RELEASE, NAMESPACE = "hami-core", "hami-system"
JOB = "hami-core-scheduler"  # the Service's name: what a ServiceMonitor puts in the job label
OBSERVABILITY = REPO_ROOT / "docs" / "observability.md"
PODS = ("hami-core-scheduler-7d9f-a", "hami-core-scheduler-7d9f-b")


def rules(helm: Path, *values: str) -> list[dict[str, Any]]:
    rendered = template(
        helm, "--set", "scheduler.prometheusRule.enabled=true", *values, release=RELEASE, namespace=NAMESPACE
    )
    groups = find(rendered, "PrometheusRule")["spec"]["groups"]
    return [rule for group in groups for rule in group["rules"]]


def target(pod: str, namespace: str = NAMESPACE) -> str:
    return f'job="{JOB}", namespace="{namespace}", instance="{pod}:9396", pod="{pod}"'


def series(name: str, pod: str, values: str, namespace: str = NAMESPACE) -> dict[str, str]:
    return {"series": f"{name}{{{target(pod, namespace)}}}", "values": values}


def healthy(minutes: int = 30) -> list[dict[str, str]]:
    """Two replicas scraped, the first leads and is ready."""
    ones, zeros = f"1x{minutes}", f"0x{minutes}"
    return [
        series("up", PODS[0], ones),
        series("up", PODS[1], ones),
        series("hami_scheduler_leader", PODS[0], ones),
        series("hami_scheduler_leader", PODS[1], zeros),
        series("hami_scheduler_ready", PODS[0], ones),
        series("hami_scheduler_ready", PODS[1], zeros),
        series("hami_scheduler_peer_registrar_active", PODS[0], zeros),
        series("hami_scheduler_peer_registrar_active", PODS[1], zeros),
    ]


class Alerts:
    """Expected alerts, with their annotations as the rendered rules word them (promtool compares both)."""

    def __init__(self, rendered: list[dict[str, Any]]) -> None:
        self.by_name = {rule["alert"]: rule for rule in rendered}

    def expect(self, name: str, **labels: str) -> dict[str, Any]:
        rule = self.by_name[name]
        annotations = {
            key: re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), text)
            for key, text in rule["annotations"].items()
        }
        return {"exp_labels": {**rule["labels"], **labels}, "exp_annotations": annotations}

    def case(self, at: str, name: str, *firing: dict[str, Any]) -> dict[str, Any]:
        return {"eval_time": at, "alertname": name, "exp_alerts": list(firing)}


def promtool_test(
    promtool: Path, tmp_path: Path, rendered: list[dict[str, Any]], tests: list[dict[str, Any]]
) -> str:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": JOB, "rules": rendered}]}))
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests})
    )
    run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path)
    return run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path).stdout


def test_the_scrape_alerts_fire_when_the_scheduler_is_down_or_not_scraped(
    helm: Path, promtool: Path, tmp_path: Path
) -> None:
    rendered = rules(helm)
    a = Alerts(rendered)
    absent = a.expect("HamiCoreSchedulerNotScraped", job=JOB, namespace=NAMESPACE)
    replica = {
        name: a.expect("HamiCoreSchedulerReplicaDown", **dict(re.findall(r'(\w+)="([^"]*)"', target(name))))
        for name in PODS
    }
    tests = [
        # Healthy: nothing fires, not even after a long time.
        {
            "interval": "1m",
            "input_series": healthy(),
            "alert_rule_test": [a.case("25m", name) for name in a.by_name],
        },
        # Nothing scraped at all (no replica, or no ServiceMonitor): only absent() sees it, after its `for`.
        {
            "interval": "1m",
            "input_series": [
                {"series": 'up{job="something-else", namespace="hami-system"}', "values": "1x30"}
            ],
            "alert_rule_test": [
                a.case("9m", "HamiCoreSchedulerNotScraped"),
                a.case("11m", "HamiCoreSchedulerNotScraped", absent),
                a.case("11m", "HamiCoreSchedulerNoLeader"),  # blind: no series to sum
            ],
        },
        # The same job in another namespace is another release: this one is still not scraped.
        {
            "interval": "1m",
            "input_series": [series("up", PODS[0], "1x30", namespace="elsewhere")],
            "alert_rule_test": [a.case("11m", "HamiCoreSchedulerNotScraped", absent)],
        },
        # Every target fails its scrape: the scheduler is down.
        {
            "interval": "1m",
            "input_series": [series("up", PODS[0], "0x30"), series("up", PODS[1], "0x30")],
            "alert_rule_test": [
                a.case("4m", "HamiCoreSchedulerDown"),
                a.case("6m", "HamiCoreSchedulerDown", a.expect("HamiCoreSchedulerDown")),
                a.case("11m", "HamiCoreSchedulerReplicaDown", *replica.values()),
                a.case("11m", "HamiCoreSchedulerNotScraped"),
            ],
        },
        # One replica down: a warning about that one, the scheduler is not down.
        {
            "interval": "1m",
            "input_series": [
                series("up", PODS[0], "1x30"),
                series("up", PODS[1], "0x30"),
                series("hami_scheduler_leader", PODS[0], "1x30"),
                series("hami_scheduler_ready", PODS[0], "1x30"),
            ],
            "alert_rule_test": [
                a.case("11m", "HamiCoreSchedulerReplicaDown", replica[PODS[1]]),
                a.case("11m", "HamiCoreSchedulerDown"),
                a.case("11m", "HamiCoreSchedulerNoLeader"),
            ],
        },
    ]
    out = promtool_test(promtool, tmp_path, rendered, tests)
    assert "SUCCESS" in out, out


def test_the_leadership_alerts_fire_on_no_leader_two_leaders_and_a_leader_never_ready(
    helm: Path, promtool: Path, tmp_path: Path
) -> None:
    rendered = rules(helm)
    a = Alerts(rendered)

    def replicas(leader: tuple[str, str], ready: tuple[str, str]) -> list[dict[str, str]]:
        return [
            *(series("up", pod, "1x30") for pod in PODS),
            *(series("hami_scheduler_leader", pod, values) for pod, values in zip(PODS, leader, strict=True)),
            *(series("hami_scheduler_ready", pod, values) for pod, values in zip(PODS, ready, strict=True)),
        ]

    tests = [
        {
            "interval": "1m",
            "input_series": replicas(("0x30", "0x30"), ("0x30", "0x30")),
            "alert_rule_test": [
                a.case("4m", "HamiCoreSchedulerNoLeader"),
                a.case("6m", "HamiCoreSchedulerNoLeader", a.expect("HamiCoreSchedulerNoLeader")),
                a.case("15m", "HamiCoreSchedulerLeaderNotReady"),  # no leader to be not ready
            ],
        },
        {
            "interval": "1m",
            "input_series": replicas(("1x30", "1x30"), ("1x30", "1x30")),
            "alert_rule_test": [
                a.case("1m", "HamiCoreSchedulerTwoLeaders"),
                a.case("3m", "HamiCoreSchedulerTwoLeaders", a.expect("HamiCoreSchedulerTwoLeaders")),
            ],
        },
        {
            "interval": "1m",
            "input_series": replicas(("1x30", "0x30"), ("0x30", "0x30")),
            "alert_rule_test": [
                a.case("9m", "HamiCoreSchedulerLeaderNotReady"),
                a.case("11m", "HamiCoreSchedulerLeaderNotReady", a.expect("HamiCoreSchedulerLeaderNotReady")),
                a.case("11m", "HamiCoreSchedulerNoLeader"),
            ],
        },
        # A handover: the leader moves to the other replica within a scrape; nothing fires.
        {
            "interval": "1m",
            "input_series": replicas(("1x10 0x20", "0x10 1x20"), ("1x10 0x20", "0x11 1x19")),
            "alert_rule_test": [a.case(at, name) for at in ("12m", "25m") for name in a.by_name],
        },
    ]
    out = promtool_test(promtool, tmp_path, rendered, tests)
    assert "SUCCESS" in out, out


def test_hami_beside_us_fires_once_a_replica_sees_its_lease_and_not_with_the_check_off(
    helm: Path, promtool: Path, tmp_path: Path
) -> None:
    rendered = rules(helm)
    a = Alerts(rendered)
    # The check is every resync, per replica: one that sees HAMi's Lease is enough; a blip is not.
    base = [s for s in healthy() if "peer_registrar" not in s["series"]]
    seen = [
        *base,
        series("hami_scheduler_peer_registrar_active", PODS[0], "0x5 1x25"),
        series("hami_scheduler_peer_registrar_active", PODS[1], "0x30"),
    ]
    blip = [
        *base,
        *(series("hami_scheduler_peer_registrar_active", pod, "0x5 1x3 0x22") for pod in PODS),
    ]
    tests = [
        {
            "interval": "1m",
            "input_series": seen,
            "alert_rule_test": [
                a.case("9m", "HamiCoreSchedulerBesideHami"),
                a.case("11m", "HamiCoreSchedulerBesideHami", a.expect("HamiCoreSchedulerBesideHami")),
                a.case("11m", "HamiCoreSchedulerTwoLeaders"),
            ],
        },
        {
            "interval": "1m",
            "input_series": blip,
            "alert_rule_test": [a.case("15m", "HamiCoreSchedulerBesideHami")],
        },
    ]
    out = promtool_test(promtool, tmp_path, rendered, tests)
    assert "SUCCESS" in out, out
    # No check, no gauge worth alerting on; read-only, the chart passes no check at all.
    for values in (["--set", "scheduler.checkHamiLease=off"], ["--set", "scheduler.readOnly=true"]):
        assert "HamiCoreSchedulerBesideHami" not in {r["alert"] for r in rules(helm, *values)}, values


def test_read_only_alerts_on_the_scrape_and_a_ready_replica_not_on_leadership(
    helm: Path, promtool: Path, tmp_path: Path
) -> None:
    rendered = rules(helm, "--set", "scheduler.readOnly=true")
    a = Alerts(rendered)
    assert "HamiCoreSchedulerNoLeader" not in a.by_name
    up = [series("up", pod, "1x30") for pod in PODS]
    tests = [
        {
            "interval": "1m",
            "input_series": [
                *up,
                *(series("hami_scheduler_leader", p, "0x30") for p in PODS),
                *(series("hami_scheduler_ready", p, "1x30") for p in PODS),
            ],
            "alert_rule_test": [a.case("25m", name) for name in a.by_name],
        },
        {
            "interval": "1m",
            "input_series": [*up, *(series("hami_scheduler_ready", p, "0x30") for p in PODS)],
            "alert_rule_test": [
                a.case("9m", "HamiCoreSchedulerReadOnlyNotReady"),
                a.case(
                    "11m", "HamiCoreSchedulerReadOnlyNotReady", a.expect("HamiCoreSchedulerReadOnlyNotReady")
                ),
            ],
        },
        {
            "interval": "1m",
            "input_series": [],
            "alert_rule_test": [
                a.case(
                    "11m",
                    "HamiCoreSchedulerNotScraped",
                    a.expect("HamiCoreSchedulerNotScraped", job=JOB, namespace=NAMESPACE),
                ),
            ],
        },
    ]
    out = promtool_test(promtool, tmp_path, rendered, tests)
    assert "SUCCESS" in out, out


def headings(markdown: str) -> set[str]:
    """GitHub's anchors of the headings: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    for line in markdown.splitlines():
        if match := re.match(r"#{1,6}\s+(.*)", line):
            text = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("mode", [[], ["--set", "scheduler.readOnly=true"]], ids=["leading", "read-only"])
def test_every_alert_says_why_and_links_a_runbook_that_exists(helm: Path, mode: list[str]) -> None:
    anchors = headings(OBSERVABILITY.read_text())
    base = "https://github.com/Project-HAMi/hami-core/blob/main/docs/observability.md#"
    for rule in rules(helm, *mode):
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], rule["alert"]
        url = annotations["runbook_url"]
        assert url == base + rule["alert"].lower(), url
        assert rule["alert"].lower() in anchors, f"docs/observability.md has no heading for {rule['alert']}"
        assert rule["labels"]["severity"] in ("critical", "warning")


def test_the_runbook_base_can_point_elsewhere(helm: Path) -> None:
    moved = rules(helm, "--set", "scheduler.prometheusRule.runbookBaseUrl=https://wiki.example.com/hami/")
    assert {r["annotations"]["runbook_url"] for r in moved} == {
        f"https://wiki.example.com/hami#{r['alert'].lower()}" for r in moved
    }
