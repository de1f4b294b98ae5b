"""The cluster layer: one narrow port to Kubernetes, with a real and an in-memory implementation."""
