"""The scheduler's fixtures live in ``harness.scheduler_world`` (shared with other test packages)."""

from harness.scheduler_world import proxy, real_world, world

__all__ = ["proxy", "real_world", "world"]
