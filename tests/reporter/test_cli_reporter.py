"""``hami reporter run`` as a real process against the real kube-apiserver, as the node's own identity,
with the in-tree drivers reading their devices from the ``HAMI_FAKE_DEVICES`` file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from harness.poll import wait_for
from harness.scheduler_world import World
from prometheus_client.parser import text_string_to_metric_families

from hami_core.protocol.codecs import decode_any

HAMI = str(Path(sys.executable).with_name("hami"))
DEVICES = {
    "mlu": [{"id": "MLU-0", "count": 10, "devmem": 23308, "type": "MLU-370", "health": True}],
    "nvidia": [{"id": "GPU-0", "count": 10, "devmem": 24576, "devcore": 100, "health": True}],
}


def _env(world: World, node: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    server = world.server
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps(DEVICES))
    return {
        **os.environ,
        "HAMI_FAKE_DEVICES": str(devices),
        "NODE_NAME": node,
        "HAMI_KUBECONFIG": server.kubeconfig(server.reporter(node)),
        **extra,
    }


def test_once_publishes_and_exits_0(real_world: World, tmp_path: Path) -> None:
    node = real_world.node("cli-rep")
    result = subprocess.run(
        [HAMI, "reporter", "run", "--once", "--vendors", "mlu,nvidia,dcu"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(real_world, node, tmp_path),
    )
    assert result.returncode == 0, result.stderr
    annotations = real_world.annotations(node)
    assert [d.id for d in decode_any(annotations["hami.io/node-mlu-register"])] == ["MLU-0"]
    assert [d.id for d in decode_any(annotations["hami.io/node-nvidia-register"])] == ["GPU-0"]
    assert annotations["hami.io/node-handshake-mlu"].startswith("Reported_")
    assert "hami.io/node-dcu-register" not in annotations  # no entry in the file: no source, not "none"


def test_once_on_another_nodes_name_is_refused_and_exits_1(real_world: World, tmp_path: Path) -> None:
    mine, other = real_world.node("cli-rep-mine"), real_world.node("cli-rep-other")
    env = _env(real_world, mine, tmp_path, NODE_NAME=other)
    result = subprocess.run(
        [HAMI, "reporter", "run", "--once", "--vendors", "mlu"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    assert f"error: cannot patch node {other}:" in result.stderr
    assert "refused by the admission policy 'hami-reporter-own-node'" in result.stderr
    assert "hami.io/node-mlu-register" not in real_world.annotations(other)


def test_sigterm_stops_the_loop_and_exits_0(real_world: World, tmp_path: Path) -> None:
    node = real_world.node("cli-rep-loop")
    proc = subprocess.Popen(
        [HAMI, "reporter", "run", "--vendors", "mlu", "--interval", "0.5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(real_world, node, tmp_path),
    )
    try:
        heartbeat = "hami.io/node-handshake-mlu"
        first = wait_for("a heartbeat", lambda: real_world.annotations(node).get(heartbeat), timeout=30)
        wait_for(
            "the next heartbeat",
            lambda: real_world.annotations(node).get(heartbeat) not in (None, first),
            timeout=10,
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_once_that_published_nothing_exits_1(real_world: World, tmp_path: Path) -> None:
    node = real_world.node("cli-rep-nothing")
    env = _env(real_world, node, tmp_path)
    env.pop("HAMI_FAKE_DEVICES")  # no driver has a device source on this node
    result = subprocess.run(
        [HAMI, "reporter", "run", "--once", "--vendors", "mlu,dcu"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert (
        lines[-1]
        == f"error: nothing published: no selected driver (mlu, dcu) has a device source on node {node}"
    )
    warned = [line for line in lines if "reason=no-device-source: no device source" in line]
    assert len(warned) == 2 and all(f"node={node} " in line for line in warned), lines
    assert not any(k.startswith("hami.io/") for k in real_world.annotations(node))


def test_the_loop_serves_health_and_metrics(real_world: World, tmp_path: Path) -> None:
    node = real_world.node("cli-rep-http")
    log = tmp_path / "reporter.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                HAMI,
                "reporter",
                "run",
                "--vendors",
                "mlu",
                "--http-listen",
                "127.0.0.1:0",
                "--log-format",
                "json",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(real_world, node, tmp_path),
        )
    try:
        port = wait_for(
            "listening",
            lambda: next(
                (
                    json.loads(line)["msg"].rsplit(":", 1)[1]
                    for line in log.read_text().splitlines()
                    if "serving /livez" in line
                ),
                None,
            ),
            timeout=30,
        )
        base = f"http://127.0.0.1:{port}"
        wait_for("ready", lambda: _get(f"{base}/readyz")[0] == 200, timeout=30)
        assert _get(f"{base}/livez") == (200, "ok\n")
        status, text = _get(f"{base}/metrics")
        values = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }
        assert status == 200 and values[("hami_reporter_published_devices", (("vendor", "MLU"),))] == 1
        assert values[("hami_reporter_passes_total", ())] >= 1
        assert values[("hami_reporter_last_success_timestamp_seconds", ())] > 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for line in log.read_text().splitlines():
        json.loads(line)  # nothing but JSON


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""
