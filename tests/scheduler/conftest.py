"""The scheduler's fixtures live in ``harness.scheduler_world`` (shared with other test packages)."""

from harness.scheduler_world import memory_world, proxy, real_world, world

__all__ = ["memory_world", "proxy", "real_world", "world"]
