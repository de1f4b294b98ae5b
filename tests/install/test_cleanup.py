"""``hami cleanup``: the uninstall step that removes what hami-core wrote on the Nodes, and the Lease.

The cleanup itself runs against both cluster kinds; the command runs as a process against the real API
server. Who wrote an annotation is what the Node's managedFields say: the tests write the protocol's
values as hami-core's scheduler and reporter do (their field managers), and others as someone else.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from harness.admin import AdminKubeCluster, MemoryCluster
from harness.apiserver import ApiServer
from harness.fixtures import unique_node_name

import hami_core.cli.cleanup as cleanup_module
from hami_core.cli.cleanup import annotation_keys, cleanup
from hami_core.kube.client import KubeCluster
from hami_core.kube.port import Lease, NotFound
from hami_core.plugins import load_drivers
from hami_core.reporter.daemon import COMPONENT as REPORTER
from hami_core.scheduler.config import COMPONENT as SCHEDULER

HAMI = str(Path(sys.executable).with_name("hami"))
NVIDIA = {"hami.io/node-nvidia-register": "[]", "hami.io/node-handshake": "Requesting_2026-11-30 10:00:00"}
DCU = {"hami.io/node-dcu-register": ":", "hami.io/node-handshake-dcu": "Reported_2026-11-30 10:00:00"}
OTHERS = {"hami.io/node-mlu-register": ":", "vendor.io/keep": "1"}
LEASE = "hami-core-scheduler"


def keys_of(*names: str) -> tuple[str, ...]:
    return annotation_keys(load_drivers(list(names), {})[1])


@pytest.fixture(params=["memory", "apiserver"])
def world(request: pytest.FixtureRequest) -> Iterator[tuple[Any, str]]:
    """(cluster as the admin, a fresh namespace for the Lease)."""
    if request.param == "memory":
        memory = MemoryCluster()
        namespace = f"t-{uuid.uuid4().hex[:8]}"
        memory.create_namespace(namespace)
        yield memory, namespace
        return
    server: ApiServer = request.getfixturevalue("apiserver")
    namespace = request.getfixturevalue("apiserver_namespace")
    kube = AdminKubeCluster.from_kubeconfig(server.kubeconfig())
    made: list[str] = []
    kube.made = made  # type: ignore[attr-defined]
    try:
        yield kube, namespace
    finally:
        for name in made:
            with contextlib.suppress(NotFound):
                kube.delete_node(name)
        kube.close()


def node(cluster: Any, prefix: str, annotations: dict[str, str], *, foreign: tuple[str, ...] = ()) -> str:
    """A Node whose protocol annotations hami-core wrote (register values as the reporter, handshakes as
    the scheduler), except the keys in ``foreign`` and the non-protocol ones, which someone else wrote."""
    name = unique_node_name(prefix)
    cluster.create_node(name, labels={"kubernetes.io/os": "linux"})  # as kubelet does: fields are tracked
    getattr(cluster, "made", []).append(name)
    ours = {k: v for k, v in annotations.items() if k.startswith("hami.io/node-") and k not in foreign}
    for manager, part in (
        (REPORTER, {k: v for k, v in ours.items() if k.endswith("-register")}),
        (SCHEDULER, {k: v for k, v in ours.items() if not k.endswith("-register")}),
        ("nvidia-device-plugin", {k: v for k, v in annotations.items() if k not in ours}),
    ):
        if part:
            cluster.patch_node_annotations(name, part, field_manager=manager)
    return name


def lease(namespace: str, *, age: float = 0.0, holder: str | None = "scheduler-0_x") -> Lease:
    renewed = datetime.now(UTC) - timedelta(seconds=age)
    return Lease(name=LEASE, namespace=namespace, holder_identity=holder, lease_duration_seconds=15,
                 acquire_time=renewed, renew_time=renewed)  # fmt: skip


def test_the_selected_drivers_annotations_and_the_lease_go_and_nothing_else(world: tuple[Any, str]) -> None:
    cluster, namespace = world
    both = node(cluster, "both", {**NVIDIA, **DCU, **OTHERS})
    dcu_only = node(cluster, "dcu", {**DCU})
    clean = node(cluster, "clean", {**OTHERS})
    cluster.create_lease(lease(namespace, holder=None))
    printed: list[str] = []
    result = cleanup(cluster, keys_of("nvidia", "dcu"), nodes=[both, dcu_only, clean],
                     leases=[(namespace, LEASE)], dry_run=False, echo=printed.append)  # fmt: skip
    assert printed == [
        f"node/{both}: removed hami.io/node-nvidia-register, hami.io/node-handshake, "
        "hami.io/node-dcu-register, hami.io/node-handshake-dcu",
        f"node/{dcu_only}: removed hami.io/node-dcu-register, hami.io/node-handshake-dcu",
        f"lease/{namespace}/{LEASE}: deleted",
    ]
    assert (result.changed, result.errors, result.leases_deleted) == (
        (both, dcu_only),
        (),
        (f"{namespace}/{LEASE}",),
    )
    assert dict(cluster.get_node(both).annotations) == OTHERS
    assert dict(cluster.get_node(dcu_only).annotations) == {}
    assert dict(cluster.get_node(clean).annotations) == OTHERS
    with pytest.raises(NotFound):
        cluster.get_lease(namespace, LEASE)


def test_a_dry_run_prints_the_same_changes_and_makes_none(world: tuple[Any, str]) -> None:
    cluster, namespace = world
    both = node(cluster, "both", {**NVIDIA, **DCU})
    before = cluster.get_node(both)
    created = cluster.create_lease(lease(namespace, holder=None))
    printed: list[str] = []
    result = cleanup(cluster, keys_of("nvidia"), nodes=[both], leases=[(namespace, LEASE)], dry_run=True,
                     echo=printed.append)  # fmt: skip
    assert printed == [
        f"node/{both}: would remove hami.io/node-nvidia-register, hami.io/node-handshake",
        f"lease/{namespace}/{LEASE}: would delete",
    ]
    assert (result.changed, result.leases_deleted) == ((both,), (f"{namespace}/{LEASE}",))
    assert cluster.get_node(both) == before
    assert cluster.get_lease(namespace, LEASE) == created


def test_a_missing_node_is_an_error_and_the_rest_are_still_cleaned(world: tuple[Any, str]) -> None:
    cluster, namespace = world
    real = node(cluster, "real", {**DCU})
    ghost = unique_node_name("ghost")
    printed: list[str] = []
    result = cleanup(cluster, keys_of("dcu"), nodes=[ghost, real], leases=[(namespace, LEASE)], dry_run=False,
                     echo=printed.append)  # fmt: skip
    assert result.changed == (real,)
    (error,) = result.errors
    assert error.startswith(f"node/{ghost}: get node '{ghost}'") and "not found" in error
    assert printed[-1] == f"lease/{namespace}/{LEASE}: not found, nothing to delete"
    assert result.leases_deleted == ()
    assert dict(cluster.get_node(real).annotations) == {}


def test_every_node_is_visited_across_list_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = MemoryCluster()
    names = [node(cluster, f"n{i:03d}", {**NVIDIA, **OTHERS}) for i in range(7)]
    printed: list[str] = []
    monkeypatch.setattr(cleanup_module, "PAGE", 3)  # three pages
    result = cleanup(cluster, keys_of("nvidia"), nodes=None, dry_run=False, echo=printed.append)
    assert sorted(result.changed) == sorted(names)
    assert len(printed) == 7
    assert all(dict(cluster.get_node(name).annotations) == OTHERS for name in names)
    assert cluster.request_count("list", "nodes") == 3


def test_values_another_field_manager_owns_stay_and_are_listed_unless_included(
    world: tuple[Any, str],
) -> None:
    cluster, _ = world
    mixed = node(cluster, "mixed", {**NVIDIA, **DCU}, foreign=("hami.io/node-nvidia-register",))
    # HAMi's scheduler stamps the DCU handshake after ours did: the value is HAMi's now
    cluster.patch_node_annotations(mixed, {"hami.io/node-handshake-dcu": "Requesting_2026-11-30 10:05:00"},
                                   field_manager="hami-scheduler")  # fmt: skip
    printed: list[str] = []
    result = cleanup(cluster, keys_of("nvidia", "dcu"), nodes=[mixed], dry_run=False, echo=printed.append)
    assert printed == [
        f"node/{mixed}: removed hami.io/node-handshake, hami.io/node-dcu-register",
        f"node/{mixed}: kept hami.io/node-nvidia-register (owned by nvidia-device-plugin), "
        "hami.io/node-handshake-dcu (owned by hami-scheduler)",
    ]
    assert result.kept == (
        f"node/{mixed} hami.io/node-nvidia-register",
        f"node/{mixed} hami.io/node-handshake-dcu",
    )
    assert set(cluster.get_node(mixed).annotations) == {
        "hami.io/node-nvidia-register",
        "hami.io/node-handshake-dcu",
    }
    printed.clear()
    again = cleanup(cluster, keys_of("nvidia", "dcu"), nodes=[mixed], dry_run=False, echo=printed.append,
                    include_foreign=True)  # fmt: skip
    assert printed == [f"node/{mixed}: removed hami.io/node-nvidia-register, hami.io/node-handshake-dcu"]
    assert (again.changed, again.kept) == ((mixed,), ())
    assert dict(cluster.get_node(mixed).annotations) == {}


def test_a_node_changed_between_the_read_and_the_delete_is_judged_again() -> None:
    cluster = MemoryCluster()
    name = node(cluster, "racy", {**NVIDIA})

    real_patch = cluster.patch_node_annotations
    raced: list[bool] = []

    def patch(node_name: str, changes: Any, **kw: Any) -> Any:
        if not raced:  # HAMi's plugin writes its own register value just before our delete lands
            raced.append(True)
            real_patch(
                node_name, {"hami.io/node-nvidia-register": "[1]"}, field_manager="nvidia-device-plugin"
            )
        return real_patch(node_name, changes, **kw)

    cluster.patch_node_annotations = patch  # type: ignore[method-assign, assignment]
    printed: list[str] = []
    result = cleanup(cluster, keys_of("nvidia"), nodes=[name], dry_run=False, echo=printed.append)
    assert printed == [
        f"node/{name}: removed hami.io/node-handshake",
        f"node/{name}: kept hami.io/node-nvidia-register (owned by nvidia-device-plugin)",
    ]
    assert (result.errors, dict(cluster.get_node(name).annotations)) == (
        (),
        {"hami.io/node-nvidia-register": "[1]"},
    )


# -- the command, against the real API server ------------------------------------------------------------


def hami_cleanup(server: ApiServer, *args: str, identity: str = "admin") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAMI_", "KUBECONFIG"))}
    return subprocess.run([HAMI, "cleanup", "--kubeconfig", server.kubeconfig(identity), *args],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip


@pytest.fixture
def admin(apiserver: ApiServer) -> Iterator[KubeCluster]:
    kube = AdminKubeCluster.from_kubeconfig(apiserver.kubeconfig())
    kube.made = []  # type: ignore[attr-defined]
    try:
        yield kube
    finally:
        for name in kube.made:  # type: ignore[attr-defined]
            with contextlib.suppress(NotFound):
                kube.delete_node(name)
        kube.close()


def test_the_command_prints_each_change(
    apiserver: ApiServer, admin: KubeCluster, apiserver_namespace: str
) -> None:
    first, second = node(admin, "cli", {**NVIDIA, **DCU, **OTHERS}), node(admin, "cli", {**DCU})
    admin.create_lease(lease(apiserver_namespace, age=60))  # expired: its scheduler is gone
    lease_args = ["--lease-namespace", apiserver_namespace, "--lease-name", LEASE]
    dry = hami_cleanup(
        apiserver, "--node", first, "--node", second, "--vendors", "dcu", *lease_args, "--dry-run"
    )
    assert (dry.returncode, dry.stderr) == (0, "")
    assert dry.stdout.splitlines() == [
        f"node/{first}: would remove hami.io/node-dcu-register, hami.io/node-handshake-dcu",
        f"node/{second}: would remove hami.io/node-dcu-register, hami.io/node-handshake-dcu",
        f"lease/{apiserver_namespace}/{LEASE}: would delete",
        "dry run: 2 nodes would change; nothing was changed",
    ]
    assert dict(admin.get_node(second).annotations) == DCU
    done = hami_cleanup(apiserver, "--node", first, "--node", second, "--vendors", "dcu", *lease_args)
    assert (done.returncode, done.stderr) == (0, "")
    done_lines = [line.replace("would remove", "removed").replace("would delete", "deleted")
                  for line in dry.stdout.splitlines()[:3]]  # fmt: skip
    assert done.stdout.splitlines() == [*done_lines, "2 nodes changed"]
    assert dict(admin.get_node(first).annotations) == {**NVIDIA, **OTHERS}
    assert dict(admin.get_node(second).annotations) == {}
    with pytest.raises(NotFound):
        admin.get_lease(apiserver_namespace, LEASE)
    again = hami_cleanup(apiserver, "--node", first, "--vendors", "dcu", *lease_args)
    assert again.stdout.splitlines() == [
        f"no Lease {LEASE} in namespace {apiserver_namespace}: no hami-core scheduler with leader election "
        "runs here (or it uses another --lease-name)",
        "0 nodes changed",
    ]


def test_a_running_scheduler_stops_it_unless_forced(
    apiserver: ApiServer, admin: KubeCluster, apiserver_namespace: str
) -> None:
    target = node(admin, "busy", {**NVIDIA})
    admin.create_lease(lease(apiserver_namespace))  # held and fresh
    lease_args = ["--lease-namespace", apiserver_namespace, "--lease-name", LEASE]
    refused = hami_cleanup(apiserver, "--node", target, "--vendors", "nvidia", *lease_args)
    assert refused.returncode == 1
    (line,) = refused.stderr.splitlines()
    held = f"Lease {apiserver_namespace}/{LEASE} is held by 'scheduler-0_x'"
    assert line.startswith(f"error: hami-core's scheduler is running ({held}")
    assert line.endswith("it would stamp the nodes again: uninstall it first, or pass --force")
    assert refused.stdout == ""
    assert dict(admin.get_node(target).annotations) == NVIDIA
    forced = hami_cleanup(apiserver, "--node", target, "--vendors", "nvidia", *lease_args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert dict(admin.get_node(target).annotations) == {}


def test_failures_are_error_lines_and_exit_1_after_the_rest_is_done(
    apiserver: ApiServer, admin: KubeCluster, apiserver_namespace: str
) -> None:
    target = node(admin, "partial", {**DCU})
    ghost = unique_node_name("ghost")
    admin.create_lease(lease(apiserver_namespace, age=60))
    operator = limited_operator(apiserver)  # may read and patch Nodes and read Leases, not delete them
    done = hami_cleanup(apiserver, "--node", ghost, "--node", target, "--vendors", "dcu", "--lease-namespace",
                        apiserver_namespace, "--lease-name", LEASE, identity=operator)  # fmt: skip
    assert done.returncode == 1
    errors = done.stderr.splitlines()
    assert len(errors) == 2
    assert errors[0].startswith(f"error: node/{ghost}: ") and "not found" in errors[0]
    assert errors[1].startswith(f"error: lease/{apiserver_namespace}/{LEASE}: ") and "forbidden" in errors[1]
    assert "missing RBAC permission: user" in errors[1] and "may not delete leases" in errors[1], errors[1]
    assert done.stdout.splitlines() == [
        f"node/{target}: removed hami.io/node-dcu-register, hami.io/node-handshake-dcu",
        "1 node changed",
    ]
    assert admin.get_lease(apiserver_namespace, LEASE).holder_identity == "scheduler-0_x"
    unlisted = hami_cleanup(apiserver, "--all", "--vendors", "dcu", "--lease-namespace", apiserver_namespace,
                            "--lease-name", LEASE, "--keep-lease", identity=operator)  # fmt: skip
    assert unlisted.returncode == 1 and unlisted.stdout == ""
    (line,) = unlisted.stderr.splitlines()  # the Nodes cannot be listed: one line, and what is missing
    assert line.startswith("error: list nodes: 403") and "may not list nodes" in line, line


def test_the_lease_is_found_in_any_namespace_and_hamis_own_lease_refuses_too(
    apiserver: ApiServer, admin: KubeCluster, apiserver_namespace: str
) -> None:
    name = f"hami-core-{uuid.uuid4().hex[:8]}"  # unique: other tests' schedulers hold hami-core-scheduler
    target = node(admin, "anyns", {**NVIDIA}, foreign=("hami.io/node-nvidia-register",))
    hami = ["--hami-lease", f"{apiserver_namespace}/hami-scheduler"]
    common = ["--node", target, "--vendors", "nvidia", "--lease-name", name, *hami]
    none = hami_cleanup(apiserver, *common, "--dry-run")
    assert (none.returncode, none.stderr) == (0, "")
    assert none.stdout.splitlines() == [
        f"no Lease {name} in any namespace: no hami-core scheduler with leader election runs here (or it "
        "uses another --lease-name)",
        f"node/{target}: would remove hami.io/node-handshake",
        f"node/{target}: kept hami.io/node-nvidia-register (owned by nvidia-device-plugin)",
        "dry run: 1 node would change; nothing was changed; 1 annotation another field manager owns was "
        "kept (--include-foreign removes them)",
    ]
    admin.create_lease(attrs.evolve(lease(apiserver_namespace), name=name))  # the chart's: its namespace
    refused = hami_cleanup(apiserver, *common)
    (line,) = refused.stderr.splitlines()
    assert refused.returncode == 1
    assert line.startswith(
        f"error: hami-core's scheduler is running (Lease {apiserver_namespace}/{name} is held"
    )
    admin.delete_lease(apiserver_namespace, name)
    hamis = attrs.evolve(lease(apiserver_namespace), name="hami-scheduler", holder_identity="hami-7d9f_0b5e")
    admin.create_lease(hamis)
    refused = hami_cleanup(apiserver, *common)
    (line,) = refused.stderr.splitlines()
    assert refused.returncode == 1
    assert line.startswith(
        f"error: HAMi's scheduler is running (Lease {apiserver_namespace}/hami-scheduler is"
    )
    assert dict(admin.get_node(target).annotations) == NVIDIA
    forced = hami_cleanup(apiserver, *common, "--force", "--include-foreign")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines()[1:] == [
        f"node/{target}: removed hami.io/node-nvidia-register, hami.io/node-handshake",
        "1 node changed",
    ]


def limited_operator(server: ApiServer) -> str:
    user = f"operator-{uuid.uuid4().hex[:8]}"
    rules = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]},
    ]
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    role = {"metadata": {"name": user}, "rules": rules}
    binding = {
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    for path, body in ((f"{rbac}/clusterroles", role), (f"{rbac}/clusterrolebindings", binding)):
        status, answer = server.request("POST", path, body)
        assert status == 201, answer
    return server.add_identity(user)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: hami cleanup: give --node NAME (repeatable) or --all"),
        (["--all", "--node", "a"], "error: hami cleanup: --node and --all exclude each other"),
        (["--node", "Not_A_Node"], "error: hami cleanup: Invalid value for '--node': 'Not_A_Node' is not a "
                                   "valid Node name (a lower-case DNS subdomain)"),
        (["--all", "--vendors", "nosuch"], "error: hami cleanup: unknown vendor driver 'nosuch'"),
        (["--all", "--lease-name", "Bad Name"], "error: hami cleanup: Invalid value for '--lease-name': "
                                                "'Bad Name' is not a valid Lease name"),
        (["--all", "--lease-namespace", "a.b"], "error: hami cleanup: Invalid value for '--lease-namespace': "
                                                "'a.b' is not a valid namespace name"),
        (["--all", "--bogus"], "error: hami cleanup: No such option '--bogus'"),
    ],
)  # fmt: skip
def test_bad_usage_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    done = subprocess.run([HAMI, "cleanup", "--kubeconfig", str(tmp_path / "never-read"), *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(message), line
    assert done.stdout == ""
