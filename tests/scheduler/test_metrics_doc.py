"""docs/observability.md keeps up with the scheduler's metrics: every family is listed, and the example
alerts are valid YAML that only name metrics the scheduler has."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from hami_core.scheduler.metrics import LiveState, SchedulerMetrics
from hami_core.scheduler.registrar import EVENT_REASONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def scheduler_families() -> set[str]:
    idle = LiveState(
        leader=False,
        ready=False,
        cache_synced=False,
        term=0,
        nodes_watched=0,
        work_queue_depth=0,
        work_queue_delayed=0,
    )
    metrics = SchedulerMetrics(["NVIDIA"], event_reasons=EVENT_REASONS, live=lambda: idle)
    names = set()
    for family in metrics.registry.collect():
        if family.name.startswith("hami_scheduler_"):
            suffix = "_total" if family.type == "counter" else ""
            names.add(family.name + suffix)
    return names


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_every_scheduler_metric_is_listed() -> None:
    table = section(DOC.read_text(), "The scheduler's metrics")
    listed = set(re.findall(r"^\| `(hami_scheduler_\w+)`", table, re.MULTILINE))
    assert listed == scheduler_families()


def test_the_example_alerts_parse_and_name_only_real_metrics() -> None:
    text = section(DOC.read_text(), "The scheduler's metrics")
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    (group,) = yaml.safe_load(block)["groups"]
    rules = group["rules"]
    assert len(rules) >= 8 and all(set(rule) <= {"alert", "expr", "for"} for rule in rules)
    families = scheduler_families()
    known = families | {f"{n}_bucket" for n in families} | {f"{n}_count" for n in families}
    for rule in rules:
        named = set(re.findall(r"\bhami_scheduler_\w+", rule["expr"]))
        assert named and named <= known, (rule["alert"], named - known)
