"""The scheduler's store keeps only what its vendors and node selector read, and shows the same as before.

A Node carries other components' annotations and labels and every allocatable resource; the scheduler
keeps, per Node, its vendors' register and handshake annotations, their count resources and the labels
its selector names (``scheduler/trim.py``). What it shows (the cache, ``/cache/<node>``'s explanation)
must be exactly what the whole Node gives.
"""

from __future__ import annotations

import sys
from datetime import timedelta

from harness.scheduler_world import World

from hami_core.kube.packed import PackedStrings
from hami_core.kube.port import NodeSnapshot
from hami_core.plugins.manager import load_drivers
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.explain import explain_node, explanation_json
from hami_core.scheduler.selector import NodeSelector
from hami_core.scheduler.trim import NodeTrim

REGISTER = {
    "hami.io/node-nvidia-register": '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,'
    '"type":"NVIDIA-A10","mode":"hami-core","health":true}]',
    "hami.io/node-dcu-register": "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:",
}
ALLOCATABLE = {"nvidia.com/gpu": "10", "hygon.com/dcunum": "4"}
HANDSHAKES = {"NVIDIA": "hami.io/node-handshake", "DCU": "hami.io/node-handshake-dcu"}
OTHER_ANNOTATIONS = {"example.com/inventory": "x" * 3000, "node.alpha.kubernetes.io/ttl": "0"}
OTHER_LABELS = {"topology.kubernetes.io/zone": "zone-a", "kubernetes.io/arch": "amd64"}
OTHER_ALLOCATABLE = {"cpu": "64", "memory": "512Gi", "pods": "110"}


def registered(replica: Scheduler, node: str) -> set[str]:
    return {k for k, e in replica.cache.node(node).items() if e.state == "registered"}


def stamped(world: World, node: str, vendor: str) -> bool:
    return world.annotations(node).get(HANDSHAKES[vendor], "").startswith("Requesting_")


def _trim(*vendors: str, selector: dict[str, str] | None = None) -> NodeTrim:
    _, drivers = load_drivers(list(vendors))
    return NodeTrim.of([d.rules() for d in drivers], NodeSelector(selector or {}))


def test_keeps_the_vendor_keys_the_count_resources_and_the_selector_labels_only() -> None:
    trim = _trim("nvidia", "mlu", selector={"pool": "gpu"})
    register = REGISTER["hami.io/node-nvidia-register"]
    node = NodeSnapshot(
        name="n1",
        uid="u1",
        resource_version="7",
        labels={"pool": "gpu", **OTHER_LABELS},
        annotations={
            "hami.io/node-nvidia-register": register,
            "hami.io/node-handshake": "Requesting_x",
            **OTHER_ANNOTATIONS,
        },
        allocatable={"nvidia.com/gpu": "8", **OTHER_ALLOCATABLE},
    )
    kept = trim(node)
    assert (kept.name, kept.uid, kept.resource_version) == ("n1", "u1", "7")
    assert dict(kept.labels) == {"pool": "gpu"}
    assert dict(kept.annotations) == {
        "hami.io/node-nvidia-register": register,
        "hami.io/node-handshake": "Requesting_x",
    }
    assert dict(kept.allocatable) == {"nvidia.com/gpu": "8"}
    # the register value is kept compressed (tests/kube/test_packed.py), and read back as it was
    assert isinstance(kept.annotations, PackedStrings)
    assert kept.annotations["hami.io/node-nvidia-register"] == register
    # one key object for every node, and the short repeating values interned
    other = trim(
        NodeSnapshot(
            name="n2",
            annotations={"".join(["hami.io/node-", "nvidia-register"]): "[]"},
            allocatable={"nvidia.com/gpu": "".join(["8"])},
        )
    )
    assert next(iter(other.annotations)) is next(iter(kept.annotations))
    assert other.allocatable["nvidia.com/gpu"] is kept.allocatable["nvidia.com/gpu"] is sys.intern("8")
    assert dict(other.labels) == {}


def test_keeps_the_cleaned_markers_of_its_vendors_only() -> None:
    """The "cleaned, waiting for a sign of life" marker is what a restarted scheduler reads: kept."""
    trim = _trim("dcu")
    marker = '{"cleanedAt":"2026-01-01 00:00:00"}'
    kept = trim(
        NodeSnapshot(
            name="n1",
            annotations={
                "cleaned.hami-core.io/DCU": marker,
                "cleaned.hami-core.io/NVIDIA": marker,  # not a vendor of this scheduler
                **OTHER_ANNOTATIONS,
            },
        )
    )
    assert dict(kept.annotations) == {"cleaned.hami-core.io/DCU": marker}


def test_a_node_without_any_kept_key_holds_empty_mappings() -> None:
    kept = _trim("dcu")(
        NodeSnapshot(
            name="plain", labels=OTHER_LABELS, annotations=OTHER_ANNOTATIONS, allocatable=OTHER_ALLOCATABLE
        )
    )
    assert kept == NodeSnapshot(name="plain")
    assert not kept.labels and not kept.annotations and not kept.allocatable


def test_the_store_is_trimmed_and_shows_what_the_whole_node_shows(world: World) -> None:
    node = world.node("trim", {**REGISTER, **OTHER_ANNOTATIONS}, {**ALLOCATABLE, **OTHER_ALLOCATABLE})
    world.admin.merge_patch_node(node, {"metadata": {"labels": OTHER_LABELS}})
    replica = world.scheduler("nvidia", "dcu")
    world.run_until("registered", lambda: registered(replica, node) == set(HANDSHAKES))
    world.run_until("stamped", lambda: all(stamped(world, node, v) for v in HANDSHAKES))
    world.settle()

    whole = world.admin.get_node(node)
    assert set(OTHER_ANNOTATIONS) <= set(whole.annotations) and set(OTHER_LABELS) <= set(whole.labels)
    stored = replica.reflector.snapshot(node)
    assert stored is not None
    assert dict(stored.labels) == world.label  # the selector's label only
    assert set(stored.annotations) == set(REGISTER) | set(HANDSHAKES.values())
    assert dict(stored.allocatable) == ALLOCATABLE
    assert stored.resource_version == whole.resource_version

    # /cache/<node> explains from the trimmed Node exactly what the whole Node explains
    registrar, config = replica.registrar, replica.config
    now = world.clock.now()

    def explained(snapshot: NodeSnapshot) -> dict[str, object]:
        return explanation_json(
            explain_node(
                node,
                snapshot,
                registrar.vendors,
                lambda vendor: registrar.memory(node, vendor),
                selector=config.node_selector,
                now=now,
                window=timedelta(seconds=config.handshake_window),
            )
        )

    assert explained(stored) == explained(whole)
    shown = replica.node_json(node)
    assert shown is not None and shown["selected"] is True
    assert {key: v["in_cache"] for key, v in shown["vendors"].items()} == dict.fromkeys(HANDSHAKES, True)


def test_keeps_what_node_sources_declare_and_the_pair_scores_nothing_more() -> None:
    trim = _trim("nvidia", "mlu", "kunlun")
    node = NodeSnapshot(
        name="n1",
        annotations={"hami.io/node-nvidia-score": "[]", **OTHER_ANNOTATIONS},
        allocatable={"kunlunxin.com/xpu": "8", **OTHER_ALLOCATABLE},
        capacity={
            "cambricon.com/mlu.smlu.vcore": "400",
            "cambricon.com/mlu.smlu.vmemory": "96",
            "kunlunxin.com/xpu": "8",
            **OTHER_ALLOCATABLE,
        },
    )
    kept = trim(node)
    assert dict(kept.annotations) == {"hami.io/node-nvidia-score": "[]"}
    assert dict(kept.capacity) == {
        "cambricon.com/mlu.smlu.vcore": "400",
        "cambricon.com/mlu.smlu.vmemory": "96",
        "kunlunxin.com/xpu": "8",
    }
    assert dict(kept.allocatable) == {"kunlunxin.com/xpu": "8"}  # kunlun-card's count resource
    assert trim(NodeSnapshot(name="cpu", capacity=OTHER_ALLOCATABLE)).capacity == {}
