from __future__ import annotations

from harness.scheduler_world import memory_world, real_world

__all__ = ["memory_world", "real_world"]
