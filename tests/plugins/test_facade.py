"""Driver packages import only hami_core's public facade, which exports what a driver author needs."""

from __future__ import annotations

import ast
from pathlib import Path

import hami_core

ROOT = Path(__file__).resolve().parents[2]
DRIVER_SOURCES = sorted((ROOT / "vendors").glob("*/src/**/*.py")) + sorted(
    (ROOT / "examples").glob("*/src/**/*.py")
)


def core_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [name for name in names if name.partition(".")[0] == "hami_core"]


def test_there_are_driver_sources_to_check() -> None:
    packages = {path.relative_to(ROOT).parts[:2] for path in DRIVER_SOURCES}
    assert packages == {
        ("vendors", "nvidia"),
        ("vendors", "mlu"),
        ("vendors", "dcu"),
        ("vendors", "kunlun"),
        ("vendors", "biren"),
        ("vendors", "vastai"),
        ("vendors", "amd"),
        ("vendors", "ascend"),
        ("vendors", "mthreads"),
        ("vendors", "awsneuron"),
        ("vendors", "metax"),
        ("vendors", "enflame"),
        ("vendors", "iluvatar"),
        ("examples", "hami-vendor-acme"),
    }


def test_driver_sources_import_only_the_facade() -> None:
    offending = {
        str(p.relative_to(ROOT)): n for p in DRIVER_SOURCES for n in core_imports(p) if n != "hami_core"
    }
    assert offending == {}


def test_no_driver_imports_another() -> None:
    for path in DRIVER_SOURCES:
        own = path.relative_to(ROOT).parts[3]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not (node.module.startswith("hami_vendor_") and node.module.split(".")[0] != own), path
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    assert not (top.startswith("hami_vendor_") and top != own), path


def test_the_facade_exports_what_a_driver_author_needs() -> None:
    for name in (
        "hookimpl",
        "VendorSpec",
        "FromNode",
        "NodeView",
        "DeviceInfo",
        "fake_devices",
        "FAKE_DEVICES_ENV",
        "Codec",
        "LivenessRule",
        "LivenessFacts",
        "DecodeError",
        "EncodeError",
    ):
        assert name in hami_core.__all__, name
        assert hasattr(hami_core, name), name
