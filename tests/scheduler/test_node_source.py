"""A vendor whose devices come from the Node's capacity (spec 1b), through the scheduler end to end.

The driver below is what a third party writes (a declaration and one function); the scheduler runs it
against the in-memory cluster and the real API server alike. Nothing is ever written for such a vendor:
no stamp, no cleanup patch; it is in the cache while its function yields devices.
"""

from __future__ import annotations

from harness.scheduler_world import WINDOW, CountingCluster, World
from plugins.driverkit import Describes

from hami_core import DeviceInfo, FromNode, NodeView, VendorSpec
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.scheduler.daemon import Scheduler

CORES = "acme.example/vcore"
MEMORY = "acme.example/vmemory"


def acme_cards(node: NodeView) -> list[DeviceInfo]:
    """One card per 100 cores, the memory shared out evenly (as HAMi's Cambricon driver computes it)."""
    cores = node.capacity.get(CORES, 0)
    memory = node.capacity.get(MEMORY, 0)
    count = -(-cores // 100)
    return [
        DeviceInfo(
            id=f"{node.name}-acme-{i}",
            index=i,
            count=100,
            devmem=memory * 256 * 100 // cores,
            devcore=100,
            type="ACME-X1",
            health=True,
        )
        for i in range(count)
    ]


SPEC = VendorSpec(
    name="acme",
    vendor_key="ACME",
    count_resource="acme.example/vcard",
    from_node=FromNode(acme_cards, capacity=[CORES, MEMORY]),
)


def acme() -> VendorDriver:
    (driver,) = DriverManager().register(Describes(SPEC), "acme", package="hami-vendor-acme", version="1.0")
    return driver


def devices(replica: Scheduler, node: str) -> list[str]:
    entry = replica.cache.vendor(node, "ACME")
    return [] if entry is None else [d.id for d in entry.devices]


def test_a_capacity_vendor_appears_changes_and_leaves_without_a_single_write(world: World) -> None:
    driver = acme()
    node = world.node("acme", capacity={CORES: "200", MEMORY: "64"})
    bare = world.node("cpu-only", capacity={"cpu": "4"})
    replica = world.scheduler(rules=[driver.rules()])
    world.run_until("registered", lambda: devices(replica, node) == [f"{node}-acme-0", f"{node}-acme-1"])
    world.run_until("ready", replica.ready)
    entry = replica.cache.vendor(node, "ACME")
    assert entry is not None and entry.state == "registered"
    assert [(d.devmem, d.devicevendor) for d in entry.devices] == [(8192, "ACME")] * 2
    assert replica.cache.node(bare) == {}
    # Time passing changes nothing: there is no stamp to expire.
    world.advance(WINDOW * 2)
    assert len(devices(replica, node)) == 2
    # The capacity changes: the devices follow.
    world.admin.patch_node_status(node, {}, capacity={CORES: "300"})
    world.run_until("three cards", lambda: len(devices(replica, node)) == 3)
    # The capacity drops to 0: no devices, the vendor leaves the cache.
    world.admin.patch_node_status(node, {}, capacity={CORES: "0"})
    world.run_until("left the cache", lambda: replica.cache.vendor(node, "ACME") is None)
    world.admin.patch_node_status(node, {}, capacity={CORES: "100"})
    world.run_until("back", lambda: devices(replica, node) == [f"{node}-acme-0"])
    # The node is deleted: everything about it goes.
    world.admin.delete_node(node)
    world.run_until("node gone", lambda: replica.cache.node(node) == {})
    world.settle()
    assert world.annotations(bare) == {}
    calls = CountingCluster.of(replica).calls
    assert calls["patch_node_annotations"] == 0, calls  # never a stamp, never a cleanup patch
    assert calls["get_node"] == 0, calls


MLU_REGISTER = "MLU-45013011,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:"
MLU_HANDSHAKE = "hami.io/node-handshake-mlu"
VCORE, VMEMORY = "cambricon.com/mlu.smlu.vcore", "cambricon.com/mlu.smlu.vmemory"


def test_mlu_reads_hamis_capacity_where_the_node_shows_it_and_the_annotation_elsewhere(world: World) -> None:
    """Spec 1b: HAMi v2.10's MLU devices come from the capacity (always healthy, nothing written); the seed's
    annotation, with its handshake, is read where the Node has no such capacity. ``/cache`` says which."""
    node = world.node("mlu", {"hami.io/node-mlu-register": MLU_REGISTER}, {"cambricon.com/mlu": "1"})
    replica = world.scheduler("mlu")
    world.run_until("annotation path", lambda: _mlu(replica, node) == ["MLU-45013011"])
    world.run_until(
        "stamped", lambda: world.annotations(node).get(MLU_HANDSHAKE, "").startswith("Requesting_")
    )
    shown = replica.node_json(node)
    assert shown is not None and shown["vendors"]["MLU"]["source"] == "annotation"
    stamps = CountingCluster.of(replica).calls["patch_node_annotations"]
    # Cambricon's plugin in dynamic-smlu mode: the capacity appears, and wins.
    world.admin.patch_node_status(node, {}, capacity={VCORE: "200", VMEMORY: "64"})
    world.run_until(
        "capacity path", lambda: _mlu(replica, node) == [f"{node}-cambricon-mlu-0", f"{node}-cambricon-mlu-1"]
    )
    entry = replica.cache.vendor(node, "MLU")
    assert entry is not None and entry.source == "node" and entry.to_json()["source"] == "node"
    shown = replica.node_json(node)
    assert shown is not None and shown["vendors"]["MLU"]["source"] == "node"
    assert shown["vendors"]["MLU"]["handshake"]["annotation"] is None
    world.advance(WINDOW * 2)  # the stamp on the node expires: the capacity path does not care
    assert len(_mlu(replica, node)) == 2
    world.settle()
    assert CountingCluster.of(replica).calls["patch_node_annotations"] == stamps, (
        "nothing written on the capacity path"
    )


def _mlu(replica: Scheduler, node: str) -> list[str]:
    entry = replica.cache.vendor(node, "MLU")
    return [] if entry is None else [d.id for d in entry.devices]


def gcu_cards(node: NodeView) -> list[DeviceInfo]:
    """HAMi's Enflame GCU: one device per unit of capacity."""
    return [
        DeviceInfo(
            id=f"{node.name}-GCU-{i}", index=i, count=1, devmem=100, devcore=100, type="GCU", health=True
        )
        for i in range(node.capacity.get("acme.example/gcu", 0))
    ]


def test_a_vendor_alive_while_its_capacity_is_above_0_leaves_without_a_write(world: World) -> None:
    """The ``capacity`` rule (HAMi's GCU and MetaX GPU): capacity 0 is death, and a dead vendor without a
    handshake is dropped from the cache with nothing written (no stamp, no delete, no marker)."""
    spec = VendorSpec(
        name="gcu",
        vendor_key="GCU",
        count_resource="acme.example/gcu",
        from_node=FromNode(gcu_cards, capacity="acme.example/gcu", liveness="capacity"),
    )
    (driver,) = DriverManager().register(Describes(spec), "gcu")
    node = world.node("gcu", capacity={"acme.example/gcu": "2"})
    replica = world.scheduler(rules=[driver.rules()])
    world.run_until("registered", lambda: len(_gcu(replica, node)) == 2)
    world.admin.patch_node_status(node, {}, capacity={"acme.example/gcu": "0"})
    world.run_until("dead", lambda: replica.cache.vendor(node, "GCU") is None)
    world.advance(WINDOW * 2)
    assert replica.cache.vendor(node, "GCU") is None
    world.admin.patch_node_status(node, {}, capacity={"acme.example/gcu": "1"})
    world.run_until("back", lambda: len(_gcu(replica, node)) == 1)
    world.settle()
    assert CountingCluster.of(replica).calls["patch_node_annotations"] == 0, CountingCluster.of(replica).calls
    assert world.annotations(node) == {}


def _gcu(replica: Scheduler, node: str) -> list[str]:
    entry = replica.cache.vendor(node, "GCU")
    return [] if entry is None else [d.id for d in entry.devices]
