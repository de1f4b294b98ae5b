"""pytest fixtures for the real-API-server tier (registered by the root conftest).

``apiserver`` (session) starts kube-apiserver + etcd once; ``apiserver_namespace`` gives a test its own
namespace for Leases and Events; :func:`unique_node_name` makes Node names that never collide. Tests
that use ``apiserver`` get the ``apiserver`` marker, so ``-m "not apiserver"`` leaves them out.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.apiserver import ApiServer, ApiServerError, find_binaries, start_apiserver, stop_apiserver


def unique_node_name(prefix: str = "node") -> str:
    """A Node name no other test uses (valid as a DNS subdomain)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def binaries_or_fail() -> Path:
    """The binary directory; a missing binary fails the test (skips it only on a local run that asks)."""
    try:
        return find_binaries()
    except ApiServerError as err:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{err} (CI=true: this tier is never skipped)", pytrace=False)
        if os.environ.get("HAMI_SKIP_APISERVER") == "1":
            pytest.skip(f"HAMI_SKIP_APISERVER=1: {err}")
        pytest.fail(f"{err} (or set HAMI_SKIP_APISERVER=1 to skip this tier locally)", pytrace=False)


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A real kube-apiserver + etcd for the whole session, with the harness identities and RBAC."""
    bin_dir = binaries_or_fail()
    try:
        server = start_apiserver(tmp_path_factory.mktemp("apiserver"), bin_dir=bin_dir)
    except ApiServerError as err:
        pytest.fail(f"the API server did not start: {err}", pytrace=False)
    try:
        yield server
    finally:
        stop_apiserver(server)


@pytest.fixture
def apiserver_namespace(apiserver: ApiServer) -> Iterator[str]:
    """A fresh namespace for one test. Deleted afterwards (it stays Terminating: no namespace controller)."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    status, body = apiserver.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    if status != 201:
        pytest.fail(f"creating namespace {name} answered {status}: {body}", pytrace=False)
    yield name
    for collection in (
        f"/apis/coordination.k8s.io/v1/namespaces/{name}/leases",
        f"/api/v1/namespaces/{name}/events",
        f"/apis/events.k8s.io/v1/namespaces/{name}/events",
    ):
        apiserver.request("DELETE", collection)
    apiserver.request("DELETE", f"/api/v1/namespaces/{name}")


def _uses_apiserver(item: pytest.Item) -> bool:
    """Asks for the fixture, or is the ``apiserver`` case of a test parametrised over cluster kinds."""
    if "apiserver" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "apiserver" in callspec.params.values()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _uses_apiserver(item):
            item.add_marker(pytest.mark.apiserver)
