"""The layers of ARCHITECTURE.md hold: no module imports a layer above its own.

Read from the ``import`` statements themselves (function-local ones too), so a
cycle hidden inside a function is caught like one at the top of a file.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import pkgutil
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "adcompare"

# The engines: the interpreters that carry derivatives (or a batch) through the op set, each
# a package of engines/ with an ``interface`` module, its face for the transforms. No engine
# imports another: what they share lives below them (``runtime``, ``ops``) or is "engines",
# the shared face of their boxes (``engines/box.py`` and the package itself), which is no
# engine and imports none. ``engines.replay`` is no engine either: it records with the
# forward engine's ``Dual`` and the reverse engine's tape and sweep, so it is a layer above
# them (and below the transforms, which use it only for grad's mode="replay").
ENGINES = {"engines.forward", "engines.reverse", "engines.batched"}

# Lowest first. A module may import its own layer and those below it. "adcompare" is the
# package's public face (adcompare/__init__.py): only the layers above it may use it. A unit
# is a top-level package or module, or a subpackage named here ("engines.replay"): a module
# belongs to the longest unit its name starts with.
LAYERS = [
    {"runtime", "durations"},
    {"ops"},
    {"engines", *ENGINES, "pytree"},
    {"engines.replay"},
    {"transforms", "checkpointing", "revolve"},
    {"symbolic", "graph", "optim", "custom", "ode", "sparsity", "elimination"},
    {"check", "testing", "nn"},
    {"adcompare"},
    {"adbench", "train", "gradbench"},
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
    """The layer unit of a dotted module name: ``adcompare.ops.shape`` -> ``ops``,
    ``adcompare.engines.forward.dual`` -> ``engines.forward``."""
    parts = module.split(".")
    for end in range(len(parts), 2, -1):
        if ".".join(parts[1:end]) in LAYER_OF:
            return ".".join(parts[1:end])
    return parts[1] if len(parts) > 1 else "adcompare"


def _imports(path: pathlib.Path):
    yield from _imports_in(ast.parse(path.read_text(encoding="utf-8")))


def _imports_in(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "adcompare":  # from adcompare import symbolic: the submodule
                yield from (f"adcompare.{alias.name}" for alias in node.names)
            elif any(f"{node.module}.{alias.name}" in MODULE_NAMES for alias in node.names):
                # from adcompare.engines import forward: the submodules it names
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    yield submodule if submodule in MODULE_NAMES else node.module
            else:
                yield node.module


MODULES = list(_modules())
MODULE_NAMES = {module for module, _ in MODULES}


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


# --- Engines that do not meet -----------------------------------------------------------


def _engine_crossings(module: str, tree: ast.AST) -> list[str]:
    """The imports of an engine other than ``module``'s own: every one, for a module of an
    engine or the shared face; those of anything but the engine's ``interface`` module, for
    a module of ``transforms/``."""
    own = _unit(module)
    crossings = []
    for name in _imports_in(tree):
        if name.split(".")[0] != "adcompare" or _unit(name) not in ENGINES - {own}:
            continue
        through_interface = name == f"adcompare.{_unit(name)}.interface"
        if own in ENGINES | {"engines"} or (own == "transforms" and not through_interface):
            crossings.append(name)
    return crossings


def test_every_module_of_the_engines_is_an_engine_replay_or_the_shared_face():
    shared_face = {"adcompare.engines", "adcompare.engines.box"}
    placed = {m for m, _ in MODULES if _unit(m) in ENGINES | {"engines.replay"}}
    unplaced = {m for m, _ in MODULES if m.startswith("adcompare.engines")} - placed
    assert unplaced <= shared_face, (
        f"name these in ENGINES here and in ARCHITECTURE.md, or put them in one: "
        f"{unplaced - shared_face}"
    )


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_engine_has_an_interface_module(engine):
    assert f"adcompare.{engine}.interface" in MODULE_NAMES


MEETING_POINTS = [(m, p) for m, p in MODULES if _unit(m) in ENGINES | {"engines", "transforms"}]


@pytest.mark.parametrize("module,path", MEETING_POINTS, ids=[m for m, _ in MEETING_POINTS])
def test_no_engine_imports_another_and_transforms_use_only_their_interfaces(module, path):
    crossings = _engine_crossings(module, ast.parse(path.read_text(encoding="utf-8")))
    assert not crossings, (
        f"{module} ({_unit(module)}) reaches into engines: {crossings}; move what engines "
        "share below them (runtime/), and reach an engine from a transform through its "
        "interface module"
    )


@pytest.mark.parametrize(
    "module, source, crossings",
    [
        ("adcompare.engines.reverse.interface", "from adcompare.engines.forward import x", 1),
        ("adcompare.engines.reverse.tape", "def f():\n    import adcompare.engines.batched", 1),
        ("adcompare.engines.batched.batch", "from adcompare.engines import forward, box", 1),
        ("adcompare.engines.box", "from adcompare.engines.reverse.tensor import Tensor", 1),
        ("adcompare.engines.reverse.interface", "from adcompare.engines.reverse import x", 0),
        ("adcompare.engines.forward.dual", "from adcompare.runtime.dtypes import as_float", 0),
        ("adcompare.transforms.x", "from adcompare.engines.forward.dual import Dual", 1),
        ("adcompare.transforms.x", "from adcompare.engines.reverse import lift", 1),
        ("adcompare.transforms.x", "from adcompare.engines.reverse.interface import lift", 0),
        ("adcompare.engines.replay.record", "from adcompare.engines.reverse.sweep import s", 0),
    ],
)
def test_the_engine_check_sees_each_kind_of_crossing(module, source, crossings):
    assert len(_engine_crossings(module, ast.parse(source))) == crossings


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


# --- No private access across packages -------------------------------------------------
#
# A package (a unit of LAYERS) reaches another only through its public names. Three kinds of
# reach fail: ``from adcompare.X import _name`` from another package; ``module._name`` on a
# module of another package; and ``obj._attr`` where ``_attr`` is defined only in other
# packages (as a function, class, assigned name or attribute, or in ``__slots__``).

# Today's reaches, as (the package that reaches, the private name). This list must shrink to
# empty: give the package reached a public way in, use it, and remove the entry. An entry
# that no longer occurs fails too, so the list cannot go stale.
ALLOWED_PRIVATE_ACCESS: set[tuple[str, str]] = set()


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_slots(node: ast.AST) -> bool:
    """Whether ``node`` is ``__slots__ = (...)``."""
    return (
        isinstance(node, ast.Assign)
        and isinstance(node.value, (ast.Tuple, ast.List))
        and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets)
    )


def _private_names_defined(tree: ast.AST) -> set[str]:
    """The private names a module defines: functions, classes, assignments, ``__slots__``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif _is_slots(node):
            names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
    return {name for name in names if _is_private(name)}


TREES = {module: ast.parse(path.read_text(encoding="utf-8")) for module, path in MODULES}
DEFINED_IN = {}
for _module, _tree in TREES.items():
    DEFINED_IN.setdefault(_unit(_module), set()).update(_private_names_defined(_tree))


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """The local names a module binds to adcompare's modules, and the module each names."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "adcompare":
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        aliases["adcompare"] = "adcompare"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in MODULE_NAMES:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _module_reached(node: ast.Attribute, aliases: dict[str, str]) -> str | None:
    """The adcompare module whose attribute ``node`` reads (``cost._ACTIVE``), if it is one."""
    path = []
    base = node.value
    while isinstance(base, ast.Attribute):
        path.append(base.attr)
        base = base.value
    if not (isinstance(base, ast.Name) and base.id in aliases):
        return None
    module = aliases[base.id]
    for attr in reversed(path):
        module = f"{module}.{attr}"
        if module not in MODULE_NAMES:
            return None
    return module


def _private_reaches(module: str, tree: ast.AST):
    """``(name, line, what)`` for each private name of another package that ``module`` reads."""
    own = _unit(module)
    aliases = _module_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "adcompare" and _unit(node.module) != own:
                for alias in node.names:
                    if _is_private(alias.name):
                        yield alias.name, node.lineno, f"imported from {node.module}"
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            reached = _module_reached(node, aliases)
            if reached is not None:
                if _unit(reached) != own:
                    yield node.attr, node.lineno, f"read from {reached}"
            elif node.attr not in DEFINED_IN.get(own, ()) and any(
                node.attr in names for unit, names in DEFINED_IN.items() if unit != own
            ):
                yield node.attr, node.lineno, "defined only in other packages"


def _all_private_reaches() -> dict[tuple[str, str], list[str]]:
    found = {}
    for module, tree in TREES.items():
        for name, line, what in _private_reaches(module, tree):
            found.setdefault((_unit(module), name), []).append(f"{module}:{line} ({what})")
    return found


def test_no_package_reaches_into_another_packages_private_names():
    found = _all_private_reaches()
    new = {key: where for key, where in found.items() if key not in ALLOWED_PRIVATE_ACCESS}
    assert not new, (
        "private names reached across packages; give the package reached a public way in "
        f"and use it: {new}"
    )


def test_the_private_access_allow_list_has_no_stale_entries():
    stale = ALLOWED_PRIVATE_ACCESS - set(_all_private_reaches())
    assert not stale, f"these no longer occur: remove them from ALLOWED_PRIVATE_ACCESS: {stale}"


@pytest.mark.parametrize(
    "module, source, reached",
    [
        ("adcompare.check", "from adcompare.symbolic import _positions", {"_positions"}),
        ("adcompare.symbolic.x", "from adcompare.symbolic import _positions", set()),
        ("adcompare.check", "from adcompare.ops.registry import raw", set()),
        ("adcompare.check", "from adcompare.runtime import cost\ncost._ACTIVE", {"_ACTIVE"}),
        ("adcompare.check", "import adcompare.runtime.cost as c\nc._ACTIVE", {"_ACTIVE"}),
        ("adcompare.check", "import adcompare\nadcompare.runtime.cost._ACTIVE", {"_ACTIVE"}),
        ("adcompare.check", "def f(dual):\n    return dual._tangent", {"_tangent"}),
        ("adcompare.engines.forward.x", "def f(dual):\n    return dual._tangent", set()),
        ("adcompare.engines.reverse.x", "def f(dual):\n    return dual._tangent", {"_tangent"}),
        ("adcompare.check", "def f(x):\n    return x._defined_nowhere_in_adcompare", set()),
        ("adcompare.check", "import sys\nsys._getframe", set()),
    ],
)
def test_the_private_access_check_sees_each_kind_of_reach(module, source, reached):
    assert {name for name, _, _ in _private_reaches(module, ast.parse(source))} == reached


# --- Size: a module reads in one sitting, a function in one screen ----------------------

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60  # from ``def`` to the last line, docstring included

# Today's longer modules and functions. These lists must shrink: split where the pieces
# have names, and remove the entry. An entry that no longer is too long (or no longer
# exists) fails too, so the lists cannot go stale.
LONG_MODULES: set[str] = set()
LONG_FUNCTIONS: set[str] = set()


def _function_lengths(module: str, tree: ast.AST):
    """``("module:Class.function", lines)`` for every function, nested ones too."""

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield f"{module}:{name}", child.end_lineno - child.lineno + 1
                yield from visit(child, f"{name}.")
            else:
                yield from visit(child, prefix)

    yield from visit(tree, "")


def _long_modules() -> set[str]:
    return {
        module
        for module, path in MODULES
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_MODULE_LINES
    }


def _long_functions() -> dict[str, int]:
    return {
        name: lines
        for module, tree in TREES.items()
        for name, lines in _function_lengths(module, tree)
        if lines > MAX_FUNCTION_LINES
    }


def test_no_module_is_over_the_line_budget():
    new = _long_modules() - LONG_MODULES
    assert not new, f"over {MAX_MODULE_LINES} lines: split these by the jobs they do: {new}"


def test_no_function_is_over_the_line_budget():
    new = {name: lines for name, lines in _long_functions().items() if name not in LONG_FUNCTIONS}
    assert not new, (
        f"over {MAX_FUNCTION_LINES} lines: split these where the pieces have names: {new}"
    )


def test_the_size_allow_lists_have_no_stale_entries():
    stale = (LONG_MODULES - _long_modules()) | (LONG_FUNCTIONS - set(_long_functions()))
    assert not stale, f"these are within budget now: remove them from the allow-lists: {stale}"


def test_the_size_check_measures_nested_functions_from_def_to_last_line():
    source = "class A:\n    def f(self):\n        def g():\n            pass\n        return g"
    tree = ast.parse(source)
    assert dict(_function_lengths("m", tree)) == {"m:A.f": 4, "m:A.f.g": 2}


# --- The op set's modules keep their names --------------------------------------------
#
# ``adcompare.ops`` exports every op by name, so a module named like an op is shadowed by
# the op's function (``import adcompare.ops.fft as m`` would give the function): name such a
# module after its subject (``ops/fourier.py``), not its op. The list cannot go stale.
OP_NAMED_MODULES: set[str] = set()


def _shadowed_op_modules() -> set[str]:
    """The op set's modules whose package exports (``__all__``) a name equal to theirs."""
    import adcompare.ops

    shadowed = set()
    packages = [adcompare.ops]
    while packages:
        package = packages.pop()
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            name = info.name.rpartition(".")[2]
            if name in package.__all__:
                shadowed.add(info.name)
            if info.ispkg:
                packages.append(importlib.import_module(info.name))
    return shadowed


def test_no_module_of_the_op_set_is_shadowed_by_a_name_its_package_exports():
    shadowed = _shadowed_op_modules()
    assert shadowed <= OP_NAMED_MODULES, (
        f"rename these modules: an op or helper of that name hides them: "
        f"{shadowed - OP_NAMED_MODULES}"
    )
    assert shadowed >= OP_NAMED_MODULES, (
        f"no longer shadowed: remove from OP_NAMED_MODULES: {OP_NAMED_MODULES - shadowed}"
    )
