"""``hami reporter run`` as a real process against the real kube-apiserver, as the node's own identity,
with the in-tree drivers reading their devices from the ``HAMI_FAKE_DEVICES`` file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.scheduler_world import World, wait_for

from hami_core.protocol.codecs import decode_any

HAMI = str(Path(sys.executable).with_name("hami"))
DEVICES = {"mlu": [{"id": "MLU-0", "count": 10, "devmem": 23308, "type": "MLU-370", "health": True}],
           "nvidia": [{"id": "GPU-0", "count": 10, "devmem": 24576, "devcore": 100, "health": True}]}


def _env(world: World, node: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    server: Any = world.server  # type: ignore[attr-defined]
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps(DEVICES))
    return {**os.environ, "HAMI_FAKE_DEVICES": str(devices), "NODE_NAME": node,
            "HAMI_KUBECONFIG": server.kubeconfig(server.reporter(node)), **extra}


def test_once_publishes_and_exits_0(real_world: World, tmp_path: Path) -> None:
    node = real_world.node("cli-rep")
    result = subprocess.run([HAMI, "reporter", "run", "--once", "--vendors", "mlu,nvidia,dcu"],
                            capture_output=True, text=True, timeout=60, env=_env(real_world, node, tmp_path))
    assert result.returncode == 0, result.stderr
    annotations = real_world.annotations(node)
    assert [d.id for d in decode_any(annotations["hami.io/node-mlu-register"])] == ["MLU-0"]
    assert [d.id for d in decode_any(annotations["hami.io/node-nvidia-register"])] == ["GPU-0"]
    assert annotations["hami.io/node-handshake-mlu"].startswith("Reported_")
    assert "hami.io/node-dcu-register" not in annotations  # no entry in the file: no source, not "none"


def test_once_on_another_nodes_name_is_refused_and_exits_1(real_world: World, tmp_path: Path) -> None:
    mine, other = real_world.node("cli-rep-mine"), real_world.node("cli-rep-other")
    env = _env(real_world, mine, tmp_path, NODE_NAME=other)
    result = subprocess.run([HAMI, "reporter", "run", "--once", "--vendors", "mlu"], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 1
    assert f"error: cannot patch node {other}:" in result.stderr
    assert "hami.io/node-mlu-register" not in real_world.annotations(other)


def test_sigterm_stops_the_loop_and_exits_0(real_world: World, tmp_path: Path) -> None:
    node = real_world.node("cli-rep-loop")
    proc = subprocess.Popen([HAMI, "reporter", "run", "--vendors", "mlu", "--interval", "0.5"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env(real_world, node, tmp_path))
    try:
        heartbeat = "hami.io/node-handshake-mlu"
        first = wait_for("a heartbeat", lambda: real_world.annotations(node).get(heartbeat), timeout=30)
        wait_for("the next heartbeat",
                 lambda: real_world.annotations(node).get(heartbeat) not in (None, first), timeout=10)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
