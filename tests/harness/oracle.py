"""The Go conformance oracle (tests/oracle) as a Python object and a session fixture ``hami_oracle``.

The oracle is a long-running process speaking JSON Lines: one request per line on its stdin, one response
per line on its stdout. Values travel base64-encoded (``value_b64``) so their exact UTF-8 bytes reach Go;
a Python string that is not valid Unicode (a lone surrogate) cannot be an annotation value and is
refused here. Build the binary with ``bash scripts/build-oracle.sh``; ``HAMI_ORACLE_BIN`` overrides where
it is looked for.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from hami_core.protocol.model import DeviceInfo, MigProfile

__all__ = [
    "ORACLE_SOURCES",
    "Oracle",
    "OracleError",
    "OracleResult",
    "deep_recursion",
    "device_payload",
    "hami_oracle",
    "oracle_binary",
    "oracle_key",
]

ORACLE_SOURCES = Path(__file__).resolve().parents[1] / "oracle"
BUILD_HINT = "build it with: bash scripts/build-oracle.sh"


class OracleError(RuntimeError):
    """The oracle process misbehaved (died, refused a request, answered garbage)."""


@attrs.frozen
class OracleResult:
    """One answer: ``ok`` with ``devices`` (decode; ``None`` is Go's nil list) or ``value`` (encode), or
    not ``ok`` with Go's ``error`` text or a recovered ``panic``."""

    ok: bool
    devices: list[dict[str, Any]] | None = None
    value: str | None = None
    error: str | None = None
    panic: str | None = None

    @property
    def rejected(self) -> bool:
        """HAMi refuses the input: a returned error or a crash."""
        return not self.ok


#: Go nests JSON up to 10000 levels; parsing or comparing such a value in Python needs this much room.
_DEEP_LIMIT = 25_000


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Room to parse and compare values nested as deeply as Go allows (10000 levels)."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, _DEEP_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def oracle_key(sources: Path = ORACLE_SOURCES, go: str = "go") -> str:
    """The cache key scripts/build-oracle.sh uses: the sources' names and bytes, then the toolchain."""
    stream = b""
    for name in ("go.mod", "go.sum", "main.go"):
        stream += name.encode() + b"\n"
        path = sources / name
        if path.is_file():
            stream += path.read_bytes()
    env = {**os.environ, "GOTOOLCHAIN": "local"}
    stream += subprocess.run(
        [go, "env", "GOVERSION", "GOOS", "GOARCH"], check=True, capture_output=True, env=env
    ).stdout
    return hashlib.sha256(stream.rstrip(b"\n")).hexdigest()[:16]


def oracle_binary() -> Path:
    """Where the built oracle is; raises ``FileNotFoundError`` saying how to build it."""
    override = os.environ.get("HAMI_ORACLE_BIN")
    if override:
        path = Path(override)
        if not os.access(path, os.X_OK):
            raise FileNotFoundError(f"HAMI_ORACLE_BIN={override} is not an executable file")
        return path
    go = shutil.which("go")
    if go is None:
        raise FileNotFoundError(f"the Go oracle needs Go on PATH to locate its build; {BUILD_HINT}")
    home = Path(os.environ.get("HOME", "/tmp"))
    cache = Path(os.environ.get("HAMI_ORACLE_CACHE") or home / ".cache/hami-core/oracle")
    path = cache / oracle_key(go=go) / "hami-oracle"
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"the Go oracle is not built for the current sources ({path}); {BUILD_HINT}")
    return path


def _placements(profile: MigProfile) -> list[dict[str, int]] | None:
    if profile.placements is None:
        return None
    return [{"start": p.start, "size": p.size} for p in profile.placements]


def device_payload(device: DeviceInfo | None) -> dict[str, Any] | None:
    """A device as the oracle's encode requests take it (protocol JSON keys), built from the model's fields
    directly so that the codec under test plays no part in what the oracle is asked."""
    if device is None:
        return None
    return {
        "id": device.id,
        "index": device.index,
        "count": device.count,
        "devmem": device.devmem,
        "devcore": device.devcore,
        "type": device.type,
        "numa": device.numa,
        "mode": device.mode,
        "health": device.health,
        "migProfiles": [
            {
                "name": p.name,
                "memoryMB": p.memory_mb,
                "core": p.core,
                "sliceCount": p.slice_count,
                "placements": _placements(p),
            }
            for p in device.mig_profiles
        ],
        "devicevendor": device.devicevendor,
        "custominfo": None if device.custominfo is None else dict(device.custominfo),
    }


class Oracle:
    """A running oracle process. Not thread-safe: one request at a time."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self._proc = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "GOTRACEBACK": "single"},
        )

    def request(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request object and return the parsed response object."""
        proc = self._proc
        if proc.stdin is None or proc.stdout is None or proc.poll() is not None:
            raise OracleError(f"the oracle is not running (exit code {proc.returncode}){self._stderr()}")
        line = json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n"
        try:
            proc.stdin.write(line.encode("ascii"))
            proc.stdin.flush()
        except BrokenPipeError as exc:
            raise OracleError(f"the oracle died before taking a request{self._stderr()}") from exc
        answer = proc.stdout.readline()
        if not answer:
            proc.wait(timeout=5)
            raise OracleError(
                f"the oracle died (exit code {proc.returncode}) on {line[:200]!r}{self._stderr()}"
            )
        try:
            with deep_recursion():
                parsed = json.loads(answer)
        except json.JSONDecodeError as exc:
            raise OracleError(f"the oracle answered non-JSON {answer[:200]!r}: {exc}") from exc
        if not isinstance(parsed, dict):
            raise OracleError(f"the oracle answered {answer[:200]!r}, not an object")
        if "request_error" in parsed:
            raise OracleError(f"the oracle refused request {line[:200]!r}: {parsed['request_error']}")
        return parsed

    def _result(self, message: Mapping[str, Any]) -> OracleResult:
        raw = self.request(message)
        value = raw.get("value")
        if "value_b64" in raw:
            value = base64.b64decode(raw["value_b64"]).decode("utf-8", "surrogateescape")
        return OracleResult(
            ok=bool(raw["ok"]), devices=raw.get("devices"), value=value, error=raw.get("error"),
            panic=raw.get("panic"),
        )

    def _decode(self, op: str, value: str) -> OracleResult:
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{op}: the value is not valid Unicode; no annotation holds it: {exc}") from exc
        return self._result({"op": op, "value_b64": base64.b64encode(raw).decode("ascii")})

    def _encode(self, op: str, devices: Sequence[DeviceInfo | None]) -> OracleResult:
        return self._result({"op": op, "devices": [device_payload(d) for d in devices]})

    def decode_legacy(self, value: str) -> OracleResult:
        """HAMi's legacy colon decoder (``device.DecodeNodeDevices``) on ``value``."""
        return self._decode("decode_legacy", value)

    def decode_json(self, value: str) -> OracleResult:
        """HAMi's JSON decoder (``device.UnMarshalNodeDevices``) on ``value``, each element dereferenced as
        every HAMi caller does (so ``[null]`` is a panic)."""
        return self._decode("decode_json", value)

    def encode_legacy(self, devices: Sequence[DeviceInfo | None]) -> OracleResult:
        """HAMi's legacy colon encoder (``device.EncodeNodeDevices``)."""
        return self._encode("encode_legacy", devices)

    def encode_json(self, devices: Sequence[DeviceInfo | None]) -> OracleResult:
        """HAMi's JSON encoder (``device.MarshalNodeDevices``)."""
        return self._encode("encode_json", devices)

    def close(self) -> None:
        """Close stdin, let the process finish, kill it if it does not within 5 s."""
        proc = self._proc
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    def _stderr(self) -> str:
        proc = self._proc
        if proc.stderr is None or proc.poll() is None:
            return ""
        text = proc.stderr.read().decode("utf-8", "replace").strip()
        return f"; its stderr: {text[-2000:]}" if text else ""


@pytest.fixture(scope="session")
def hami_oracle() -> Iterator[Oracle]:
    """The Go oracle, started once for the session; a missing build fails the test with how to build it."""
    try:
        binary: Path | None = oracle_binary()
        problem = ""
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        binary, problem = None, str(exc)
    if binary is None:
        pytest.fail(f"Go conformance oracle unavailable: {problem}", pytrace=False)
    oracle = Oracle(binary)
    try:
        yield oracle
    finally:
        oracle.close()
