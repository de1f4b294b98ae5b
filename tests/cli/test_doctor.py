"""``hami doctor node``: from an exported Node (offline) and live against the real API server, alone and
next to a running scheduler whose ``/cache/<node>`` view it compares with its own."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from harness import rbac
from harness.admin import AdminKubeCluster, MemoryCluster
from harness.fixtures import unique_node_name
from harness.scheduler_world import World, real_world  # noqa: F401  (the fixture)

from hami_core.cli import doctor, logs, run
from hami_core.cli.reach import SchedulerEndpoint
from hami_core.kube.port import Lease, NotFound
from hami_core.protocol.handshake import format_report, format_stamp
from hami_core.scheduler.config import DEFAULT_LEASE_NAME

HAMI = str(Path(sys.executable).with_name("hami"))
DCU_VALUE = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
DCU_REG, DCU_HS = "hami.io/node-dcu-register", "hami.io/node-handshake-dcu"
MLU_REG, MLU_HS = "hami.io/node-mlu-register", "hami.io/node-handshake-mlu"
AT = "2026-11-30T12:00:00+08:00"


def hami_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``hami`` command, in its own process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAMI_") and k != "KUBECONFIG"}
    return subprocess.run(
        [HAMI, *args], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL
    )


def hami(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``hami`` run in this process, exactly as the entry point runs it (a process costs seconds here)."""
    patch = pytest.MonkeyPatch()
    out, err = io.StringIO(), io.StringIO()
    try:
        for key in [k for k in os.environ if k.startswith("HAMI_") or k == "KUBECONFIG"]:
            patch.delenv(key)
        patch.setattr(logs, "_active", None)  # as in a new process: no log format configured yet
        patch.setattr(sys, "argv", ["hami", *args])
        patch.setattr(sys, "stdin", io.StringIO(stdin or ""))
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        try:
            run()
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
    finally:
        patch.undo()
    return subprocess.CompletedProcess(["hami", *args], code, out.getvalue(), err.getvalue())


def one_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert result.stdout == "", result.stdout
    return lines[0]


def doctor_json(*args: str, stdin: str | None = None) -> dict[str, Any]:
    result = hami("doctor", "node", *args, "--json", stdin=stdin)
    assert result.returncode == 0, result
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def exported_node(name: str = "gpu-1") -> dict[str, Any]:
    """What ``kubectl get node gpu-1 -o json`` prints, give or take the fields the protocol ignores."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": "0b7c6d1e-0000-4000-8000-000000000001",
            "resourceVersion": "12345",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": {"kubernetes.io/hostname": name},
            "annotations": {
                DCU_REG: DCU_VALUE,
                DCU_HS: "Requesting_2026.11.30 11:59:50",  # HAMi <= v2.4's dotted stamp, 10 s old
                MLU_REG: "MLU-1,10:",  # truncated: does not decode
                "hami.io/node-handshake": "Requesting_2026-11-30 11:59:30",  # HAMi's stamp, no NVIDIA here
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": {"podCIDR": "10.0.0.0/24"},
        "status": {
            "allocatable": {"cpu": "32", "memory": "131072Mi", "hygon.com/dcunum": "0"},
            "capacity": {"cpu": "32"},
        },
    }


YAML_EXPORT = """\
apiVersion: v1
kind: Node
metadata:
  annotations:
    hami.io/node-dcu-register: 'DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:'
    hami.io/node-handshake-dcu: Requesting_2026.11.30 11:59:50
    hami.io/node-handshake: Requesting_2026-11-30 11:59:30
    hami.io/node-mlu-register: 'MLU-1,10:'
  creationTimestamp: "2026-11-01T00:00:00Z"
  labels:
    kubernetes.io/hostname: gpu-1
  name: gpu-1
  resourceVersion: "12345"
  uid: 0b7c6d1e-0000-4000-8000-000000000001
spec: {}
status:
  allocatable:
    cpu: "32"
    hygon.com/dcunum: "0"
"""


# --- offline: an exported Node --------------------------------------------------------------------------


def test_an_exported_node_in_yaml_as_a_table(tmp_path: Path) -> None:
    path = tmp_path / "node.yaml"
    path.write_text(YAML_EXPORT)
    result = hami_process("doctor", "node", "--from-file", str(path), "--at", AT, "--timezone", "+08:00")
    assert result.returncode == 0 and result.stderr == "", result
    out = result.stdout
    assert out.startswith(
        f"Node gpu-1 (from {path}; uid 0b7c6d1e-0000-4000-8000-000000000001, resourceVersion 12345)"
    )
    assert "judged at 2026-11-30 12:00:00 +0800, handshake window 1 min" in out
    assert "no memory of earlier evaluations" in out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["VENDOR"])
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    rows = {line.split()[0]: line.split() for line in lines[start:end]}  # one row per installed vendor
    assert rows["VENDOR"][:3] == ["VENDOR", "STATE", "REGISTER"]
    assert rows["DCU"][1:3] == ["registered", "1"] and rows["DCU"][-1] == "nothing"
    assert rows["MLU"][1] == "degraded" and rows["MLU"][-1] == "stamp"
    assert rows["NVIDIA"][1] == "not-present" and rows["XPU"][1] == "not-present"
    flat = " ".join(out.split())  # the details are wrapped
    assert "which HAMi v2.10 cannot parse" in flat  # the dotted DCU stamp
    assert "HAMi's scheduler stamps every node for every vendor" in flat  # NVIDIA's stamp, no NVIDIA
    assert "segment 1 (offset 0)" in flat  # where the MLU value goes wrong


def test_an_exported_node_in_json_as_json(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    path.write_text(json.dumps(exported_node()))
    body = doctor_json("--from-file", str(path), "--at", AT, "--timezone", "+08:00", "--vendors", "dcu,mlu")
    assert (body["node"], body["resource_version"], body["judged_at"]) == ("gpu-1", "12345", AT)
    assert body["source"] == {"kind": "file", "file": str(path)}
    assert body["lease"] is None and body["scheduler"] is None and body["remembered"] is False
    assert set(body["vendors"]) == {"DCU", "MLU"}
    dcu = body["vendors"]["DCU"]
    assert (dcu["state"], dcu["register"]["devices"], dcu["handshake"]["kind"]) == ("registered", 1, "stamp")
    assert dcu["handshake"]["age_seconds"] == 10.0 and dcu["next"]["write"] == "nothing"
    assert dcu["next"]["deadline"] == "2026-11-30T12:00:50+08:00"
    assert {n["code"] for n in dcu["notes"]} == {"hami-cannot-parse", "no-memory"}
    mlu = body["vendors"]["MLU"]
    assert mlu["state"] == "degraded" and mlu["register"]["decodes"] is False
    assert "segment 1" in mlu["register"]["error"] and mlu["next"]["write"] == "stamp"
    assert mlu["next"]["value"] == "Requesting_2026-11-30 12:00:00"
    # the same moment in another zone: the dotted stamp is read in the scheduler's zone (UTC here)
    utc = doctor_json(
        "--from-file", str(path), "--at", "2026-11-30T11:59:59Z", "--timezone", "UTC", "--vendors", "dcu"
    )
    assert utc["vendors"]["DCU"]["handshake"]["age_seconds"] == 9.0


def test_a_later_moment_and_a_selector(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    path.write_text(json.dumps(exported_node()))
    later = doctor_json(
        "--from-file",
        str(path),
        "--at",
        "2026-11-30T12:05:00+08:00",
        "--timezone",
        "+08:00",
        "--vendors",
        "dcu",
    )
    dcu = later["vendors"]["DCU"]
    assert dcu["state"] == "awaiting-sign-of-life" and dcu["next"]["write"] == "nothing"
    assert any("has DCU registered here would clean it up now" in n["text"] for n in dcu["notes"])
    outside = doctor_json(
        "--from-file", str(path), "--at", AT, "--node-selector", "pool=gpu", "--vendors", "dcu"
    )
    assert outside["selected"] is False and outside["vendors"]["DCU"]["state"] == "not-selected"


def test_a_list_of_nodes_and_standard_input(tmp_path: Path) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [exported_node("gpu-1"), exported_node("gpu-2")]}
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(listed))
    assert doctor_json("gpu-2", "--from-file", str(path), "--at", AT, "--vendors", "dcu")["node"] == "gpu-2"
    line = one_error(hami("doctor", "node", "--from-file", str(path)), 2)
    assert line.endswith(f"{path}: a list of 2 Nodes: name the one to examine")
    body = doctor_json("--from-file", "-", "--at", AT, "--vendors", "dcu", stdin=json.dumps(exported_node()))
    assert body["node"] == "gpu-1" and body["source"]["file"] == "-"


def test_a_closed_standard_input_is_one_line() -> None:
    """Started with its standard input closed (``<&-``): Python has no ``sys.stdin`` at all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAMI_") and k != "KUBECONFIG"}
    closed = subprocess.run(
        [HAMI, "doctor", "node", "--from-file", "-"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(0),
    )
    assert one_error(closed, 2).endswith("standard input: not readable: it is closed")


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (None, (), "{path}: not found"),
        ("", (), "{path}: not a Node: the file is empty"),
        ("kind: Pod\nmetadata: {name: p}\n", (), "{path}: not a Node: it holds a Pod"),
        ("metadata: {name: n}\n", (), "{path}: not a Node: it holds an object without a kind"),
        ("- a\n- b\n", (), "{path}: not a Node: it holds a YAML list, not an object"),
        ("kind: Node\nmetadata: [\n", (), "{path}: not a Node: not valid YAML or JSON at line 3"),
        ("kind: Node\nmetadata: {}\n", (), "{path}: not a Node: malformed Node: metadata.name is None"),
        (
            "kind: Node\nmetadata: {name: n, creationTimestamp: 2026-13-45}\n",
            (),
            "{path}: not a Node: not valid YAML or JSON (month must be in 1..12)",
        ),
        ("kind: List\nitems: 3\n", (), "{path}: a List whose items are not a list"),
        ("kind: NodeList\nitems: {a: 1}\n", (), "{path}: a NodeList whose items are not a list"),
        ("kind: List\nitems: [{kind: Node, metadata: 5}]\n", (), "{path}: not a Node: malformed Node"),
        ("kind: List\nitems: [{metadata: [1]}, {}]\n", ("n",), "{path}: no Node 'n' in the list (it holds 2"),
        (
            "kind: Node\nmetadata: {name: n, annotations: {a: [1]}}\n",
            (),
            "{path}: not a Node: malformed Node 'n' metadata.annotations['a']: expected a string, got list",
        ),
        (YAML_EXPORT, ("gpu-2",), "{path}: holds Node 'gpu-1', not 'gpu-2'"),
        (YAML_EXPORT, ("--vendors", "nosuch"), "unknown vendor driver 'nosuch'"),
        (YAML_EXPORT, ("--timezone", "Mars/Base"), "Invalid value for '--timezone': 'Mars/Base' is not"),
        (YAML_EXPORT, ("--timezone", "+\u00b2\u00b2"), "'+\u00b2\u00b2' is not a UTC offset like +08:00"),
        (YAML_EXPORT, ("--timezone", "a" * 300), "Invalid value for '--timezone': 'aaa"),  # no such file
        (YAML_EXPORT, ("--at", "yesterday"), "Invalid value for '--at': 'yesterday' is not a time"),
        (YAML_EXPORT, ("--handshake-window", "0s"), "Invalid value for '--handshake-window'"),
        (YAML_EXPORT, ("--node-selector", "a=b=c"), "Invalid value for '--node-selector'"),
        (
            YAML_EXPORT,
            ("--scheduler-url", "http://127.0.0.1:1"),
            "--scheduler-url and --scheduler-service compare with the live Node",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, args: tuple[str, ...], message: str
) -> None:
    path = tmp_path / "node.yaml"
    if content is not None:
        path.write_text(content)
    line = one_error(hami("doctor", "node", "--from-file", str(path), *args), 2)
    assert message.format(path=path) in line, line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a Node NAME, or --from-file FILE"),
        (("Not_A_Name",), "Invalid value for 'NAME': 'Not_A_Name' is not a Node name"),
        (
            ("gpu-1", "--scheduler-url", "ftp://host"),
            "Invalid value for '--scheduler-url': 'ftp://host' is not",
        ),
        (
            ("gpu-1", "--kubeconfig", "/nonexistent/kubeconfig"),
            "kubeconfig /nonexistent/kubeconfig: not found",
        ),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    line = one_error(hami("doctor", "node", *args), 2)
    assert message in line, line


def test_a_directory_is_not_a_node_file(tmp_path: Path) -> None:
    line = one_error(hami("doctor", "node", "--from-file", str(tmp_path)), 2)
    assert line.endswith(f"{tmp_path}: not readable: it is a directory")


# --- live: the real API server --------------------------------------------------------------------------


def _identity(apiserver: Any, name: str, rules: list[dict[str, Any]] | None) -> str:
    """A client-certificate user bound to a ClusterRole of ``rules`` (``None``: no rights at all)."""
    user = str(apiserver.add_identity(f"hami-doctor-{name}-{uuid.uuid4().hex[:6]}"))
    if rules is not None:
        role = {"apiVersion": rbac.RBAC_V1, "kind": "ClusterRole", "metadata": {"name": user}, "rules": rules}
        for path, body in (
            ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
            ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", rbac.binding(user, rbac.user(user))),
        ):
            status, answer = apiserver.request("POST", path, body)
            assert status == 201, answer
    return user


#: What the doctor needs: get on Nodes, get and list on Leases (to find the scheduler's by name in any
#: namespace); nothing else.
READ_ONLY = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list"]},
]


def test_live_node_lease_and_no_write(apiserver: Any, apiserver_namespace: str) -> None:
    admin = AdminKubeCluster.from_kubeconfig(apiserver.kubeconfig("admin"))
    name = unique_node_name("doctor")
    now = datetime.now().astimezone()
    expired = format_stamp(now - timedelta(seconds=90))
    admin.create_node(name, annotations={DCU_REG: DCU_VALUE, DCU_HS: expired})
    admin.patch_node_status(name, {"hygon.com/dcunum": "4"})
    reader = apiserver.kubeconfig(_identity(apiserver, "reader", READ_ONLY))
    before = admin.get_node(name).resource_version
    args = ("--kubeconfig", reader, "--lease-namespace", apiserver_namespace, "--vendors", "dcu,mlu")

    body = doctor_json(name, *args)
    assert body["source"]["kind"] == "cluster" and body["resource_version"] == before
    dcu = body["vendors"]["DCU"]
    assert (dcu["state"], dcu["verdict"]) == ("registered", "kept-by-allocatable")
    assert dcu["next"]["write"] == "nothing"
    assert dcu["allocatable"] == {"resource": "hygon.com/dcunum", "value": "4", "count": 4, "invalid": False}
    assert body["vendors"]["MLU"]["state"] == "not-present"
    assert body["lease"]["found"] is False
    assert body["lease"]["summary"] == (
        f"no Lease {DEFAULT_LEASE_NAME} in namespace {apiserver_namespace}: no hami-core scheduler with "
        "leader election runs here (or it uses another --lease-name)"
    )

    renewed = datetime.now(UTC)
    admin.create_lease(
        Lease(
            name=DEFAULT_LEASE_NAME,
            namespace=apiserver_namespace,
            holder_identity="replica-7",
            lease_duration_seconds=3600,
            acquire_time=renewed,
            renew_time=renewed,
        )
    )
    result = hami("doctor", "node", name, *args)
    assert result.returncode == 0, result
    assert f"Lease {apiserver_namespace}/{DEFAULT_LEASE_NAME}: held by replica-7, renewed" in result.stdout
    assert "kept-by-allocatable" in result.stdout
    lease = doctor_json(name, *args)["lease"]
    assert (lease["holder"], lease["held"]) == ("replica-7", True)
    # without --lease-namespace it is found by name wherever it is (a unique name: other tests' run too)
    unique = f"doctor-{uuid.uuid4().hex[:8]}"
    elsewhere = ("--kubeconfig", reader, "--lease-name", unique, "--vendors", "dcu")
    summary = doctor_json(name, *elsewhere)["lease"]["summary"]
    assert summary.startswith(f"no Lease {unique} in any namespace: no hami-core scheduler")
    held: dict[str, Any] = {"lease_duration_seconds": 3600, "acquire_time": renewed, "renew_time": renewed}
    admin.create_lease(Lease(name=unique, namespace=apiserver_namespace, holder_identity="replica-8", **held))
    lease = doctor_json(name, *elsewhere)["lease"]
    assert (lease["namespace"], lease["holder"], lease["held"]) == (apiserver_namespace, "replica-8", True)
    assert admin.get_node(name).resource_version == before  # the doctor wrote nothing
    admin.delete_node(name)


def test_live_failures_are_one_line_and_exit_1(
    apiserver: Any, apiserver_namespace: str, tmp_path: Path
) -> None:
    admin = apiserver.kubeconfig("admin")
    line = one_error(hami("doctor", "node", unique_node_name("missing"), "--kubeconfig", admin), 1)
    assert "not found in the cluster" in line
    nobody = apiserver.kubeconfig(_identity(apiserver, "nobody", None))
    line = one_error(hami("doctor", "node", "some-node", "--kubeconfig", nobody), 1)
    assert "may not get nodes cluster-wide" in line and "charts/hami-core" in line
    # a Lease it may not read is shown, not fatal
    name = unique_node_name("doctor")
    apiserver.request("POST", "/api/v1/nodes", {"metadata": {"name": name}})
    nodes_only = apiserver.kubeconfig(_identity(apiserver, "nodes", READ_ONLY[:1]))
    body = doctor_json(name, "--kubeconfig", nodes_only, "--lease-namespace", apiserver_namespace)
    assert "may not get leases" in body["lease"]["error"]
    apiserver.request("DELETE", f"/api/v1/nodes/{name}")
    # an API server that is not there
    config = json.loads(Path(admin).read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    gone = tmp_path / "gone.kubeconfig"
    gone.write_text(json.dumps(config))
    line = one_error(hami("doctor", "node", "some-node", "--kubeconfig", str(gone)), 1)
    assert line.startswith("error: cannot reach the API server: ") and "Connection refused" in line


def test_live_next_to_a_running_scheduler(real_world: World) -> None:  # noqa: F811
    """The doctor and a scheduler's /cache view agree where the scheduler's past does not matter, and
    say why they differ where it does (a cleanup the doctor cannot know of)."""
    world = real_world
    registered = world.node("reg", {DCU_REG: DCU_VALUE}, {"hygon.com/dcunum": "4"})
    cpu = world.node("cpu")
    degraded = world.node("bad", {MLU_REG: "MLU-1,10:"})
    dead = world.node("dead", {DCU_REG: DCU_VALUE})
    replica = world.scheduler("dcu", "mlu", identity="doctor-test-leader")
    world.run_until("ready", replica.ready)
    world.run_until("dead node cleaned up", lambda: replica.cache.vendor(dead, "DCU") is None)
    world.admin.patch_node_annotations(dead, {DCU_HS: format_stamp(world.clock.now())})  # HAMi re-stamps
    world.settle()
    address = replica.http_address
    assert address is not None
    now = world.clock.now()  # the scheduler's fake clock stands still while the doctor runs
    args = (
        "--kubeconfig",
        world.server.kubeconfig("admin"),
        "--lease-namespace",
        world.namespace,
        "--vendors",
        "dcu,mlu",
        "--node-selector",
        ",".join(f"{k}={v}" for k, v in world.label.items()),
        "--at",
        now.isoformat(),
        "--timezone",
        now.strftime("%z"),
        "--scheduler-url",
        f"http://127.0.0.1:{address[1]}",
    )

    for name in (registered, cpu, degraded):
        body = doctor_json(name, *args)
        scheduler = body["scheduler"]
        assert scheduler["error"] is None and scheduler["agrees"] is True, scheduler
        assert scheduler["identity"] == "doctor-test-leader" and scheduler["leader"] is True
        assert body["lease"]["holder"] == "doctor-test-leader" and body["lease"]["held"] is True

    # The cleanup left its marker on the Node: the doctor, with no memory of its own, reads it there
    body = doctor_json(dead, *args)
    assert body["vendors"]["DCU"]["state"] == "awaiting-sign-of-life"
    scheduler = body["scheduler"]
    assert scheduler["agrees"] is True, scheduler
    assert scheduler["vendors"]["DCU"]["scheduler"] == {"state": "awaiting-sign-of-life", "write": "nothing"}
    text = hami("doctor", "node", dead, *args).stdout
    assert "doctor-test-leader, leader, sends its writes" in text and "DIFFERS" not in text

    # once the plugin reports, both say registered
    world.admin.patch_node_annotations(dead, {DCU_HS: format_report(world.clock.now())})
    world.run_until("readmitted", lambda: replica.cache.vendor(dead, "DCU") is not None)
    world.settle()
    now = world.clock.now()
    moved = [*args[:-6], "--at", now.isoformat(), *args[-4:]]
    assert doctor_json(dead, *moved)["scheduler"]["agrees"] is True

    # a scheduler that is not there: said, not fatal
    body = doctor_json(cpu, *args[:-1], "http://127.0.0.1:1")
    assert body["scheduler"]["agrees"] is None and "not reachable" in body["scheduler"]["error"]


def test_live_next_to_a_read_only_scheduler(real_world: World) -> None:  # noqa: F811
    """Beside HAMi, the doctor questions a read-only replica's view: they agree, and a write the replica
    only shows (it sends nothing) is the same write the doctor says a leader sends now."""
    world = real_world
    needs_stamp = world.node("ro-doc", {DCU_REG: DCU_VALUE}, {"hygon.com/dcunum": "4"})
    replica = world.scheduler("dcu", identity="doctor-read-only", read_only=True)
    world.run_until("ready", replica.ready)
    address = replica.http_address
    assert address is not None
    now = world.clock.now()
    body = doctor_json(
        needs_stamp,
        "--kubeconfig",
        world.server.kubeconfig("admin"),
        "--lease-namespace",
        world.namespace,
        "--vendors",
        "dcu",
        "--node-selector",
        ",".join(f"{k}={v}" for k, v in world.label.items()),
        "--at",
        now.isoformat(),
        "--timezone",
        now.strftime("%z"),
        "--scheduler-url",
        f"http://127.0.0.1:{address[1]}",
    )
    scheduler = body["scheduler"]
    assert scheduler["error"] is None and scheduler["agrees"] is True, scheduler
    assert scheduler["identity"] == "doctor-read-only" and scheduler["leader"] is False
    assert body["vendors"]["DCU"]["next"]["write"] == "stamp"
    assert DCU_HS not in world.annotations(needs_stamp)  # shown, never sent


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("hami-system", "'hami-system' is not NAMESPACE/NAME or NAMESPACE/NAME:PORT"),
        ("Hami_System/svc", "'Hami_System' is not a valid namespace name"),
        ("hami-system/svc:Bad_Port", "'svc:Bad_Port' is not a Service name with an optional port"),
        ("hami-system/svc:\u00b2", "'svc:\u00b2' is not a Service name with an optional port"),
    ],
)
def test_a_bad_scheduler_service_is_one_line_and_exit_2(value: str, complaint: str, tmp_path: Path) -> None:
    done = hami_process(
        "doctor", "nodes", "--kubeconfig", str(tmp_path / "none"), "--scheduler-service", value
    )
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert (
        line.startswith("error: hami doctor nodes: Invalid value for '--scheduler-service'")
        and complaint in line
    )


def test_the_in_memory_cluster_runs_no_services() -> None:
    with pytest.raises(NotFound, match="services 'hami-core-scheduler' not found"):
        MemoryCluster().proxy_get("hami-system", "hami-core-scheduler:http", "/status")


def test_an_mlu_from_capacity_says_its_source_beside_hamis_annotation_path(tmp_path: Path) -> None:
    """Spec 1b: the MLU devices of HAMi v2.10 come from the capacity; doctor and /cache say which source."""
    node = exported_node("mlu-1")
    node["metadata"]["annotations"] = {MLU_REG: "MLU-1,10,23308,0,MLU-370,0,true,0,hami-core:"}
    node["status"]["capacity"] = {
        "cambricon.com/mlu.smlu.vcore": "200",
        "cambricon.com/mlu.smlu.vmemory": "64",
    }
    path = tmp_path / "node.json"
    path.write_text(json.dumps(node))
    body = doctor_json("--from-file", str(path), "--at", AT, "--vendors", "mlu")
    mlu = body["vendors"]["MLU"]
    assert (mlu["source"], mlu["state"], mlu["register"]["devices"], mlu["register"]["annotation"]) == (
        "node",
        "registered",
        2,
        None,
    )
    assert mlu["handshake"]["annotation"] is None and mlu["next"]["write"] == "nothing"
    text = hami("doctor", "node", "--from-file", str(path), "--at", AT, "--vendors", "mlu")
    assert text.returncode == 0, text
    assert "source      the Node" in text.stdout or "source the Node" in " ".join(text.stdout.split())
    # Without the capacity, the seed's annotation is read, with its handshake.
    del node["status"]["capacity"]
    path.write_text(json.dumps(node))
    mlu = doctor_json("--from-file", str(path), "--at", AT, "--vendors", "mlu")["vendors"]["MLU"]
    assert (mlu["source"], mlu["register"]["annotation"]) == ("annotation", MLU_REG)
    assert mlu["handshake"]["annotation"] == MLU_HS


def test_doctor_reads_hamis_device_config_for_the_resource_names(tmp_path: Path) -> None:
    """HAMi's chart counts MLUs as cambricon.com/vmlu: with its device config, so does the doctor."""
    node = exported_node("mlu-2")
    node["metadata"]["annotations"] = {MLU_REG: "MLU-1,10,23308,0,MLU-370,0,true,0,hami-core:"}
    node["status"]["allocatable"] = {"cambricon.com/vmlu": "1"}
    path = tmp_path / "node.json"
    path.write_text(json.dumps(node))
    config = tmp_path / "device-config.yaml"
    config.write_text("cambricon:\n  resourceCountName: cambricon.com/vmlu\n")
    mlu = doctor_json(
        "--from-file", str(path), "--at", AT, "--vendors", "mlu", "--device-config", str(config)
    )
    assert mlu["vendors"]["MLU"]["allocatable"] == {
        "resource": "cambricon.com/vmlu",
        "value": "1",
        "count": 1,
        "invalid": False,
    }
    config.write_text("cambricon:\n  resourceCountName: [x]\n")
    bad = hami("doctor", "node", "--from-file", str(path), "--device-config", str(config))
    assert "cambricon.resourceCountName: expected a string" in one_error(bad, 2)


# --- a scheduler's answers the doctor does not expect (another version, a broken proxy): said, or passed on
# as they are, never a traceback. The scheduler is a real HTTP server answering fixed bodies.


@pytest.fixture
def answers() -> Iterator[tuple[str, dict[str, Any]]]:
    """A scheduler at the URL returned, answering each path with the JSON (or bytes) in the dict under it."""
    bodies: dict[str, Any] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = bodies.get(urlsplit(self.path).path, {})  # bytes: sent as they are
            body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


FLAGS: Mapping[str, Any] = {"handshake_window": None, "node_selector": None, "zone": None}


@pytest.mark.parametrize(
    ("lease", "error"),
    [
        ({}, "its settings do not read: lease '{}' names no namespace and name"),
        ({"namespace": "ns"}, """lease '{"namespace": "ns"}' names no namespace and name"""),
        ({"namespace": "ns", "name": 5}, "names no namespace and name"),
        ("ns/name", """lease '"ns/name"' names no namespace and name"""),
    ],
)
def test_a_lease_the_doctor_cannot_read_is_said_and_the_defaults_judge(
    answers: tuple[str, dict[str, Any]], lease: object, error: str
) -> None:
    url, bodies = answers
    bodies["/status"] = {"settings": {"handshake_window_seconds": 90, "lease": lease}}
    settings = doctor.scheduler_settings(SchedulerEndpoint(url=url, cluster=MemoryCluster()), FLAGS)
    assert settings.error is not None and error in settings.error, settings.error
    assert (
        settings.lease is None and settings.window.total_seconds() == doctor._DEFAULT_WINDOW
    )  # none of it read


def test_a_lease_named_is_the_one_the_doctor_looks_at(answers: tuple[str, dict[str, Any]]) -> None:
    url, bodies = answers
    bodies["/status"] = {
        "settings": {"handshake_window_seconds": 90, "lease": {"namespace": "a", "name": "b"}}
    }
    settings = doctor.scheduler_settings(SchedulerEndpoint(url=url, cluster=MemoryCluster()), FLAGS)
    assert (settings.error, settings.lease, settings.window.total_seconds()) == (None, ("a", "b"), 90)


def test_a_state_this_doctor_does_not_know_is_shown_as_the_scheduler_says_it(
    answers: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer scheduler may name a state this doctor has no word for: shown, and no filter matches it."""
    url, bodies = answers
    cluster = MemoryCluster()
    cluster.create_node(
        "gpu-1", annotations={DCU_REG: DCU_VALUE, DCU_HS: format_report(datetime.now().astimezone())}
    )
    cluster.create_node(
        "gpu-2", annotations={DCU_REG: DCU_VALUE, DCU_HS: format_report(datetime.now().astimezone())}
    )
    monkeypatch.setattr(doctor, "_live", lambda flags: cluster)
    bodies["/status"] = {"settings": {}}
    bodies["/cache"] = {"nodes": {"gpu-1": {"DCU": {"state": "resting"}}}}
    args = ("doctor", "nodes", "--vendors", "dcu", "--scheduler-url", url)

    listed = hami(*args)
    assert listed.returncode == 0, listed.stderr
    assert "gpu-1  DCU=resting\n" in listed.stdout and "gpu-2  DCU=registered*\n" in listed.stdout

    filtered = hami(*args, "--state", "registered", "--json")
    assert filtered.returncode == 0, filtered.stderr
    assert list(json.loads(filtered.stdout)["nodes"]) == ["gpu-2"]


@pytest.mark.parametrize(
    ("theirs", "error"),
    [
        ({"handshake_window_seconds": float("nan")}, "handshake_window_seconds must be > 0 and at most"),
        ({"handshake_window_seconds": 1e300}, "handshake_window_seconds must be > 0 and at most"),
        ({"handshake_window_seconds": -1}, "handshake_window_seconds must be > 0 and at most"),
        ({"handshake_window_seconds": [90]}, "handshake_window_seconds must be > 0 and at most"),
        ({"node_selector": 5}, "its settings do not read: node_selector '5' is not a string"),
        ({"timezone": None}, "its settings do not read: timezone 'null' is not a string"),
        ({"timezone": "a" * 300}, "is not 'local', 'UTC', an offset like +08:00 or a known zone name"),
    ],
)
def test_settings_the_doctor_cannot_read_are_said_and_the_defaults_judge(
    answers: tuple[str, dict[str, Any]], theirs: dict[str, Any], error: str
) -> None:
    url, bodies = answers
    bodies["/status"] = {"settings": theirs}
    settings = doctor.scheduler_settings(SchedulerEndpoint(url=url, cluster=MemoryCluster()), FLAGS)
    assert settings.error is not None and error in settings.error, settings.error
    assert settings.window.total_seconds() == doctor._DEFAULT_WINDOW


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/cache", {"nodes": [1]}),
        ("/cache", {"nodes": "gpu-1"}),
        ("/cache", {"nodes": {"gpu-1": 5}}),
        ("/cache", {"nodes": {"gpu-1": ["DCU"]}}),
        ("/cache/gpu-1", {"vendors": {"DCU": {"state": "registered", "next": 5}}}),
        ("/cache/gpu-1", {"vendors": {"DCU": {"state": "registered", "next": ["write"]}}}),
    ],
)
def test_a_view_of_the_wrong_shape_leaves_the_doctor_to_judge(
    answers: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, path: str, body: dict[str, Any]
) -> None:
    """A scheduler's /cache or /cache/<node> with a wrong type inside: judged by the doctor, no traceback."""
    url, bodies = answers
    cluster = MemoryCluster()
    cluster.create_node(
        "gpu-1", annotations={DCU_REG: DCU_VALUE, DCU_HS: format_report(datetime.now().astimezone())}
    )
    monkeypatch.setattr(doctor, "_live", lambda flags: cluster)
    bodies["/status"] = {"settings": {}}
    bodies[path] = body
    if path == "/cache":
        listed = hami("doctor", "nodes", "--vendors", "dcu", "--scheduler-url", url)
        assert listed.returncode == 0, listed.stderr
        assert "gpu-1  DCU=registered*\n" in listed.stdout
    else:
        explained = hami("doctor", "node", "gpu-1", "--vendors", "dcu", "--scheduler-url", url, "--json")
        assert explained.returncode == 0, explained.stderr
        compared = json.loads(explained.stdout)["scheduler"]["vendors"]["DCU"]
        assert compared["scheduler"] == {"state": "registered", "write": None}, compared


def test_json_nested_too_deeply_is_no_answer(answers: tuple[str, dict[str, Any]]) -> None:
    url, bodies = answers
    bodies["/status"] = b"[" * 100_000 + b"]" * 100_000
    settings = doctor.scheduler_settings(SchedulerEndpoint(url=url, cluster=MemoryCluster()), FLAGS)
    assert settings.error == f"{url} /status did not answer with JSON (not a hami-core scheduler?)"
