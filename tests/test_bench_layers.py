"""bench's parts import one way: problems ← peers ← harness ← report ← the studies.

The problems know nothing of how they are measured; the peers run problems;
the harness measures problems by adcompare's modes and the peers' into
results; the report reads results; the targets, memory and sparse studies
use all of these. Read from the ``import`` statements themselves (function-local
ones too), so a cycle hidden inside a function is caught.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[1] / "adcompare" / "bench"

# Lowest first: a part may import its own and those below it. "" is the package's face.
PARTS = [
    {"problems"},
    {"peers"},
    {"harness"},
    {"report"},
    {"targets", "memory", "sparse", "history", "ode"},
    {""},
]
LEVEL = {name: i for i, part in enumerate(PARTS) for name in part}


def _part(module: str) -> str:
    """``adcompare.bench.harness.sweep`` -> ``harness``; ``adcompare.bench`` -> ``""``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def _bench_imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "adcompare.bench":  # from adcompare.bench import harness
                names = [f"adcompare.bench.{alias.name}" for alias in node.names]
        else:
            continue
        yield from (name for name in names if name.startswith("adcompare.bench"))


MODULES = {
    ".".join(("adcompare", "bench", *path.relative_to(BENCH).with_suffix("").parts)).removesuffix(
        ".__init__"
    ): path
    for path in sorted(BENCH.rglob("*.py"))
}


def test_every_part_of_bench_has_a_level():
    assert {_part(module) for module in MODULES} <= set(LEVEL)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_part_of_bench_imports_a_higher_part(module):
    own = LEVEL[_part(module)]
    above = sorted(
        name for name in _bench_imports(MODULES[module]) if LEVEL.get(_part(name), own) > own
    )
    assert not above, f"{module} ({_part(module) or 'bench'}) imports higher parts: {above}"


def test_the_check_sees_an_import_from_a_higher_part(tmp_path):
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from adcompare.bench.report import text\n")
    assert list(_bench_imports(source)) == ["adcompare.bench.report"]
    assert LEVEL[_part("adcompare.bench.report.text")] > LEVEL[_part("adcompare.bench.harness")]
