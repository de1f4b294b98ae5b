"""The real-API-server harness works, seen through the official client: identities, RBAC and the
reporter admission policy behave as a production install of hami-core needs them to."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import audit, rbac
from harness.apiserver import (
    REPO_ROOT,
    ApiServer,
    ApiServerError,
    find_binaries,
    k8s_bin_dir,
    k8s_version,
    start_apiserver,
    stop_apiserver,
)
from harness.fixtures import binaries_or_fail, unique_node_name
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

MERGE_PATCH = "application/merge-patch+json"


def core(apiserver: ApiServer, identity: str = "admin") -> Any:
    """The client's CoreV1Api as ``identity`` (``Any``: its models type every field optional)."""
    return client.CoreV1Api(config.new_client_from_config(config_file=apiserver.kubeconfig(identity)))


def refused(call: Callable[..., Any], *args: Any, **kwargs: Any) -> ApiException:
    """The error an API call fails with (the test fails if the call succeeds)."""
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    return info.value


@pytest.fixture
def node(apiserver: ApiServer) -> Iterator[str]:
    """A fresh Node created by the admin, deleted afterwards."""
    name = unique_node_name()
    core(apiserver).create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name, labels={"t": "x"})))
    yield name
    apiserver.request("DELETE", f"/api/v1/nodes/{name}")


def test_readyz_is_ok(apiserver: ApiServer) -> None:
    status, body = apiserver.request("GET", "/readyz")
    assert (status, body) == (200, "ok")


def test_version_matches_the_pin(apiserver: ApiServer) -> None:
    info = client.VersionApi(config.new_client_from_config(config_file=apiserver.kubeconfig())).get_code()
    pin = k8s_version()
    assert info.git_version == pin == apiserver.version
    assert (info.major, info.minor) == ("1", pin.split(".")[1])


def test_binaries_come_from_the_cache_the_build_script_names() -> None:
    if os.environ.get("HAMI_K8S_BIN"):
        pytest.skip("HAMI_K8S_BIN overrides the build cache")
    printed = subprocess.run(
        ["bash", "scripts/build-k8s.sh", "--print-dir"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert printed == str(k8s_bin_dir())


def test_admin_creates_patches_and_deletes_a_node(apiserver: ApiServer) -> None:
    api = core(apiserver)
    name = unique_node_name()
    created = api.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    assert created.metadata.name == name

    patched = api.patch_node(
        name,
        {"metadata": {"annotations": {"hami.io/node-handshake": "Requesting_2026-01-02 03:04:05"}}},
        _content_type=MERGE_PATCH,
    )
    assert patched.metadata.annotations["hami.io/node-handshake"] == "Requesting_2026-01-02 03:04:05"
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)

    api.patch_node_status(
        name, {"status": {"allocatable": {"nvidia.com/gpu": "4"}, "capacity": {"nvidia.com/gpu": "4"}}}
    )
    assert api.read_node(name).status.allocatable == {"nvidia.com/gpu": "4"}
    api.patch_node(name, {"status": {"allocatable": {"nvidia.com/gpu": "8"}}}, _content_type=MERGE_PATCH)
    assert api.read_node(name).status.allocatable == {"nvidia.com/gpu": "4"}, (
        "status only via the subresource"
    )

    api.patch_node(
        name, {"metadata": {"annotations": {"hami.io/node-handshake": None}}}, _content_type=MERGE_PATCH
    )
    assert "hami.io/node-handshake" not in (api.read_node(name).metadata.annotations or {})

    api.delete_node(name)
    assert refused(api.read_node, name).status == 404


def test_scheduler_lists_watches_and_patches_nodes_but_cannot_delete_them(
    apiserver: ApiServer, node: str, apiserver_namespace: str
) -> None:
    api = core(apiserver, "hami-scheduler")
    assert node in {n.metadata.name for n in api.list_node().items}

    events = watch.Watch().stream(api.list_node, field_selector=f"metadata.name={node}", timeout_seconds=10)
    first = next(events)
    events.close()
    assert (first["type"], first["object"].metadata.name) == ("ADDED", node)

    api.patch_node(
        node,
        {"metadata": {"annotations": {"hami.io/node-handshake": "Deleted_x"}}},
        _content_type=MERGE_PATCH,
    )
    assert refused(api.delete_node, node).status == 403
    assert refused(api.patch_node_status, node, {"status": {"capacity": {"x/y": "1"}}}).status == 403

    assert refused(api.read_node, node).status == 403, "the scheduler lists and watches, never GETs"

    leases: Any = client.CoordinationV1Api(api.api_client)
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="hami-scheduler"), spec=client.V1LeaseSpec(holder_identity="a")
    )
    created = leases.create_namespaced_lease(apiserver_namespace, lease)
    got = leases.read_namespaced_lease("hami-scheduler", apiserver_namespace)
    assert got.spec.holder_identity == "a"
    created.spec.holder_identity = "b"
    renewed = leases.replace_namespaced_lease("hami-scheduler", apiserver_namespace, created)
    assert renewed.spec.holder_identity == "b"
    assert refused(leases.delete_namespaced_lease, "hami-scheduler", apiserver_namespace).status == 403
    assert refused(leases.list_namespaced_lease, apiserver_namespace).status == 403

    # Events about a cluster-scoped object (a Node) must live in "default"; the API server refuses others.
    event = {
        "metadata": {"generateName": "hami-"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node},
        "reason": "Test",
        "message": "m",
        "type": "Normal",
    }
    status, body = apiserver.request("POST", f"/api/v1/namespaces/{apiserver_namespace}/events", event)
    assert (status, body["details"]["causes"][0]["field"]) == (422, "involvedObject.namespace")
    status, body = apiserver.request(
        "POST", "/api/v1/namespaces/default/events", event, identity="hami-scheduler"
    )
    assert status == 201, body.get("message")
    name = body["metadata"]["name"]
    status, _ = apiserver.request(
        "PATCH",
        f"/api/v1/namespaces/default/events/{name}",
        {"count": 2},
        identity="hami-scheduler",
        content_type=MERGE_PATCH,
    )
    assert status == 403, "create only"
    apiserver.request("DELETE", f"/api/v1/namespaces/default/events/{name}")
    status, _ = apiserver.request("GET", "/api/v1/namespaces/default/secrets", identity="hami-scheduler")
    assert status == 403


def whoami(apiserver: ApiServer, identity: str) -> dict[str, Any]:
    status, review = apiserver.request(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        identity=identity,
    )
    assert status == 201, review
    return dict(review["status"]["userInfo"])


def test_token_identities_are_who_they_say(apiserver: ApiServer) -> None:
    admin = whoami(apiserver, "admin")
    assert admin["username"] == "admin" and "system:masters" in admin["groups"]
    # A reporter is the reporter ServiceAccount with a token bound to a Pod on its node, as a DaemonSet's.
    reporter = whoami(apiserver, apiserver.reporter("node-a"))
    assert reporter["username"] == rbac.REPORTER_USER
    assert reporter["extra"][rbac.NODE_NAME_EXTRA] == ["node-a"]
    assert "authentication.kubernetes.io/pod-name" in reporter["extra"]


def test_reporter_patches_only_its_own_nodes_hami_annotations(apiserver: ApiServer, node: str) -> None:
    own = core(apiserver, apiserver.reporter(node))
    done = own.patch_node(
        node, {"metadata": {"annotations": {"hami.io/node-nvidia-register": "[]"}}}, _content_type=MERGE_PATCH
    )
    assert done.metadata.annotations["hami.io/node-nvidia-register"] == "[]"
    assert own.read_node(node).metadata.name == node

    def refusal(body: dict[str, object], api: client.CoreV1Api = own) -> ApiException:
        return refused(api.patch_node, node, body, _content_type=MERGE_PATCH)

    assert refusal({"metadata": {"annotations": {"other.io/x": "1"}}}).status == 403
    assert refusal({"metadata": {"labels": {"t": "changed"}}}).status == 403
    assert refusal({"spec": {"unschedulable": True}}).status == 403
    assert refused(own.delete_node, node).status == 403
    assert refused(own.list_node).status == 403

    other = core(apiserver, apiserver.reporter(unique_node_name() + ".example.com"))
    err = refusal({"metadata": {"annotations": {"hami.io/node-nvidia-register": "[1]"}}}, other)
    assert err.status == 403
    assert "own Node" in str(err.body)
    assert core(apiserver).read_node(node).metadata.annotations["hami.io/node-nvidia-register"] == "[]"


def test_the_audit_log_says_who_wrote_what_to_a_node_at_which_resource_version(
    apiserver: ApiServer, node: str
) -> None:
    key = "hami.io/node-handshake"
    reporter = apiserver.reporter(node)
    own = core(apiserver, reporter)
    reported = own.patch_node(
        node, {"metadata": {"annotations": {key: "Reported_x"}}}, _content_type=MERGE_PATCH
    ).metadata.resource_version
    scheduler = core(apiserver, rbac.SCHEDULER_USER)
    cleaned = scheduler.patch_node(
        node, {"metadata": {"annotations": {key: None}}}, _content_type=MERGE_PATCH
    ).metadata.resource_version
    stale = {"metadata": {"resourceVersion": reported, "annotations": {key: "Requesting_y"}}}
    assert refused(scheduler.patch_node, node, stale, _content_type=MERGE_PATCH).status == 409

    events = apiserver.audit_events(resource="nodes", name=node)
    assert [(e.verb, e.code) for e in events] == [
        ("create", 201),
        ("patch", 200),
        ("patch", 200),
        ("patch", 409),
    ]
    created, by_reporter, by_scheduler, refused_write = events
    assert created.user == "admin"
    assert by_reporter.user == rbac.REPORTER_USER
    assert by_reporter.extra[rbac.NODE_NAME_EXTRA] == (node,)
    assert (by_reporter.resource_version, by_reporter.request_annotations) == (reported, {key: "Reported_x"})
    assert by_scheduler.user == rbac.SCHEDULER_USER
    assert by_scheduler.request_annotations == {key: None}
    assert by_scheduler.resource_version == cleaned
    assert key not in (by_scheduler.response_annotations or {})
    assert refused_write.resource_version == "" and refused_write.response["reason"] == "Conflict"
    assert audit.deleted_values(events, node, user=rbac.SCHEDULER_USER) == [(by_scheduler, key, "Reported_x")]
    assert apiserver.audit_events(user=rbac.SCHEDULER_USER, name=node, succeeded=False) == [refused_write]
    # reads are not logged
    core(apiserver).read_node(node)
    assert len(apiserver.audit_events(resource="nodes", name=node)) == 4


def test_the_audit_log_keeps_lease_writes(apiserver: ApiServer, apiserver_namespace: str) -> None:
    lease = {"metadata": {"name": "audited"}, "spec": {"holderIdentity": "someone"}}
    path = f"/apis/coordination.k8s.io/v1/namespaces/{apiserver_namespace}/leases"
    status, body = apiserver.request("POST", path, lease, identity=rbac.SCHEDULER_USER)
    assert status == 201, body
    (event,) = apiserver.audit_events(resource="leases", name="audited")
    assert (event.user, event.verb, event.namespace, event.code) == (
        rbac.SCHEDULER_USER,
        "create",
        apiserver_namespace,
        201,
    )
    assert event.resource_version == body["metadata"]["resourceVersion"]
    assert event.request["spec"]["holderIdentity"] == "someone"


def test_missing_binaries_name_the_build_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAMI_K8S_BIN", str(tmp_path))
    with pytest.raises(
        ApiServerError, match=r"kube-apiserver and etcd not found in .*bash scripts/build-k8s.sh"
    ):
        find_binaries()


def test_a_process_that_dies_at_start_fails_with_its_log(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    bins.mkdir()
    for name in ("etcd", "kube-apiserver"):
        (bins / name).write_text("#!/bin/sh\necho 'cannot listen: address in use' >&2\nexit 3\n")
        (bins / name).chmod(0o755)
    with pytest.raises(ApiServerError, match=r"(?s)etcd exited with 3 before .*address in use"):
        start_apiserver(tmp_path / "work", bin_dir=bins)


@pytest.mark.parametrize(
    ("ci", "skip_asked", "outcome"),
    [
        ("true", "1", pytest.fail.Exception),  # CI never skips the tier
        ("", "1", pytest.skip.Exception),  # locally, only when asked
        ("", "", pytest.fail.Exception),
    ],
)
def test_missing_binaries_fail_unless_a_local_run_asks_to_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str, skip_asked: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("HAMI_K8S_BIN", str(tmp_path))
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("HAMI_SKIP_APISERVER", skip_asked)
    with pytest.raises(outcome, match=r"bash scripts/build-k8s\.sh"):
        binaries_or_fail()


def test_restart_on_empty_etcd_moves_the_store_backwards_and_keeps_the_harness_usable(tmp_path: Path) -> None:
    server = start_apiserver(tmp_path / "server", bin_dir=binaries_or_fail(), reporter_nodes=("node-a",))
    try:
        name = unique_node_name()
        status, node = server.request("POST", "/api/v1/nodes", {"metadata": {"name": name}})
        assert status == 201, node
        for i in range(5):  # move the store on a little
            server.request(
                "PATCH",
                f"/api/v1/nodes/{name}",
                {"metadata": {"labels": {"i": str(i)}}},
                content_type=MERGE_PATCH,
            )
        status, before = server.request("GET", "/api/v1/nodes")
        seen = int(before["metadata"]["resourceVersion"])
        server.restart_on_empty_etcd()
        status, after = server.request("GET", "/api/v1/nodes")
        assert status == 200 and [n["metadata"]["name"] for n in after["items"]] == []
        assert int(after["metadata"]["resourceVersion"]) < seen
        # the identities work again: the scheduler may list, a reporter patch its own Node
        assert server.request("GET", "/api/v1/nodes", identity=rbac.SCHEDULER_USER)[0] == 200
        server.request("POST", "/api/v1/nodes", {"metadata": {"name": "node-a"}})
        status, body = server.request(
            "PATCH",
            "/api/v1/nodes/node-a",
            {"metadata": {"annotations": {"hami.io/node-handshake": "Reported_x"}}},
            identity=server.reporter("node-a"),
            content_type=MERGE_PATCH,
        )
        assert status == 200, body
        # the audit log goes on across the restart
        creates = server.audit_events(resource="nodes", verbs={"create"}, user="admin")
        assert [e.name for e in creates if e.name in (name, "node-a")] == [name, "node-a"]
    finally:
        stop_apiserver(server)
