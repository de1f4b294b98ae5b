"""The Event recorder on a fake clock: one Event per (node, vendor, reason) while it is news, a token
bucket per node so a flapping node cannot flood the API server, and every outcome reported."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC
from typing import Any

import pytest
from harness.admin import MemoryCluster
from harness.poll import wait_for

from hami_core.clock import FakeClock
from hami_core.kube.events import EventRecorder


class Recorded:
    """A started recorder on a fresh in-memory cluster and fake clock, with its outcomes counted."""

    def __init__(self, **options: Any) -> None:
        self.cluster = MemoryCluster()
        self.clock = FakeClock()
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.recorder = EventRecorder(
            self.cluster,
            component="hami-scheduler",
            instance="me",
            clock=self.clock,
            on_outcome=lambda reason, outcome: self.outcomes.update([(reason, outcome)]),
            **options,
        )

    def record(
        self, node: str, reason: str, *, vendor: str = "DCU", type: str = "Warning", message: str = "it broke"
    ) -> bool:
        queued = self.recorder.record(
            node,
            f"uid-{node}",
            vendor=vendor,
            type=type,  # type: ignore[arg-type]
            reason=reason,
            message=message,
        )
        wait_for("the recorder idle", self.recorder.idle)
        return queued

    def posted(self, node: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.cluster.events("default") if node is None or e["involvedObject"]["name"] == node
        ]


@pytest.fixture
def started() -> Iterator[Callable[..., Recorded]]:
    """Makes started recorders (options as ``EventRecorder``'s), stopped after the test."""
    made: list[Recorded] = []

    def make(**options: Any) -> Recorded:
        made.append(r := Recorded(**options))
        r.recorder.start()
        return r

    yield make
    for r in made:
        r.recorder.stop()


@pytest.fixture
def rec(started: Callable[..., Recorded]) -> Recorded:
    return started()


def test_an_event_is_posted_about_the_node_with_its_type(rec: Recorded) -> None:
    assert rec.record("n1", "HamiVendorRegistered", type="Normal", message="DCU registered 2 devices")
    assert rec.record("n1", "HamiVendorCleanedUp", message="x" * 5000)
    first, second = rec.posted("n1")
    assert first["type"] == "Normal" and first["reason"] == "HamiVendorRegistered"
    assert first["message"] == "DCU registered 2 devices"
    assert first["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "uid-n1"}
    assert first["reportingComponent"] == "hami-scheduler" and first["reportingInstance"] == "me"
    now = rec.clock.now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert first["firstTimestamp"] == first["lastTimestamp"] == now and first["count"] == 1
    assert second["type"] == "Warning" and len(second["message"]) == 1024
    assert rec.outcomes == {("HamiVendorRegistered", "posted"): 1, ("HamiVendorCleanedUp", "posted"): 1}


def test_the_same_reason_for_a_node_and_vendor_is_posted_once_within_ten_minutes(rec: Recorded) -> None:
    assert rec.record("n1", "HamiLivenessRuleFailed", message="rule failed at 10:00:01")
    # The same reason again, with other words: a duplicate, whatever the message says.
    assert not rec.record("n1", "HamiLivenessRuleFailed", message="rule failed at 10:00:16")
    rec.clock.advance(599)
    assert not rec.record("n1", "HamiLivenessRuleFailed", message="rule failed at 10:10:00")
    assert len(rec.posted()) == 1
    assert rec.outcomes[("HamiLivenessRuleFailed", "duplicate")] == 2
    # Ten minutes after the one posted (duplicates do not push that back), it is posted again.
    rec.clock.advance(1)
    assert rec.record("n1", "HamiLivenessRuleFailed", message="rule failed at 10:10:01")
    assert len(rec.posted()) == 2


def test_another_reason_in_between_makes_it_news_again(rec: Recorded) -> None:
    assert rec.record("n1", "HamiRegisterAnnotationInvalid", message="bad value A")
    assert rec.record("n1", "HamiVendorRegistered", type="Normal")  # fixed
    assert rec.record("n1", "HamiRegisterAnnotationInvalid", message="bad value B")  # broken again
    assert [e["reason"] for e in rec.posted()] == [
        "HamiRegisterAnnotationInvalid",
        "HamiVendorRegistered",
        "HamiRegisterAnnotationInvalid",
    ]


def test_vendors_and_nodes_are_deduplicated_apart(rec: Recorded) -> None:
    assert rec.record("n1", "HamiVendorCleanedUp", vendor="DCU")
    assert rec.record("n1", "HamiVendorCleanedUp", vendor="MLU")
    assert rec.record("n2", "HamiVendorCleanedUp", vendor="DCU")
    assert not rec.record("n2", "HamiVendorCleanedUp", vendor="DCU")
    assert len(rec.posted("n1")) == 2 and len(rec.posted("n2")) == 1


def test_each_node_has_a_burst_then_one_event_per_refill(started: Callable[..., Recorded]) -> None:
    rec = started(burst=3, refill=60.0)

    flaps: Counter[str] = Counter()

    def flap(node: str) -> bool:  # cleaned up, back, cleaned up, ...: each one news
        flaps[node] += 1
        return rec.record(node, "HamiVendorCleanedUp" if flaps[node] % 2 else "HamiVendorReadmitted")

    assert [flap("n1") for _ in range(5)] == [True, True, True, False, False]
    assert rec.outcomes[("HamiVendorReadmitted", "rate_limited")] == 1
    assert rec.outcomes[("HamiVendorCleanedUp", "rate_limited")] == 1
    assert len(rec.posted("n1")) == 3
    assert flap("n2")  # another node has a bucket of its own
    rec.clock.advance(59)
    assert not flap("n1")
    rec.clock.advance(1)  # one token back
    assert flap("n1") and not flap("n1")
    rec.clock.advance(600)  # refilled up to the burst, no more
    assert [flap("n1") for _ in range(4)] == [True, True, True, False]
    assert len(rec.posted("n1")) == 7
    assert not any(outcome == "duplicate" for _, outcome in rec.outcomes)


def test_a_forgotten_node_starts_afresh(started: Callable[..., Recorded]) -> None:
    rec = started(burst=1, refill=300.0)
    assert rec.record("n1", "HamiVendorCleanedUp")
    assert not rec.record("n1", "HamiVendorReadmitted")  # bucket spent
    rec.recorder.forget("n1")  # deleted; a new Node of that name is another object
    assert rec.record("n1", "HamiVendorCleanedUp")
    assert len(rec.posted("n1")) == 2


def test_a_failed_post_is_logged_counted_and_not_retried(
    rec: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    rec.cluster.fail_next(1, verb="create")
    with caplog.at_level(logging.WARNING, logger="hami_core.kube.events"):
        assert rec.record("n1", "HamiVendorCleanedUp", vendor="NVIDIA")
    assert rec.posted() == [] and rec.outcomes == {("HamiVendorCleanedUp", "failed"): 1}
    (record,) = caplog.records
    assert record.getMessage().startswith("could not post the HamiVendorCleanedUp Event: create events: ")
    fields = (record.node, record.vendor, record.reason)  # type: ignore[attr-defined]
    assert fields == ("n1", "NVIDIA", "HamiVendorCleanedUp")


def test_a_full_queue_drops_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    r = Recorded(queue_size=1)  # not started: nothing takes from the queue
    with caplog.at_level(logging.DEBUG, logger="hami_core.kube.events"):
        assert r.recorder.record("n1", "u", vendor="DCU", type="Warning", reason="A", message="m")
        assert not r.recorder.record("n2", "u", vendor="DCU", type="Warning", reason="A", message="m")
        assert not r.recorder.record("n3", "u", vendor="DCU", type="Warning", reason="A", message="m")
    assert r.outcomes == {("A", "queue_full"): 2}
    levels = [rec.levelno for rec in caplog.records if "already wait" in rec.getMessage()]
    assert levels == [logging.WARNING, logging.DEBUG]
    assert not r.recorder.idle()
    r.recorder.start()
    wait_for("the queued one posted", r.recorder.idle)
    r.recorder.stop()
    assert [e["involvedObject"]["name"] for e in r.cluster.events("default")] == ["n1"]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="burst >= 1"):
        EventRecorder(MemoryCluster(), component="c", instance="i", burst=0)
    with pytest.raises(ValueError, match="refill > 0"):
        EventRecorder(MemoryCluster(), component="c", instance="i", refill=0)


def test_an_event_over_the_limit_still_counts_for_deduplication(started: Callable[..., Recorded]) -> None:
    rec = started(burst=1, refill=300.0)
    assert rec.record("n1", "HamiVendorCleanedUp")
    assert not rec.record("n1", "HamiVendorReadmitted")  # over the limit, but it happened
    rec.clock.advance(300)
    assert rec.record("n1", "HamiVendorCleanedUp")  # so a new cleanup is news, not a duplicate
    assert rec.outcomes[("HamiVendorReadmitted", "rate_limited")] == 1
    assert [e["reason"] for e in rec.posted()] == ["HamiVendorCleanedUp", "HamiVendorCleanedUp"]
