"""`hami scheduler run` freezes the garbage collector's start state once its cache is synced: a full
collection otherwise rescans every node's state and, at 10,000 nodes, paused the worker for ~0.2 s."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from harness.scheduler_world import World

NVIDIA = {
    "hami.io/node-nvidia-register": '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,'
    '"type":"NVIDIA-A10","health":true}]'
}


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test process collects as before


def test_the_start_state_is_frozen_once_the_cache_is_synced(memory_world: World, unfrozen: None) -> None:
    node = memory_world.node("gc", NVIDIA, {"nvidia.com/gpu": "10"})
    replica = memory_world.scheduler("nvidia", freeze_gc_after_sync=True)
    memory_world.run_until("registered", lambda: replica.cache.vendor(node, "NVIDIA"))
    memory_world.run_until("cache synced", replica.ready)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    memory_world.advance(30)  # later passes and resyncs freeze nothing more (frozen objects may die)
    assert gc.get_freeze_count() <= frozen


def test_a_scheduler_in_a_larger_process_leaves_the_collector_alone(
    memory_world: World, unfrozen: None
) -> None:
    node = memory_world.node("gc", NVIDIA, {"nvidia.com/gpu": "10"})
    replica = memory_world.scheduler("nvidia")
    memory_world.run_until("registered", lambda: replica.cache.vendor(node, "NVIDIA"))
    memory_world.advance(30)
    assert gc.get_freeze_count() == 0
