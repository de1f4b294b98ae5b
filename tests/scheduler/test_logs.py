"""The scheduler's log records: node, vendor, reason and term as fields, the node named once; each
evaluation's reason at debug; in memory, on the world's fake clock."""

from __future__ import annotations

import json
import logging

import pytest
from harness.scheduler_world import World

from hami_core.cli.logs import JsonFormatter, TextFormatter

DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
NVIDIA = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10",'
    '"mode":"hami-core","health":true}]'
)


def about(caplog: pytest.LogCaptureFixture, node: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "node", None) == node]


def test_records_about_a_node_carry_it_as_a_field_and_name_it_once(
    memory_world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world = memory_world
    caplog.set_level(logging.INFO, logger="hami_core")
    gpu = world.node("log-gpu", {"hami.io/node-nvidia-register": NVIDIA}, {"nvidia.com/gpu": "1"})
    bad = world.node("log-bad", {"hami.io/node-dcu-register": "DCU-1,4"})
    replica = world.scheduler("nvidia", "dcu")
    world.run_until("ready", replica.ready)
    world.admin.patch_node_status(gpu, {"nvidia.com/gpu": "0"})
    world.run_until("cleaned up", lambda: replica.cache.vendor(gpu, "NVIDIA") is None)

    degraded = [r for r in about(caplog, bad) if r.levelno == logging.WARNING]
    assert [(r.vendor, r.reason) for r in degraded] == [("DCU", "decode-error")]  # type: ignore[attr-defined]
    assert degraded[0].getMessage().startswith("degraded: annotation hami.io/node-dcu-register: ")
    cleanup = [r for r in about(caplog, gpu) if r.levelno == logging.WARNING]
    assert [(r.vendor, r.reason) for r in cleanup] == [("NVIDIA", "cleaned-up")]  # type: ignore[attr-defined]
    assert cleanup[0].getMessage().startswith("NVIDIA cleaned up by the 'allocatable' liveness rule: ")
    assert "allocatable nvidia.com/gpu is 0 (it was above 0)" in cleanup[0].getMessage()

    for node in (gpu, bad):
        records = about(caplog, node)
        assert records
        for record in records:
            assert node not in record.getMessage(), record.getMessage()
            assert TextFormatter().format(record).count(node) == 1
            entry = json.loads(JsonFormatter().format(record))
            assert entry["node"] == node and entry["vendor"] in ("NVIDIA", "DCU") and entry["reason"]
    terms = [r for r in caplog.records if r.getMessage() == "cache synced for term 1"]
    assert json.loads(JsonFormatter().format(terms[0]))["term"] == 1


def test_debug_shows_each_evaluations_reason(memory_world: World, caplog: pytest.LogCaptureFixture) -> None:
    world = memory_world
    node = world.node("log-debug", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "4"})
    replica = world.scheduler("dcu")
    world.run_until("ready", replica.ready)
    world.settle()
    caplog.set_level(logging.DEBUG, logger="hami_core.scheduler")
    # Only what follows counts: whether the start-up's info records were captured depends on the logging
    # an earlier test in this process left configured.
    caplog.clear()
    # A change the decision does not depend on: the resync evaluates the node again, and nothing changes.
    world.admin.merge_patch_node(node, {"metadata": {"labels": {"unrelated": "x"}}})
    world.advance(replica.config.resync)
    decisions = [r for r in about(caplog, node) if r.levelno == logging.DEBUG and r.name.endswith("daemon")]
    assert decisions, "no debug record of the evaluation"
    assert {(r.vendor, r.reason, r.getMessage()) for r in decisions} == {  # type: ignore[attr-defined]
        ("DCU", "unchanged", "unchanged (liveness: fresh)")
    }
    # Not at info: a quiet cluster logs nothing at the default level.
    assert not [r for r in about(caplog, node) if r.levelno >= logging.INFO]
