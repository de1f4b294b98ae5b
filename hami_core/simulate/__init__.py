"""The simulation: a scheduler replica against an in-memory cluster of simulated nodes and plugins."""
