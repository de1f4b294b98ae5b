"""Root conftest: pytest plugins shared by the core's, the drivers' and the examples' tests."""

pytest_plugins: list[str] = ["harness.fixtures", "harness.oracle"]
