"""Test infrastructure shared by the test suite (importable as ``harness`` thanks to pytest's pythonpath)."""
