"""``hami scheduler run`` as a real process against the real kube-apiserver, with the scheduler's RBAC."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from harness.poll import wait_for
from harness.scheduler_world import World

from hami_core.kube.port import NotFound
from hami_core.scheduler.config import DEFAULT_LEASE_NAME

HAMI = str(Path(sys.executable).with_name("hami"))
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"


def test_sigterm_releases_the_lease_and_exits_0(real_world: World, tmp_path: Path) -> None:
    world = real_world
    node = world.node("cli", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "4"})
    log = tmp_path / "scheduler.log"
    env = {
        **os.environ,
        "HAMI_VENDORS": "dcu",
        "HAMI_LEASE_NAMESPACE": world.namespace,
        "HAMI_NODE_SELECTOR": f"hami-test={world.label['hami-test']}",
    }
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                HAMI,
                "scheduler",
                "run",
                "--kubeconfig",
                world.server.kubeconfig("hami-scheduler"),
                "--identity",
                "cli-replica",
                "--http-listen",
                "127.0.0.1:0",
                "--log-format",
                "json",
                "--handshake-window",
                "5",
                "--lease-duration",
                "30",
                "--renew-deadline",
                "20",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_for(
            "stamped",
            lambda: world.annotations(node).get("hami.io/node-handshake-dcu", "").startswith("Requesting_"),
            timeout=30,
        )
        lease = wait_for("lease held", lambda: _holder(world), timeout=10)
        assert lease == "cli-replica"
        port = int(
            wait_for(
                "http port", lambda: re.search(r"http://[\d.]+:(\d+)", log.read_text()), timeout=10
            ).group(1)
        )
        wait_for("ready", lambda: _status(port, "/readyz") == 200, timeout=20)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        # Released at once, not left to expire after 30 s.
        assert time.monotonic() - started < 10
        assert _holder(world) is None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert '"msg": "cache synced for term 1"' in text
    assert "released" in text


def _holder(world: World) -> str | None:
    try:
        holder: str | None = world.admin.get_lease(world.namespace, DEFAULT_LEASE_NAME).holder_identity
        return holder
    except NotFound:
        return None


def _status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return int(response.status)
    except OSError:
        return 0
