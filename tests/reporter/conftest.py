"""The reporter runs in the scheduler's worlds: the in-memory cluster and the real API server."""

from harness.scheduler_world import memory_world, real_world, world

__all__ = ["memory_world", "real_world", "world"]
