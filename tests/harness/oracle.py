"""HAMi's own code as Python objects (the Go oracles, tests/oracle/main.go and tests/oracle/nodes/main.go),
and the fixtures ``hami_oracle`` and ``hami_node_oracle``.

The oracle is a long-running process built from HAMi v2.10.0's unmodified source; it speaks JSON Lines:
one request per line on its stdin, one response per line on its stdout. Values travel base64-encoded
(``value_b64``) so their exact UTF-8 bytes reach Go; a Python string that is not valid Unicode (a lone
surrogate) cannot be an annotation value and is refused here. Build the binary with
``bash scripts/build-oracle.sh``, which also says where it is (``--print-path``); ``HAMI_ORACLE_BIN``
overrides that.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import pytest

from hami_core.protocol.model import DeviceInfo, MigProfile

__all__ = [
    "BUILD_SCRIPT",
    "HealthResult",
    "NodeOracle",
    "NodeResult",
    "Oracle",
    "OracleError",
    "OracleResult",
    "VendorAnswer",
    "deep_recursion",
    "device_payload",
    "hami_node_oracle",
    "hami_oracle",
    "node_oracle_binary",
    "oracle_binary",
]

BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build-oracle.sh"
BUILD_HINT = "build it with: bash scripts/build-oracle.sh"


class OracleError(RuntimeError):
    """The oracle process misbehaved (died, refused a request, answered garbage)."""


@attrs.frozen
class OracleResult:
    """One answer: ``ok`` with ``devices`` (decode; ``None`` is Go's nil list), ``pair_scores`` (each
    ``{"uuid", "score"}``; ``None`` a nil list or map) or ``value`` (encode), or not ``ok`` with Go's
    ``error`` text or a recovered ``panic``."""

    ok: bool
    devices: list[dict[str, Any]] | None = None
    pair_scores: list[dict[str, Any]] | None = None
    value: str | None = None
    error: str | None = None
    panic: str | None = None

    @property
    def rejected(self) -> bool:
        """HAMi refuses the input: a returned error or a crash."""
        return not self.ok


@attrs.frozen
class HealthResult:
    """What HAMi's ``device.CheckHealth`` answered for one Node, and what it did to it."""

    #: CheckHealth's first result: the vendor's devices count as healthy.
    healthy: bool
    #: CheckHealth's second result: the handshake was (to be) stamped anew.
    need_update: bool
    #: The handshake annotation on the (fake) API server's Node afterwards; ``None``: absent.
    handshake_after: str | None
    #: The verbs HAMi sent to the API server, in order (``get``, ``patch``).
    actions: tuple[str, ...]
    #: The oracle's clock just before and just after the call (aware, the oracle's zone).
    now_before: datetime
    now_after: datetime
    #: The oracle's ``time.Local`` (HAMi reads and writes stamps in it).
    zone: str


_GO_FRACTION = re.compile(r"(\.\d{6})\d+")


def _go_time(text: str) -> datetime:
    """A Go ``time.RFC3339Nano`` text as an aware datetime (nanoseconds cut to microseconds)."""
    return datetime.fromisoformat(_GO_FRACTION.sub(r"\1", text).replace("Z", "+00:00"))


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


def oracle_binary() -> Path:
    """Where the built oracle is; raises ``FileNotFoundError`` saying why not and how to build it."""
    override = os.environ.get("HAMI_ORACLE_BIN")
    if override:
        path = Path(override)
        if not os.access(path, os.X_OK):
            raise FileNotFoundError(f"HAMI_ORACLE_BIN={override} is not an executable file")
        return path
    found = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--print-path"], capture_output=True, text=True, check=False
    )
    if found.returncode != 0:
        raise FileNotFoundError(" ".join(found.stderr.split()) or f"{BUILD_SCRIPT} --print-path failed")
    path = Path(found.stdout.strip())
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

    def __init__(self, binary: Path, env: Mapping[str, str] | None = None) -> None:
        self.binary = binary
        # HAMi logs through klog to stderr; a file never fills up and blocks it the way a pipe would.
        self._stderr_file = tempfile.TemporaryFile()  # noqa: SIM115  (closed by close())
        self._proc = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr_file,
            env={**os.environ, "GOTRACEBACK": "single", **(env or {})},
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
            ok=bool(raw["ok"]),
            devices=raw.get("devices"),
            pair_scores=raw.get("pair_scores"),
            value=value,
            error=raw.get("error"),
            panic=raw.get("panic"),
        )

    def _decode(self, op: str, value: str | bytes) -> OracleResult:
        try:
            raw = value if isinstance(value, bytes) else value.encode("utf-8")
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

    def decode_pair_scores(self, value: str | bytes) -> OracleResult:
        """HAMi's NVIDIA pair-score decoder (``device.DecodePairScores``) on ``value`` (``bytes``: sent as
        they are, invalid UTF-8 included)."""
        return self._decode("decode_pair_scores", value)

    def encode_legacy(self, devices: Sequence[DeviceInfo | None]) -> OracleResult:
        """HAMi's legacy colon encoder (``device.EncodeNodeDevices``)."""
        return self._encode("encode_legacy", devices)

    def encode_json(self, devices: Sequence[DeviceInfo | None]) -> OracleResult:
        """HAMi's JSON encoder (``device.MarshalNodeDevices``)."""
        return self._encode("encode_json", devices)

    def check_health(
        self,
        handshake: str | None,
        *,
        allocatable: str | None = None,
        vendor: str = "NVIDIA",
        handshake_key: str = "hami.io/node-handshake",
        resource: str = "nvidia.com/gpu",
    ) -> HealthResult:
        """HAMi's ``device.CheckHealth(vendor, resource, node)`` on a Node whose handshake annotation
        is ``handshake`` (``None``: absent) and whose allocatable count is ``allocatable`` (a quantity;
        ``None``: absent), with HAMi's client pointed at a fake clientset holding that Node."""
        raw = self.request(
            {
                "op": "check_health",
                "vendor": vendor,
                "handshake_key": handshake_key,
                "handshake": handshake,
                "resource": resource,
                "allocatable": allocatable,
            }
        )
        if not raw.get("ok"):
            raise OracleError(f"check_health failed: {raw}")
        health = raw["health"]
        return HealthResult(
            healthy=health["healthy"],
            need_update=health["need_update"],
            handshake_after=health["handshake_after"],
            actions=tuple(health["actions"]),
            now_before=_go_time(health["now_before"]),
            now_after=_go_time(health["now_after"]),
            zone=health["zone"],
        )

    def bench(
        self,
        function: str,
        *,
        value: str | None = None,
        devices: Sequence[DeviceInfo] | None = None,
        min_seconds: float,
        repeat: int,
        clock: str = "wall",
    ) -> list[float]:
        """Nanoseconds per call of one of HAMi's codec functions (``decode_legacy``, ``decode_json``,
        ``encode_legacy``, ``encode_json``), timed inside the Go process: ``repeat`` runs of an
        iteration count that takes at least ``min_seconds``, on the ``wall`` clock or in ``cpu`` time
        (the process's user and system time, all threads)."""
        message: dict[str, Any] = {
            "op": "bench",
            "function": function,
            "min_seconds": min_seconds,
            "repeat": repeat,
            "clock": clock,
        }
        if value is not None:
            message["value_b64"] = base64.b64encode(value.encode("utf-8")).decode("ascii")
        if devices is not None:
            message["devices"] = [device_payload(d) for d in devices]
        raw = self.request(message)
        if not raw.get("ok"):
            raise OracleError(f"bench {function} failed: {raw}")
        return [float(ns) for ns in raw["bench"]["ns_per_op"]]

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
        if proc.stdout is not None:
            proc.stdout.close()
        self._stderr_file.close()

    def _stderr(self) -> str:
        if self._proc.poll() is None:
            return ""
        self._stderr_file.seek(0)
        text = self._stderr_file.read().decode("utf-8", "replace").strip()
        return f"; its stderr: {text[-2000:]}" if text else ""


def node_oracle_binary() -> Path:
    """Where the built Node oracle is (beside the codec oracle, one build); raises ``FileNotFoundError``
    saying why not and how to build it."""
    override = os.environ.get("HAMI_NODE_ORACLE_BIN")
    if override:
        path = Path(override)
        if not os.access(path, os.X_OK):
            raise FileNotFoundError(f"HAMI_NODE_ORACLE_BIN={override} is not an executable file")
        return path
    path = oracle_binary().with_name("hami-node-oracle")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"the Go Node oracle is not built for the current sources ({path}); {BUILD_HINT}"
        )
    return path


@attrs.frozen
class VendorAnswer:
    """What HAMi's scheduler got from one vendor for one Node: ``GetNodeDevices`` then ``CheckHealth``."""

    #: The devices GetNodeDevices returned (``None``: Go's nil list), every key written, plus
    #: ``pair_score`` (``{"uuid", "score"}``, HAMi's DevicePairScore; empty uuid when none matched).
    devices: list[dict[str, Any]] | None
    #: GetNodeDevices' error text.
    error: str | None
    #: A recovered GetNodeDevices panic (HAMi's scheduler would crash); CheckHealth was not called then.
    panic: str | None
    healthy: bool
    need_update: bool
    health_panic: str | None
    #: ``util.HandshakeAnnos[key]`` after set-up: the vendor's handshake annotation, ``None`` without one.
    handshake_key: str | None
    #: The verbs this vendor's calls sent to the (fake) API server, in order (``get``, ``patch``).
    actions: tuple[str, ...]
    #: The handshake annotation on the fake API server's Node after every vendor ran.
    handshake_after: str | None

    @property
    def crashed(self) -> bool:
        return self.panic is not None or self.health_panic is not None

    @property
    def stamped(self) -> bool:
        """HAMi wrote the handshake (the generic CheckHealth's GET + PATCH)."""
        return "patch" in self.actions

    @property
    def kept(self) -> bool:
        """HAMi's register loop caches the vendor on this Node: healthy, no error, at least one device.
        (``need_update`` only says whether that pass refreshes an entry a running scheduler already has.)"""
        return not self.crashed and self.healthy and self.error is None and bool(self.devices)


@attrs.frozen
class NodeResult:
    node: str
    #: The oracle's clock around this Node's calls (aware; HAMi judges stamps against it).
    now_before: datetime
    now_after: datetime
    vendors: Mapping[str, VendorAnswer]


class NodeOracle(Oracle):
    """The Node oracle: HAMi's devices set up from a device config as its scheduler does, every vendor's
    ``GetNodeDevices`` and ``CheckHealth`` called on whole Nodes (``tests/oracle/nodes/main.go``)."""

    def register(
        self,
        config: str,
        nodes: Sequence[Mapping[str, Any]],
        *,
        enable_ascend: bool = True,
        enable_iluvatar: bool = True,
        fresh: bool = True,
    ) -> tuple[tuple[str, ...], list[NodeResult]]:
        """Every vendor key HAMi registered from ``config`` (device-config YAML text, with
        ``--enable-ascend`` / ``--enable-iluvatar`` as given), and per Node (``v1.Node`` JSON objects)
        what each vendor answered. ``fresh``: a new device set per Node (no state carried from one Node to
        the next); otherwise one device set for the whole list, in order, as one HAMi process."""
        raw = self.request(
            {
                "op": "nodes",
                "config": config,
                "enable_ascend": enable_ascend,
                "enable_iluvatar": enable_iluvatar,
                "fresh": fresh,
                "nodes": list(nodes),
            }
        )
        if not raw.get("ok"):
            raise OracleError(f"HAMi refused the device config: {raw.get('init_error')}")
        results = [
            NodeResult(
                node=r["node"],
                now_before=_go_time(r["now_before"]),
                now_after=_go_time(r["now_after"]),
                vendors={
                    key: VendorAnswer(
                        devices=v["devices"],
                        error=v["error"],
                        panic=v["panic"],
                        healthy=v["healthy"],
                        need_update=v["need_update"],
                        health_panic=v["health_panic"],
                        handshake_key=v["handshake_key"],
                        actions=tuple(v["actions"]),
                        handshake_after=v["handshake_after"],
                    )
                    for key, v in r["vendors"].items()
                },
            )
            for r in raw.get("results") or []
        ]
        return tuple(raw.get("keys") or ()), results


@pytest.fixture(scope="session")
def hami_node_oracle() -> Iterator[NodeOracle]:
    """The Node oracle, started once for the session; a missing build fails the test with how to build it."""
    try:
        binary: Path | None = node_oracle_binary()
        problem = ""
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        binary, problem = None, str(exc)
    if binary is None:
        pytest.fail(f"Go Node oracle unavailable: {problem}", pytrace=False)
    oracle = NodeOracle(binary)
    try:
        yield oracle
    finally:
        oracle.close()


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
