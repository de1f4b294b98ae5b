"""The vendor guide's hook reference and field table are checked against the hook specifications, and
its capacity-derived driver, end to end, against the in-tree driver it shows."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import attrs
from click.testing import CliRunner

from hami_core.cli import main
from hami_core.plugins import hookspecs
from hami_core.plugins.hookspecs import VendorSpec

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "vendor-guide.md"


def hooks() -> dict[str, str]:
    """Every hook specification's name and its documented signature, ``name(args) -> return``."""
    found = {}
    for name, function in inspect.getmembers(hookspecs, inspect.isfunction):
        if not name.startswith("hami_"):
            continue
        signature = inspect.signature(function)
        params = [f"{p.name}: {p.annotation}" for p in signature.parameters.values()]
        found[name] = f"{name}({', '.join(params)}) -> {signature.return_annotation}"
    return found


def sections(text: str) -> dict[str, str]:
    """The guide's hook sections: heading signature -> body."""
    parts = re.split(r"^### `(hami_[^`]*)`\n", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1].split("\n## ")[0] for i in range(1, len(parts), 2)}


def test_every_hook_is_documented_with_its_exact_signature_and_summary() -> None:
    documented = sections(GUIDE.read_text(encoding="utf-8"))
    specified = hooks()
    assert sorted(documented) == sorted(specified.values()), "hook reference and hookspecs.py differ"
    for name, signature in specified.items():
        summary = inspect.getdoc(getattr(hookspecs, name)).splitlines()[0]  # type: ignore[union-attr]
        assert summary in documented[signature], f"{name}: the guide's section must start from {summary!r}"


def test_every_vendor_spec_field_is_in_the_guides_table() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.MULTILINE))
    assert rows == {field.name for field in attrs.fields(VendorSpec)}


def _section(title: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    return text.split(f"\n## {title}")[1].split("\n## ")[0]


def _blocks(text: str, kind: str) -> list[str]:
    """The fenced blocks of ``text`` whose info string is ``kind``, in order."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    return [body for info, body in blocks if info == kind]


def test_the_capacity_derived_driver_shown_is_the_in_tree_one_word_for_word() -> None:
    """Section 2b's Python is the code of ``vendors/mthreads`` (the whole module below its docstring),
    its tests, MetaX's whole GPUs and its sGPU entries: so it runs, as their tests prove."""
    shown = _blocks(_section("2b."), "python")
    module = (ROOT / "vendors/mthreads/src/hami_vendor_mthreads/__init__.py").read_text(encoding="utf-8")
    assert shown[0] == module[module.index(shown[0].splitlines()[0]) :]
    sources = [
        (ROOT / "vendors/mthreads/tests/test_mthreads_driver.py").read_text(encoding="utf-8"),
        (ROOT / "vendors/metax/src/hami_vendor_metax/__init__.py").read_text(encoding="utf-8"),
    ]
    sources.append(sources[-1])
    assert len(shown) == 4 and all(block in source for block, source in zip(shown[1:], sources, strict=True))


def test_the_capacity_derived_driver_shows_in_hami_vendors_as_the_guide_says() -> None:
    shown = _blocks(_section("2b."), "")
    listing = next(block for block in shown if block.startswith("$ hami vendors --vendors mthreads\n"))
    result = CliRunner().invoke(
        main,
        ["vendors", "--vendors", "mthreads"],
        env={"HAMI_DEVICE_CONFIG": None, "HAMI_COUNT_RESOURCES": None},
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == listing.split("\n", 1)[1]
