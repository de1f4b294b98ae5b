"""The vendor guide's hook reference and field table are checked against the hook specifications."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import attrs

from hami_core.plugins import hookspecs
from hami_core.plugins.hookspecs import VendorSpec

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "vendor-guide.md"


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
