"""``hami doctor`` judges with the running scheduler's settings, read from its ``/status`` through the API
server's service proxy, with no port-forward; on the real API server.

The API server proxies only to endpoints that are Pods (an EndpointSlice endpoint whose targetRef is a Pod
with that IP) and never to a loopback address (it refuses them in Endpoints). So the endpoint is a test
host in a network namespace the test makes (``harness.netns``; never an address of the machine): a
forwarder there, on the host's address, passes each connection on to the scheduler listening on the root
end of the host's veth. A Pod object (no kubelet runs it) carries the host's address as its IP, and an
EndpointSlice made by hand points the Service at it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from harness.netns import NetnsHost, netns_host
from harness.scheduler_world import World, real_world

__all__ = ["netns_host", "real_world"]  # the fixtures

from hami_core.scheduler.daemon import Scheduler

HAMI = str(Path(sys.executable).with_name("hami"))
DCU_REG = "hami.io/node-dcu-register"
DCU_HS = "hami.io/node-handshake-dcu"
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"


def created(world: World, path: str, body: dict[str, Any]) -> None:
    status, answer = world.server.request("POST", path, body)
    assert status == 201, answer


def expose(world: World, replica: Scheduler, host: NetnsHost, name: str = "hami-core-scheduler") -> None:
    """A Service ``name`` (port ``http``) in the world's namespace whose one endpoint is ``replica``, reached
    through ``host`` (the replica listens on ``host.host_address``)."""
    assert replica.http_address is not None and replica.http_address[0] == host.host_address
    port = host.forward(replica.http_address[1])
    address = host.address
    ns = world.namespace
    pod = f"scheduler-{uuid.uuid4().hex[:6]}"
    containers = [{"name": "scheduler", "image": "hami-core"}]
    created(
        world,
        f"/api/v1/namespaces/{ns}/pods",
        {"metadata": {"name": pod}, "spec": {"containers": containers}},
    )
    ip = {"status": {"podIP": address, "podIPs": [{"ip": address}]}}
    status, answer = world.server.request(
        "PATCH", f"/api/v1/namespaces/{ns}/pods/{pod}/status", ip, content_type="application/merge-patch+json"
    )
    assert status == 200, answer
    ports = [{"name": "http", "port": 9396, "targetPort": port}]
    created(
        world, f"/api/v1/namespaces/{ns}/services", {"metadata": {"name": name}, "spec": {"ports": ports}}
    )
    created(world, f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", {
        "metadata": {"name": f"{name}-1", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True},
                       "targetRef": {"kind": "Pod", "namespace": ns, "name": pod}}],
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
    })  # fmt: skip


def doctor(world: World, node: str, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAMI_", "KUBECONFIG"))}
    kubeconfig = world.server.kubeconfig("admin")
    done = subprocess.run(
        [HAMI, "doctor", "node", node, "--kubeconfig", kubeconfig, "--vendors", "dcu", "--json",
         "--at", world.clock.now().isoformat(), *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    body: dict[str, Any] = json.loads(done.stdout)
    return body


def test_the_doctor_reads_the_schedulers_settings_through_the_service_proxy(
    real_world: World, netns_host: NetnsHost
) -> None:
    world = real_world
    lease = f"doctor-{uuid.uuid4().hex[:8]}"  # unique: the doctor finds it by name in any namespace
    node = world.node("proxied", {DCU_REG: DCU})
    replica = world.scheduler("dcu", identity="proxied-0", lease_name=lease, handshake_window=90.0,
                              http_host=netns_host.host_address)  # fmt: skip
    world.run_until("stamped", lambda: DCU_HS in world.annotations(node))
    expose(world, replica, netns_host)
    world.advance(75)  # the stamp is 75 s old: fresh in the scheduler's 90 s window, expired in 60 s

    body = doctor(world, node, "--lease-name", lease)
    settings = body["settings"]
    assert settings["from_scheduler"] is True, settings
    assert (
        settings["source"] == f"service {world.namespace}/hami-core-scheduler:http (through the API server)"
    )
    assert settings["window_seconds"] == 90.0
    assert settings["selector"] == f"hami-test={world.label['hami-test']}" == body["selector"]
    assert settings["lease"] == {"namespace": world.namespace, "name": lease}
    assert body["lease"]["namespace"] == world.namespace and body["lease"]["holder"] == "proxied-0"
    dcu = body["vendors"]["DCU"]
    assert (dcu["state"], dcu["handshake"]["standing"]) == ("registered", "fresh")
    assert body["scheduler"]["vendors"]["DCU"]["scheduler"]["state"] == "registered"  # compared, too

    mine = doctor(world, node, "--lease-name", lease, "--handshake-window", "60s")  # a flag given wins
    assert (
        mine["settings"]["window_seconds"] == 60.0
        and mine["vendors"]["DCU"]["handshake"]["standing"] == "expired"
    )

    elsewhere = doctor(
        world, node, "--lease-name", lease, "--scheduler-service", f"{world.namespace}/nosuch:http"
    )
    fallback = elsewhere["settings"]
    assert fallback["from_scheduler"] is False and fallback["window_seconds"] == 60.0
    assert 'no endpoints available for service "nosuch"' in fallback["error"]  # the API server's words
    assert elsewhere["scheduler"]["error"] is not None  # named, so compared: says why it could not be


def doctor_nodes(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAMI_", "KUBECONFIG"))}
    kubeconfig = world.server.kubeconfig("admin")
    return subprocess.run([HAMI, "doctor", "nodes", "--kubeconfig", kubeconfig, "--vendors", "dcu", *args],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip


def test_doctor_nodes_lists_the_fleet_with_the_schedulers_memory(
    real_world: World, netns_host: NetnsHost
) -> None:
    world = real_world
    lease = f"fleet-{uuid.uuid4().hex[:8]}"
    live = world.node("fleet-live", {DCU_REG: DCU}, {"hygon.com/dcunum": "1"})
    gone = world.node("fleet-gone", {DCU_REG: DCU})
    replica = world.scheduler("dcu", identity="fleet-0", lease_name=lease, http_host=netns_host.host_address)
    world.run_until("cleaned up", lambda: replica.registrar.memory(gone, "DCU").awaiting_sign_of_life)
    expose(world, replica, netns_host)

    done = doctor_nodes(world, "--lease-name", lease, "--json")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["settings"]["from_scheduler"] is True and body["scheduler"]["error"] is None
    # the doctor alone would stamp it again (no memory); the scheduler remembers the cleanup
    assert body["nodes"][gone] == {"DCU": {"state": "awaiting-sign-of-life", "source": "scheduler"}}
    assert body["nodes"][live] == {"DCU": {"state": "registered", "source": "scheduler"}}

    done = doctor_nodes(world, "--lease-name", lease, "--state", "awaiting-sign-of-life")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    service = f"service {world.namespace}/hami-core-scheduler:http (through the API server)"
    assert lines[0] == f"settings: the running scheduler's, read from {service}"
    mine = [line.split() for line in lines if line.startswith(("fleet-live", "fleet-gone"))]
    assert mine == [[gone, "DCU=awaiting-sign-of-life"]]
    assert lines[-1].endswith("shown); * judged by the doctor, not from the scheduler's memory")

    alone = doctor_nodes(
        world, "--lease-name", lease, "--scheduler-service", f"{world.namespace}/nosuch:http", "--json"
    )
    body = json.loads(alone.stdout)
    # without the scheduler's memory, the cleanup's marker on the Node says the vendor waits
    assert body["nodes"][gone] == {"DCU": {"state": "awaiting-sign-of-life", "source": "doctor"}}
    assert "nosuch" in body["scheduler"]["error"]
    bad = doctor_nodes(world, "--state", "sleeping")
    assert bad.returncode == 2 and "'sleeping' is not a vendor state" in bad.stderr
