"""The per-node reporter: publishes a node's devices and its plugins' heartbeat (spec section 7)."""
