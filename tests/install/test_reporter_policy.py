"""The chart's reporter admission policy attacked on the real API server with a token bound to a Pod on
the reporter's node, in every way a client can write a Node: JSON merge patch, strategic merge patch,
JSON patch, server-side apply and PUT. The chart is rendered for two drivers (``vendors={mlu,nvidia}``)
and applied into a namespace of its own; its reporter ServiceAccount is then also granted ``update`` on
Nodes and ``patch`` on ``nodes/status`` (the chart grants neither), so that PUT and status writes reach
the policy instead of stopping at RBAC: the policy must hold on its own."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import rbac
from harness.apiserver import ApiServer
from harness.fixtures import unique_node_name
from harness.poll import wait_for
from install.kit import MERGE_PATCH, Applied, applied_chart, create_node, find

from hami_core.protocol.codecs import JSON_CODEC, decode_any
from hami_core.protocol.model import DeviceInfo, MigPlacement, MigProfile

HAMI = str(Path(sys.executable).with_name("hami"))
VENDORS = ("mlu", "nvidia")
REGISTER, HANDSHAKE = "hami.io/node-mlu-register", "hami.io/node-handshake-mlu"
NVIDIA = "hami.io/node-nvidia-register"
CAP = rbac.max_value_bytes()
HANDSHAKE_CAP = 64
STAMP = "Reported_2026-12-01 08:00:00"
OWNER = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "name": "gone",
    "uid": "0b0e0c3e-0000-4000-8000-000000000001",
}
BASE_ANNOTATIONS = {"vendor.io/keep": "1"}
BASE_LABELS = {"t": "x"}

KEYS_ONLY = "a reporter may only change its drivers' register and handshake annotations"
TOO_BIG = (
    f"a reporter may write at most {CAP} bytes to a register annotation and {HANDSHAKE_CAP} to a handshake"
)
OWN_NODE = "a reporter may only change its own Node: this token is bound to a Pod on node"
#: Real-time bounds on this loaded machine, for things that must happen: the policy and RBAC coming into
#: force, one ``hami reporter run --once`` (a Python start, two drivers, a read and a patch), a logged write.
POLICY_LOADS, REPORTER_RUNS, LOGGED = 120.0, 300.0, 60.0


@dataclass(frozen=True)
class Change:
    """What a request asks of a Node's metadata and spec (``None`` as an annotation value: remove it)."""

    annotations: dict[str, str | None] | None = None
    labels: dict[str, str] | None = None
    finalizers: list[str] | None = None
    owner_references: list[dict[str, str]] | None = None
    spec: dict[str, Any] | None = None


@dataclass(frozen=True)
class Policed:
    namespace: str
    reporter: str
    policy: str


def _merge_body(change: Change) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if change.annotations is not None:
        metadata["annotations"] = change.annotations
    if change.labels is not None:
        metadata["labels"] = change.labels
    if change.finalizers is not None:
        metadata["finalizers"] = change.finalizers
    if change.owner_references is not None:
        metadata["ownerReferences"] = change.owner_references
    body: dict[str, Any] = {"metadata": metadata}
    if change.spec is not None:
        body["spec"] = change.spec
    return body


def _pointer(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _json_patch(change: Change) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for key, value in (change.annotations or {}).items():
        path = _pointer("metadata", "annotations", key)
        ops.append(
            {"op": "remove", "path": path} if value is None else {"op": "add", "path": path, "value": value}
        )
    for key, value in (change.labels or {}).items():
        ops.append({"op": "add", "path": _pointer("metadata", "labels", key), "value": value})
    if change.finalizers is not None:
        ops.append({"op": "add", "path": "/metadata/finalizers", "value": change.finalizers})
    if change.owner_references is not None:
        ops.append({"op": "add", "path": "/metadata/ownerReferences", "value": change.owner_references})
    for key, value in (change.spec or {}).items():
        ops.append({"op": "add", "path": _pointer("spec", key), "value": value})
    return ops


def _apply_config(node: str, change: Change) -> dict[str, Any]:
    """Server-side apply's intent: the fields this manager wants; a key left out is one it gives up (and
    the API server removes it when no other manager holds it)."""
    body = _merge_body(change)
    annotations = {k: v for k, v in (change.annotations or {}).items() if v is not None}
    body["metadata"] = {**body["metadata"], "name": node, "annotations": annotations}
    return {"apiVersion": "v1", "kind": "Node", **body}


def _edited(stored: dict[str, Any], change: Change) -> dict[str, Any]:
    """The Node object a PUT sends: the stored one with ``change`` made."""
    node = copy.deepcopy(stored)
    metadata = node["metadata"]
    annotations = metadata.setdefault("annotations", {})
    for key, value in (change.annotations or {}).items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    metadata.setdefault("labels", {}).update(change.labels or {})
    if change.finalizers is not None:
        metadata["finalizers"] = change.finalizers
    if change.owner_references is not None:
        metadata["ownerReferences"] = change.owner_references
    node.setdefault("spec", {}).update(change.spec or {})
    return node


def write(apiserver: ApiServer, kind: str, node: str, change: Change, identity: str) -> tuple[int, str]:
    """``change`` sent to ``node`` as ``identity`` by a write of ``kind``: (status, the refusal's message)."""
    path = f"/api/v1/nodes/{node}"
    if kind == "merge":
        status, answer = apiserver.request("PATCH", path, _merge_body(change), identity, MERGE_PATCH)
    elif kind == "strategic":
        content = "application/strategic-merge-patch+json"
        status, answer = apiserver.request("PATCH", path, _merge_body(change), identity, content)
    elif kind == "json":
        content = "application/json-patch+json"
        status, answer = apiserver.request("PATCH", path, _json_patch(change), identity, content)
    elif kind == "apply":
        status, answer = apiserver.request(
            "PATCH", f"{path}?fieldManager=hami-reporter-test&force=true", _apply_config(node, change),
            identity, "application/apply-patch+yaml",
        )  # fmt: skip
    else:
        assert kind == "put", kind
        got, stored = apiserver.request("GET", path)
        assert got == 200, stored
        status, answer = apiserver.request("PUT", path, _edited(stored, change), identity)
    return status, answer.get("message", "") if isinstance(answer, dict) else str(answer)


def _widened(applied: Applied) -> list[dict[str, Any]]:
    """The reporter's account may also PUT Nodes and patch their status: the policy must hold alone."""
    widened = f"{applied.reporter}-widened-for-the-test"
    grant = [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
    ]
    account = {"kind": "ServiceAccount", "name": applied.reporter, "namespace": applied.namespace}
    return [
        {"apiVersion": rbac.RBAC_V1, "kind": "ClusterRole", "metadata": {"name": widened}, "rules": grant},
        {**rbac.binding(widened, account), "metadata": {"name": widened}},
    ]


@pytest.fixture(scope="module")
def policed(
    apiserver: ApiServer, helm: Path, kubectl: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Policed]:
    values = ["--set", "reporter.enabled=true", "--set", f"vendors={{{','.join(VENDORS)}}}"]
    directory = tmp_path_factory.mktemp("policy")
    with applied_chart(apiserver, helm, kubectl, directory, *values, prefix="p", extra=_widened) as applied:
        policy = find(applied.objects, "ValidatingAdmissionPolicy")["metadata"]["name"]
        result = Policed(applied.namespace, applied.reporter, policy)
        probe_own, probe_other = unique_node_name("probe"), unique_node_name("probe")
        for node in (probe_own, probe_other):
            create_node(apiserver, node)
        try:
            me = identity(apiserver, result, probe_own)
            # Admission policies and RBAC load asynchronously: wait until both are in force (a 403 from
            # RBAC, which may come first, is not the policy's: its refusal names the policy).
            refusal = f"ValidatingAdmissionPolicy '{policy}'"

            def in_force() -> bool:
                change = Change(annotations={REGISTER: ":"})
                status, message = write(apiserver, "merge", probe_other, change, me)
                if status != 403 or refusal not in message:
                    return False
                return write(apiserver, "put", probe_own, change, me)[0] == 200

            wait_for(
                "the policy to refuse a foreign-node patch and RBAC to let the reporter PUT",
                in_force,
                timeout=POLICY_LOADS,
                interval=0.2,
            )
            yield result
        finally:
            for node in (probe_own, probe_other):
                apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def identity(apiserver: ApiServer, policed: Policed, node: str) -> str:
    """The credential the kubelet would mount into the chart's reporter pod on ``node``."""
    name = f"{policed.reporter}@{node}"
    if name not in apiserver.tokens:
        pod = apiserver.pod_on_node(policed.namespace, policed.reporter, node)
        apiserver.add_token_identity(
            name, apiserver.token_request(policed.namespace, policed.reporter, pod=pod)
        )
    return name


def logged(apiserver: ApiServer, count: int, *, user: str, name: str) -> list[Any]:
    """The audit log's Node writes by ``user`` to ``name`` once there are at least ``count`` (the log of a
    write is read after its response, never once and early)."""

    def enough() -> list[Any] | None:
        found = apiserver.audit_events(user=user, resource="nodes", name=name)
        return found if len(found) >= count else None

    what = f"{count} write(s) by {user} to node {name} in the audit log"
    return list(wait_for(what, enough, timeout=LOGGED, interval=0.1))


def stored(apiserver: ApiServer, node: str) -> dict[str, Any]:
    status, body = apiserver.request("GET", f"/api/v1/nodes/{node}")
    assert status == 200, body
    return dict(body)


def _as_written(node: dict[str, Any]) -> tuple[object, ...]:
    """Everything of a Node a reporter could change, for before/after comparisons."""
    metadata = node["metadata"]
    return (
        metadata.get("annotations", {}), metadata.get("labels", {}), metadata.get("finalizers", []),
        metadata.get("ownerReferences", []), metadata.get("generateName", ""), node.get("spec"),
        node.get("status"),
    )  # fmt: skip


#: (what, the change, words of the refusal it must meet), for every kind of write.
REFUSED: list[tuple[str, Change, str]] = [
    ("a selected driver's other key", Change(annotations={"hami.io/node-nvidia-score": "[]"}), KEYS_ONLY),
    ("a driver not selected", Change(annotations={"hami.io/node-dcu-register": ":"}), KEYS_ONLY),
    ("HAMi's node lock", Change(annotations={"hami.io/mutex.lock": "2026-12-01T08:00:00Z"}), KEYS_ONLY),
    ("another annotation", Change(annotations={"vendor.io/other": "1"}), KEYS_ONLY),
    ("changing another annotation", Change(annotations={"vendor.io/keep": "2"}), KEYS_ONLY),
    ("a label", Change(labels={"t": "changed"}), "a reporter may not change a Node's labels"),
    ("a new label", Change(labels={"hami.io/x": "1"}), "a reporter may not change a Node's labels"),
    ("a finalizer", Change(finalizers=["example.com/hold"]), "a reporter may not change a Node's finalizers"),
    ("an owner reference", Change(owner_references=[OWNER]), "may not change a Node's owner references"),
    ("an oversized register value", Change(annotations={REGISTER: "x" * (CAP + 1)}),
     f"{TOO_BIG} annotation: {REGISTER} has {CAP + 1} bytes"),
    ("an oversized handshake value", Change(annotations={HANDSHAKE: STAMP + "x" * 40}),
     f"{TOO_BIG} annotation: {HANDSHAKE} has {len(STAMP) + 40} bytes"),
    ("a multi-byte value over the cap in bytes", Change(annotations={REGISTER: "é" * (CAP // 2 + 1)}),
     f"{REGISTER} has {CAP + 2} bytes"),
    ("the spec", Change(spec={"unschedulable": True}), "a reporter may not change a Node's spec or status"),
    ("its keys with a label", Change(annotations={REGISTER: ":"}, labels={"t": "y"}), "labels"),
]  # fmt: skip
#: Refusals only some writes can express (server-side apply removes only what its manager holds).
REMOVALS = [("removing another annotation", Change(annotations={"vendor.io/keep": None}), KEYS_ONLY)]
KINDS = ["merge", "strategic", "json", "apply", "put"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_write_is_held_to_its_drivers_keys_on_its_own_node(
    policed: Policed, apiserver: ApiServer, kind: str
) -> None:
    mine, other = unique_node_name(f"own-{kind}"), unique_node_name(f"other-{kind}")
    for node in (mine, other):
        create_node(apiserver, node, labels=BASE_LABELS, annotations=BASE_ANNOTATIONS)
    me = identity(apiserver, policed, mine)
    try:
        before = _as_written(stored(apiserver, mine))
        refusals = REFUSED + (REMOVALS if kind != "apply" else [])
        answers = {what: write(apiserver, kind, mine, change, me) for what, change, _ in refusals}
        answers["another node"] = write(apiserver, kind, other, Change(annotations={REGISTER: ":"}), me)
        assert {what: status for what, (status, _) in answers.items()} == dict.fromkeys(answers, 403)
        expected = {what: words for what, _, words in refusals} | {
            "another node": f"{OWN_NODE} {mine}, not {other}"
        }
        missed = {what: message for what, (_, message) in answers.items() if expected[what] not in message}
        assert missed == {}
        for _, message in answers.values():
            assert f"ValidatingAdmissionPolicy '{policed.policy}'" in message
        assert "hami.io/mutex.lock" in answers["HAMi's node lock"][1]
        assert _as_written(stored(apiserver, mine)) == before
        assert _as_written(stored(apiserver, other))[0] == BASE_ANNOTATIONS

        # Its own keys: set (a register value exactly at the cap), changed, removed.
        full = {REGISTER: "x" * CAP, HANDSHAKE: STAMP, NVIDIA: "[]"}
        assert write(apiserver, kind, mine, Change(annotations=dict(full)), me) == (200, "")
        assert stored(apiserver, mine)["metadata"]["annotations"] == {**BASE_ANNOTATIONS, **full}
        again = {
            REGISTER: "DCU-0,1,2,3,x,0,true,0,:",
            HANDSHAKE: "Reported_2026-12-01 08:00:30",
            NVIDIA: "[]",
        }
        assert write(apiserver, kind, mine, Change(annotations=dict(again)), me) == (200, "")
        assert stored(apiserver, mine)["metadata"]["annotations"] == {**BASE_ANNOTATIONS, **again}
        gone: dict[str, str | None] = dict.fromkeys(full)
        assert write(apiserver, kind, mine, Change(annotations=gone), me) == (200, "")
        assert stored(apiserver, mine)["metadata"]["annotations"] == BASE_ANNOTATIONS
        after = _as_written(stored(apiserver, mine))
        assert after[1:] == before[1:]  # labels, finalizers, owner references, spec, status

        # The server's own account: every write of the token, refused or done, and what each done left.
        user = rbac.service_account_user(policed.namespace, policed.reporter)
        verb = "update" if kind == "put" else "patch"
        events = logged(apiserver, len(refusals) + 3, user=user, name=mine)
        assert [(e.verb, e.code) for e in events] == [(verb, 403)] * len(refusals) + [(verb, 200)] * 3
        assert {e.extra.get(rbac.NODE_NAME_EXTRA) for e in events} == {(mine,)}
        for event in events[len(refusals) :]:
            left = event.response["metadata"]["annotations"]
            assert {k: v for k, v in left.items() if k not in full} == BASE_ANNOTATIONS
            assert event.response["metadata"]["labels"] == BASE_LABELS
        assert [e.code for e in logged(apiserver, 1, user=user, name=other)] == [403]
    finally:
        for node in (mine, other):
            apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def test_status_writes_are_refused_even_when_rbac_allows_them(policed: Policed, apiserver: ApiServer) -> None:
    node = unique_node_name("status")
    create_node(apiserver, node)
    try:
        me = identity(apiserver, policed, node)
        status, answer = apiserver.request(
            "PATCH", f"/api/v1/nodes/{node}/status", {"status": {"capacity": {"example.com/x": "1"}}}, me,
            MERGE_PATCH,
        )  # fmt: skip
        assert status == 403, answer
        assert "a reporter may not change a Node's spec or status" in answer["message"]
        assert "example.com/x" not in stored(apiserver, node).get("status", {}).get("capacity", {})
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def _mig_h100(index: int) -> DeviceInfo:
    """An H100 80GB in MIG mode with every profile and placement NVML lists: the longest JSON record."""
    shapes = [
        ("1g.10gb", 9856, 15, 1, [(i, 1) for i in range(7)]),
        ("1g.10gb+me", 9856, 15, 1, [(i, 1) for i in range(7)]),
        ("1g.20gb", 19968, 29, 1, [(0, 2), (2, 2), (4, 2), (6, 2)]),
        ("2g.20gb", 19968, 29, 2, [(0, 2), (2, 2), (4, 2)]),
        ("3g.40gb", 40192, 46, 3, [(0, 4), (4, 4)]),
        ("4g.40gb", 40192, 58, 4, [(0, 4)]),
        ("7g.80gb", 80384, 100, 7, [(0, 8)]),
    ]
    profiles = [
        MigProfile(name=name, memory_mb=memory, core=core, slice_count=slices,
                   placements=[MigPlacement(start=start, size=size) for start, size in places])
        for name, memory, core, slices, places in shapes
    ]  # fmt: skip
    return DeviceInfo(
        id=f"GPU-{index:08x}-5bd4-11ee-8c99-0242ac120002", index=index, count=7, devmem=81559, devcore=100,
        type="NVIDIA-NVIDIA H100 80GB HBM3", numa=index // 8, mode="mig", mig_profiles=profiles, health=True,
    )  # fmt: skip


def _mlu(index: int) -> dict[str, Any]:
    """An MLU590 with a long id, as a legacy record (written by the mlu driver)."""
    return {
        "id": f"MLU-{index:02d}-0123456789abcdef0123456789ab", "index": index, "count": 10, "devmem": 98304,
        "devcore": 100, "type": "MLU-MLU590-H8 98GB", "numa": index // 8, "mode": "hami-core", "health": True,
    }  # fmt: skip


def test_the_reporter_publishes_the_longest_real_device_lists_under_the_policy(
    policed: Policed, apiserver: ApiServer, tmp_path: Path
) -> None:
    """``hami reporter run --once`` with the chart's drivers, 16 MIG GPUs and 16 MLUs: the largest real
    values pass the cap (the size figures in values.yaml and docs/operations.md are these)."""
    node = unique_node_name("largest")
    create_node(apiserver, node)
    gpus = [_mig_h100(i) for i in range(16)]
    devices = tmp_path / "devices.json"
    devices.write_text(
        json.dumps({"nvidia": json.loads(JSON_CODEC.encode(gpus)), "mlu": [_mlu(i) for i in range(16)]})
    )
    kubeconfig = apiserver.kubeconfig(identity(apiserver, policed, node))
    try:
        done = subprocess.run(
            [HAMI, "reporter", "run", "--once", "--node-name", node, "--vendors", ",".join(VENDORS),
             "--kubeconfig", kubeconfig],
            capture_output=True, text=True, timeout=REPORTER_RUNS,
            env={**os.environ, "HAMI_FAKE_DEVICES": str(devices)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        annotations = stored(apiserver, node)["metadata"]["annotations"]
        assert len(decode_any(annotations[NVIDIA])) == 16 and len(decode_any(annotations[REGISTER])) == 16
        assert annotations[HANDSHAKE].startswith("Reported_")
        sizes = {key: len(annotations[key].encode()) for key in (NVIDIA, REGISTER)}
        assert 19_000 < sizes[NVIDIA] < CAP * 0.65, sizes  # the figure the cap is derived from
        assert sizes[REGISTER] < CAP / 10, sizes
        # The server's account: one merge patch of the protocol keys, accepted.
        user = rbac.service_account_user(policed.namespace, policed.reporter)
        (patch,) = logged(apiserver, 1, user=user, name=node)
        assert (patch.verb, patch.code) == ("patch", 200)
        assert patch.request == {
            "metadata": {"annotations": {k: annotations[k] for k in (NVIDIA, REGISTER, HANDSHAKE)}}
        }
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")
