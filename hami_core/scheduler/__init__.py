"""The scheduler daemon: registration loop, device cache, leader-gated writes, HTTP view."""
