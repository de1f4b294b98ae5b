"""Log records: fields (node, vendor, reason, term) as keys in JSON and once, readably, in text; nothing but
JSON on stderr in JSON mode, library warnings included; levels in any case."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hami_core.cli.logs import JsonFormatter, TextFormatter
from hami_core.cli.options import LOG_LEVEL

HAMI = str(Path(sys.executable).with_name("hami"))


def record(msg: str, *args: object, **fields: object) -> logging.LogRecord:
    rec = logging.LogRecord("hami_core.scheduler.daemon", logging.INFO, __file__, 1, msg, args, None)
    for name, value in fields.items():
        setattr(rec, name, value)
    return rec


def test_text_names_the_fields_once_before_the_message() -> None:
    line = TextFormatter().format(
        record("registered (liveness: %s)", "report", node="gpu-1", vendor="NVIDIA", reason="registered")
    )
    assert line.endswith(
        " INFO    hami_core.scheduler.daemon: node=gpu-1 vendor=NVIDIA reason=registered: "
        "registered (liveness: report)"
    )
    assert line.count("gpu-1") == 1
    assert TextFormatter().format(record("became leader", term=3)).endswith(": term=3: became leader")
    assert TextFormatter().format(record("plain")).endswith("hami_core.scheduler.daemon: plain")
    # A value that would not read back as one key=value is quoted.
    quoted = TextFormatter().format(record("x", reason="two words", node='a"b'))
    assert 'node="a\\"b" reason="two words": x' in quoted


def test_json_has_each_field_as_its_own_key() -> None:
    entry = json.loads(
        JsonFormatter().format(
            record("cleaned up: stamp %ds old", 75, node="gpu-1", vendor="NVIDIA", reason="expired", term=2)
        )
    )
    assert entry["msg"] == "cleaned up: stamp 75s old"
    fields = (entry["node"], entry["vendor"], entry["reason"], entry["term"])
    assert fields == ("gpu-1", "NVIDIA", "expired", 2)
    assert entry["level"] == "info" and entry["logger"] == "hami_core.scheduler.daemon"
    assert "node" not in json.loads(JsonFormatter().format(record("no fields")))


@pytest.mark.parametrize("given", ["DEBUG", "Info", "warning", "ERROR"])
def test_log_levels_in_any_case(given: str) -> None:
    assert LOG_LEVEL.convert(given, None, None) == given.lower()


def _json_lines(stderr: str) -> list[dict[str, Any]]:
    lines = stderr.splitlines()
    assert lines, "nothing on stderr"
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a line on stderr is not JSON: {line!r}\n--- stderr:\n{stderr}")
    return entries


def test_warnings_and_escaped_exceptions_are_json_records_too() -> None:
    code = (
        "import threading, warnings, logging\n"
        "from hami_core.cli.logs import configure_logging\n"
        "configure_logging('json', 'INFO')\n"
        "warnings.warn('something is deprecated', DeprecationWarning)\n"
        "warnings.warn('a library\\nwarning on two lines')\n"
        "logging.getLogger('urllib3.connectionpool').warning('Connection pool is full')\n"
        "logging.getLogger('client').warning('from the kubernetes client')\n"
        "t = threading.Thread(target=lambda: 1 / 0, name='worker'); t.start(); t.join()\n"
        "raise RuntimeError('boom')\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    entries = _json_lines(result.stderr)
    warned = [e["msg"] for e in entries if e["logger"] == "py.warnings"]
    assert any(m.startswith("DeprecationWarning: something is deprecated (") for m in warned)
    assert any(m.startswith("UserWarning: a library warning on two lines (") for m in warned)
    assert {"urllib3.connectionpool", "client"} <= {e["logger"] for e in entries}
    thread = next(e for e in entries if e["msg"] == "unexpected error in thread worker")
    assert "ZeroDivisionError" in thread["exc"] and thread["level"] == "critical"
    assert any(e["msg"] == "unexpected error" and "RuntimeError: boom" in e["exc"] for e in entries)


def test_a_real_urllib3_warning_is_json_in_json_mode(apiserver: Any, tmp_path: Path) -> None:
    """A reporter reaching the real API server over HTTPS without verifying it: urllib3 warns
    (InsecureRequestWarning) on every request; with --log-format json, stderr is nothing but JSON."""
    from harness.fixtures import unique_node_name

    node = unique_node_name("logs")
    status, _ = apiserver.request("POST", "/api/v1/nodes", {"metadata": {"name": node}})
    assert status == 201
    config = json.loads(Path(apiserver.kubeconfig(apiserver.reporter(node))).read_text())
    cluster = config["clusters"][0]["cluster"]
    del cluster["certificate-authority"]
    cluster["insecure-skip-tls-verify"] = True
    insecure = tmp_path / "insecure.kubeconfig"
    insecure.write_text(json.dumps(config))
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps({"mlu": [{"id": "MLU-0", "count": 10, "devmem": 23308, "health": True}]}))
    env = {**os.environ, "HAMI_FAKE_DEVICES": str(devices)}
    env.pop("PYTHONWARNINGS", None)  # as in production: urllib3 shows its own warnings once per place
    try:
        result = subprocess.run(
            [
                HAMI,
                "reporter",
                "run",
                "--once",
                "--node-name",
                node,
                "--vendors",
                "mlu",
                "--kubeconfig",
                str(insecure),
                "--log-format",
                "json",
                "--log-level",
                "DEBUG",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")
    entries = _json_lines(result.stderr)
    assert result.returncode == 0, result.stderr
    assert any(
        e["logger"] == "py.warnings" and e["msg"].startswith("InsecureRequestWarning: ") for e in entries
    ), result.stderr
    assert any(e.get("node") == node and e.get("vendor") == "MLU" for e in entries), result.stderr


def test_an_error_that_ends_a_command_is_json_in_json_mode(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            HAMI,
            "reporter",
            "run",
            "--node-name",
            "n",
            "--log-format",
            "json",
            "--kubeconfig",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    (entry,) = _json_lines(result.stderr)
    assert entry["level"] == "error" and "kubeconfig" in entry["msg"]
