"""``World.settle`` (``wait_settled``) when a replica does not settle: what was still busy, and where."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from harness.scheduler_world import World

from hami_core.kube.port import Lease
from hami_core.simulate.settle import SettleTimeout


class HungLease:
    """The world's in-memory cluster, whose Lease reads by the elector hang until released (a request that
    never ends); the other threads' (the peer check's) are answered."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.release = threading.Event()
        self.entered = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_lease(self, namespace: str, name: str) -> Lease:
        if threading.current_thread().name == "hami-elector":
            self.entered.set()
            assert self.release.wait(60), "the test never released the hung Lease read"
        lease: Lease = self._inner.get_lease(namespace, name)
        return lease


def test_a_timeout_shows_the_stack_of_the_thread_that_is_busy(memory_world: World) -> None:
    cluster = HungLease(memory_world.admin)
    replica = memory_world.scheduler("nvidia", cluster=cluster)
    try:
        assert cluster.entered.wait(20), "the elector never asked for the Lease"
        # The elector is in its request for certain: a short bound ends the wait that cannot succeed.
        with pytest.raises(SettleTimeout) as failure:
            memory_world.settle(timeout=0.2)
    finally:
        cluster.release.set()
    message = str(failure.value)
    assert "'elector_idle': False" in message
    stacks = message.split("the stacks of the threads not idle:\n", 1)[1]
    assert "--- thread hami-elector" in stacks and "in get_lease" in stacks, stacks
    assert "hami-worker" not in stacks  # only the threads behind a part not idle
    memory_world.settle()
    assert replica.elector.is_leader()
