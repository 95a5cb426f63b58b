"""The layers of ARCHITECTURE.md hold: no module imports a layer above its own.

Read from the ``import`` statements themselves (function-local ones too), so a
cycle hidden inside a function is caught like one at the top of a file.
"""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "adcompare"

# Lowest first. A module may import its own layer and those below it. "adcompare" is the
# package's public face (adcompare/__init__.py): only the layers above it may use it.
LAYERS = [
    {"runtime"},
    {"ops"},
    {"engines", "pytree"},
    {"transforms", "checkpointing", "revolve"},
    {"symbolic", "graph", "optim", "custom", "sparsity"},
    {"check", "testing", "nn"},
    {"adcompare"},
    {"adbench", "train"},
    {"bench"},
    {"cli"},
]
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}
# What the op set may import from outside the package: the mathematics' own libraries
# and Python's standard library.
OPS_MAY_IMPORT = {"numpy", "sympy", "scipy", "adcompare", "__future__"} | sys.stdlib_module_names


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        yield ".".join(p for p in parts if p != "__init__"), path


def _unit(module: str) -> str:
    """The layer unit of a dotted module name: ``adcompare.ops.shape`` -> ``ops``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "adcompare"


def _imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "adcompare":  # from adcompare import symbolic: the submodule
                yield from (f"adcompare.{alias.name}" for alias in node.names)
            else:
                yield node.module


MODULES = list(_modules())


def test_every_package_and_module_has_a_layer():
    units = {_unit(module) for module, _ in MODULES}
    assert units <= set(LAYER_OF), (
        f"give these a layer here and in ARCHITECTURE.md: {units - set(LAYER_OF)}"
    )


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_no_module_imports_a_higher_layer(module, path):
    own = LAYER_OF[_unit(module)]
    above = sorted(
        name
        for name in _imports(path)
        if name.split(".")[0] == "adcompare" and LAYER_OF.get(_unit(name), own) > own
    )
    assert not above, f"{module} (layer {own}) imports higher layers: {above}"


@pytest.mark.parametrize("module,path", [(m, p) for m, p in MODULES if _unit(m) == "ops"])
def test_the_op_set_imports_only_mathematics_and_the_runtime(module, path):
    outside = {name for name in _imports(path) if name.split(".")[0] not in OPS_MAY_IMPORT}
    assert not outside, f"{module} imports {sorted(outside)}"


@pytest.mark.parametrize("module,path", [(m, p) for m, p in MODULES if _unit(m) == "ops"])
def test_the_op_set_imports_at_the_top_so_no_cycle_hides_in_a_function(module, path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    nested = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top
    ]
    assert not nested, f"{module} imports inside functions at lines {nested}"
