"""A capacity-derived driver is what a third party would write: at most 20 lines of code (issue 18).

What is counted, per driver package: the physical lines of its source files (every ``*.py`` of the import
package) that hold a piece of code. Imports count, one line for each line ruff formats them on; a
statement ruff formats over several lines counts each of them. Not counted: blank lines, lines holding
only a comment, and docstrings (of the module, a class or a function).

A capacity-derived driver takes its devices only from the Node's quantities: a ``FromNode`` source
declaring no annotation, and no register annotation. The limit is on packages holding only such drivers;
one that also reads an annotation of the vendor's own schema (MetaX's sGPU list, Enflame's DRS capacity)
or the register annotation (Kunlun's vXPU) parses that, and is not one.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

from hami_core.plugins import DriverManager, VendorDriver

VENDORS = Path(__file__).resolve().parents[1] / "vendors"
LIMIT = 20

#: Tokens that are not code: comments, line ends and the indentation bookkeeping.
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            value = first.value if isinstance(first, ast.Expr) else None
            if first is not None and isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: str) -> int:
    """The lines of ``source`` holding code, as the module docstring says."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - _docstring_lines(ast.parse(source)))


def test_the_count_skips_blank_lines_comments_and_docstrings() -> None:
    source = '''"""A module docstring,
over two lines."""

from hami_core import (  # a comment on a code line
    DeviceInfo,
    hookimpl,
)

# a comment line


class Thing:
    """A class docstring."""

    text = """a string that is
    not a docstring"""


def function() -> str:
    """A function docstring."""
    # inside
    return "#not a comment"
'''
    assert code_lines(source) == 4 + 1 + 2 + 1 + 1


def _in_tree() -> dict[str, list[VendorDriver]]:
    """Every driver of the packages under ``vendors/``, by package directory."""
    manager = DriverManager()
    manager.load_entry_points()
    packages: dict[str, list[VendorDriver]] = {}
    for driver in manager.report.drivers:
        file = Path(getattr(manager.plugin_of(driver), "__file__", "") or "").resolve()
        if VENDORS in file.parents:
            packages.setdefault(str(file.parent), []).append(driver)
    return packages


def _capacity_derived(driver: VendorDriver) -> bool:
    source = driver.node_source
    return driver.register_annotation is None and source is not None and not source.annotations


IN_TREE = _in_tree()
PACKAGES = {path: drivers for path, drivers in IN_TREE.items() if all(map(_capacity_derived, drivers))}


def test_every_package_is_judged_and_the_capacity_derived_ones_are_found() -> None:
    """Every driver package under ``vendors/`` loaded (one that did not would go uncounted)."""
    assert sorted(IN_TREE) == sorted(str(p.resolve()) for p in VENDORS.glob("*/src/hami_vendor_*"))
    names = {driver.name for drivers in PACKAGES.values() for driver in drivers}
    assert {"awsneuron", "mthreads"} <= names


@pytest.mark.parametrize("package", sorted(PACKAGES), ids=lambda p: Path(p).name)
def test_a_capacity_derived_driver_is_at_most_20_lines_of_code(package: str) -> None:
    counts = {path.name: code_lines(path.read_text()) for path in sorted(Path(package).rglob("*.py"))}
    assert sum(counts.values()) <= LIMIT, f"{Path(package).name}: {counts} lines of code, above {LIMIT}"
