"""``hami codec``: the command-line contract, through click's runner and as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hami_core.cli import main
from hami_core.cli.codec import OUTPUT_KEYS

HAMI = Path(sys.executable).with_name("hami")
LEGACY = (
    "GPU-0,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    "GPU-1,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,1,false:"
)
JSON_VALUE = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","mode":"hami-core",'
    '"health":true}]'
)


def run(args: list[str], stdin: bytes) -> tuple[int, bytes, bytes]:
    result = CliRunner().invoke(main, ["codec", *args], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout_bytes, result.stderr_bytes


# ---- decode -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [[], ["--format", "auto"], ["--format", "legacy"]])
def test_decode_prints_every_key_of_every_device(fmt: list[str]) -> None:
    code, out, err = run(["decode", *fmt], LEGACY.encode())
    assert (code, err) == (0, b"")
    devices = json.loads(out)
    assert [tuple(d) for d in devices] == [OUTPUT_KEYS, OUTPUT_KEYS]
    assert devices[1] == {
        "id": "GPU-1",
        "index": 0,
        "count": 10,
        "devmem": 32768,
        "devcore": 100,
        "type": "NVIDIA-Tesla V100-PCIE-32GB",
        "numa": 1,
        "mode": "hami-core",
        "health": False,
        "migProfiles": [],
        "custominfo": None,
    }


def test_decode_json_with_mig_profiles_and_custominfo() -> None:
    value = (
        '[{"id":"g","migProfiles":[{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,'
        '"placements":[{"start":6,"size":1}]},{"name":"2g"}],"custominfo":{"k":[1,"v"]}}]'
    )
    code, out, _ = run(["decode", "--format", "json"], value.encode())
    assert code == 0
    (device,) = json.loads(out)
    assert device["migProfiles"] == [
        {
            "name": "1g.5gb",
            "memoryMB": 4864,
            "core": 15,
            "sliceCount": 1,
            "placements": [{"start": 6, "size": 1}],
        },
        {"name": "2g", "memoryMB": 0, "core": 0, "sliceCount": 0, "placements": None},
    ]
    assert device["custominfo"] == {"k": [1.0, "v"]}


def test_decode_reads_stdin_byte_for_byte_but_one_trailing_newline() -> None:
    # "echo VALUE | hami codec decode" and a here-string add one newline: that one is not the value's
    code, out, _ = run(["decode", "--format", "legacy"], (LEGACY + "\n").encode())
    assert code == 0 and out == run(["decode", "--format", "legacy"], LEGACY.encode())[1]
    # only one: a second is part of the value, a malformed legacy segment, as in HAMi
    code, _, err = run(["decode", "--format", "legacy"], (LEGACY + "\n\n").encode())
    assert code == 1
    assert err.startswith(b"error: segment 3 ") and err.count(b"\n") == 1
    code, _, err = run(["decode", "--format", "legacy"], (LEGACY + "\r\n").encode())
    assert code == 1 and err.startswith(b"error: segment 3 ")
    # JSON allows surrounding whitespace.
    code, out, _ = run(["decode"], b"\n " + JSON_VALUE.encode() + b"\n")
    assert (code, json.loads(out)[0]["id"]) == (0, "GPU-0")


def test_decode_treats_invalid_utf8_as_go_does() -> None:
    code, out, _ = run(["decode"], b'[{"id":"a\xffb"}]')
    assert (code, json.loads(out)[0]["id"]) == (0, "a\ufffdb")
    code, out, _ = run(["decode"], b"\xff,1,1,1,T,0,true:")
    assert code == 0  # the legacy encoding keeps the id verbatim; JSON output escapes the odd byte
    assert json.loads(out)[0]["id"] == "\udcff"


@pytest.mark.parametrize(
    ("fmt", "value"), [("auto", b"nope"), ("json", LEGACY.encode()), ("legacy", b"[]"), ("auto", b"[null]")]
)
def test_decode_errors_are_one_stderr_line_and_exit_1(fmt: str, value: bytes) -> None:
    code, out, err = run(["decode", "--format", fmt], value)
    assert (code, out) == (1, b"")
    assert err.startswith(b"error: ") and err.endswith(b"\n") and err.count(b"\n") == 1


def test_decode_batch_gives_one_result_per_line_and_exits_0() -> None:
    lines = [json.dumps(LEGACY), json.dumps("::"), json.dumps("[]"), json.dumps("x"), "42", "not json", ""]
    code, out, _ = run(["decode", "--batch"], ("\n".join(lines) + "\n").encode())
    assert code == 0
    results = [json.loads(line) for line in out.decode().splitlines()]
    assert len(results) == len(lines)
    assert len(results[0]["devices"]) == 2
    assert results[1] == results[2] == {"devices": []}
    assert [sorted(r) for r in results[3:]] == [["error"]] * 4
    assert "line 5 must be a JSON string" in results[4]["error"]


def test_decode_batch_takes_escaped_odd_bytes() -> None:
    code, out, _ = run(["decode", "--batch", "--format", "json"], b'"[{\\"id\\":\\"\\udcff\\"}]"\n')
    assert code == 0
    assert json.loads(out)["devices"][0]["id"] == "\ufffd"


# ---- encode -------------------------------------------------------------------------------------------


def test_encode_prints_the_value_exactly_without_newline() -> None:
    devices = [
        {
            "id": "GPU-0",
            "count": 10,
            "devmem": 24576,
            "devcore": 100,
            "type": "NVIDIA-A10",
            "mode": "hami-core",
            "health": True,
        }
    ]
    code, out, _ = run(["encode", "--format", "json"], json.dumps(devices).encode())
    assert (code, out) == (0, JSON_VALUE.encode())
    code, out, _ = run(["encode", "--format", "legacy"], json.dumps(devices).encode())
    assert (code, out) == (0, b"GPU-0,10,24576,100,NVIDIA-A10,0,true,0,hami-core:")
    code, out, _ = run(["encode", "--format", "legacy"], b"[]")
    assert (code, out) == (0, b"")


def test_decode_output_encodes_back_to_the_same_value() -> None:
    _, decoded, _ = run(["decode"], JSON_VALUE.encode())
    code, out, _ = run(["encode"], decoded)
    assert (code, out) == (0, JSON_VALUE.encode())


@pytest.mark.parametrize(
    ("fmt", "stdin", "message"),
    [
        ("json", b"{}", "must be a JSON array"),
        ("json", b"[{", "not valid JSON"),
        ("json", b"[NaN]", "NaN is not JSON"),
        ("json", b'[{"count":"1"}]', "device 0: count: expected an integer"),
        ("json", b'[{"bogus":1}]', "device 0: bogus: unknown key"),
        ("legacy", b'[{"id":"a:b"}]', "holds ',' or ':'"),
        (
            "json",
            b'[{"bad\\rkey\\u2028' + b"k" * 2000 + b'":1}]',
            'device 0: ["bad\\rkey\\u2028kkkkkkkkk ... kkkkkkkkkkkkkkkkk"]: unknown key',
        ),
        (
            "json",
            b'[{"migProfiles":[{"placements":[{"start":1,"zz":2}]}]}]',
            "device 0: migProfiles[0].placements[0].zz: unknown key (known: start, size)",
        ),
    ],
)
def test_encode_errors_are_one_stderr_line_and_exit_1(fmt: str, stdin: bytes, message: str) -> None:
    code, out, err = run(["encode", "--format", fmt], stdin)
    assert (code, out) == (1, b"")
    assert err.startswith(b"error: ") and message.encode() in err and err.count(b"\n") == 1
    assert len(err.decode().splitlines()) == 1 and len(err) < 300  # no \r or U+2028 either; shortened


def test_encode_batch_gives_one_result_per_line_and_exits_0() -> None:
    stdin = b'[]\n[{"id":"<x>"}]\n[{"id":"a,b"}]\n{}\n'
    code, out, _ = run(["encode", "--batch", "--format", "legacy"], stdin)
    assert code == 0
    results = [json.loads(line) for line in out.decode().splitlines()]
    assert results[:2] == [{"value": ""}, {"value": "<x>,0,0,0,,0,false,0,:"}]
    assert [sorted(r) for r in results[2:]] == [["error"], ["error"]]
    code, out, _ = run(["encode", "--batch"], b'[{"id":"<x>"}]\n')
    assert json.loads(out) == {"value": '[{"id":"\\u003cx\\u003e"}]'}


# ---- as a real process --------------------------------------------------------------------------------


def hami(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    assert HAMI.exists(), f"the hami entry point is not installed next to {sys.executable}"
    return subprocess.run(
        [str(HAMI), "codec", *args], input=stdin, capture_output=True, timeout=60, check=False
    )


def test_process_decode_and_encode() -> None:
    decoded = hami(["decode"], LEGACY.encode())
    assert decoded.returncode == 0, decoded.stderr
    assert [d["id"] for d in json.loads(decoded.stdout)] == ["GPU-0", "GPU-1"]
    encoded = hami(["encode", "--format", "legacy"], decoded.stdout)
    assert encoded.returncode == 0
    nine_fields = LEGACY.replace("true:", "true,0,hami-core:").replace("false:", "false,0,hami-core:")
    assert encoded.stdout == nine_fields.encode()


def test_process_error_contract() -> None:
    failed = hami(["decode", "--format", "legacy"], b"GPU-0,1:")
    assert failed.returncode == 1
    assert failed.stdout == b""
    assert failed.stderr.startswith(b"error: segment 1 ") and failed.stderr.count(b"\n") == 1


def test_process_batch() -> None:
    done = hami(["decode", "--batch"], b'"::"\n"bad"\n')
    assert done.returncode == 0
    assert [sorted(json.loads(line)) for line in done.stdout.splitlines()] == [["devices"], ["error"]]


def test_a_closed_stdin_is_a_one_line_error() -> None:
    result = subprocess.run(
        [str(HAMI), "codec", "decode"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: os.close(0),
    )
    assert result.returncode == 1 and result.stderr == b"error: standard input is closed\n"


# ---- values nested as deeply as HAMi accepts --------------------------------------------------------


def _deep_custominfo(levels: int) -> str:
    """A JSON register value whose custominfo nests ``levels`` arrays (Go's limit counts the outer array,
    the device object and custominfo too: 9997 here is exactly HAMi's 10000)."""
    return '[{"id":"deep","custominfo":{"k":' + "[" * levels + "1" + "]" * levels + "}}]"


def _depth_of_k(device: dict[str, object]) -> int:
    inner, depth = device["custominfo"]["k"], 0  # type: ignore[index]
    while isinstance(inner, list):
        inner, depth = inner[0], depth + 1
    assert inner == 1.0
    return depth


@pytest.mark.parametrize("levels", [500, 9997])
def test_decode_batch_prints_deeply_nested_custominfo(levels: int) -> None:
    """Every value the decoder accepts is printed, however deep its custominfo (up to Go's limit)."""
    line = json.dumps(_deep_custominfo(levels)).encode() + b"\n"
    code, out, err = run(["decode", "--batch"], line + json.dumps(JSON_VALUE).encode() + b"\n")
    assert (code, err) == (0, b"")
    first, second = out.decode().splitlines()
    text = first.removeprefix('{"devices":[').removesuffix("]}")
    assert text.startswith('{"id":"deep",') and "error" not in first[:20]
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 3 * levels))  # only to read it back here
    try:
        (device,) = json.loads(first)["devices"]
    finally:
        sys.setrecursionlimit(before)
    assert device["id"] == "deep" and _depth_of_k(device) == levels
    assert json.loads(second)["devices"][0]["id"] == "GPU-0"


def test_decode_prints_deeply_nested_custominfo() -> None:
    code, out, err = run(["decode", "--format", "json"], _deep_custominfo(2000).encode())
    assert (code, err) == (0, b"")
    assert out.startswith(b'[{"id":"deep",') and out.count(b"[") >= 2000


def test_decode_batch_reports_nesting_beyond_go_as_an_error() -> None:
    code, out, _ = run(["decode", "--batch"], json.dumps(_deep_custominfo(9998)).encode() + b"\n")
    assert code == 0
    assert "error" in json.loads(out) and "devices" not in json.loads(out)
