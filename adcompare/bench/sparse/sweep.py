"""The sparse-derivative sweep: dense against sparse forward, reverse and bidirectional.

For each problem (the sparse study's from the one registry,
:mod:`~adcompare.bench.sparse.problems`, or any given) and each size,
every mode computes the whole Jacobian (or Hessian) once per call:

======================  ===============================================================
``dense-forward``       ``jacfwd`` (Hessian: ``hessian``, forward over reverse)
``dense-reverse``       ``jacrev`` (Hessian: reverse over reverse)
``sparse-forward``      one JVP per column colour (Hessian: ``sparse-star``, one HVP
                        per star colour, read directly)
``sparse-reverse``      one VJP per row colour (Hessian: ``sparse-acyclic``, fewer
                        colours, recovered by substitution)
``bidirectional``       JVPs and VJPs of a star bicolouring (Jacobians only)
``symmetric-star``      a symmetric Jacobian coloured as a Hessian: one JVP per star
                        colour (dynamic largest-first ordering)
======================  ===============================================================

Each sparse mode is measured twice: ``MODE`` with its plan prepared once
(pattern and colouring reused, as :func:`~adcompare.sparse_jacobian` does
for repeated calls), and ``MODE+prep`` detecting the pattern and colouring
it in every call. Each cell records the time, the passes and sweeps that
``adcompare.count`` saw, the colours, and the largest difference from the
dense Jacobian where that is computed. Results are one JSON file, written
as cells finish; plots and the report only read it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import adcompare as ad
from adcompare.bench.harness.measure import time_calls
from adcompare.bench.sparse import asdex_peer
from adcompare.bench.sparse.problems import (
    SPARSE_PROBLEMS,
    get_sparse_problem,
    kind_of,
    resolve,
)
from adcompare.sparsity import prepare_hessian, prepare_jacobian, sparse_jacobian
from adcompare.sparsity.colouring import colours_in_rows
from adcompare.sparsity.derivatives import DEFAULT_ORDERS, colour_for
from adcompare.sparsity.orderings import ORDERINGS

__all__ = [
    "DENSE_MAX_N",
    "SCHEMA",
    "SPARSE_MODES",
    "SparseMode",
    "colour_counts",
    "run_sparse_sweep",
    "vjps",
]

SCHEMA = "adcompare-sparse/2"
#: Dense Jacobians are computed (and used as the reference) only up to this many inputs.
DENSE_MAX_N = 1024
#: The sizes a problem without sizes of its own is measured at.
DEFAULT_SIZES = (16, 64, 256, 1024)
#: Sparse derivatives must equal the dense ones to this (relative to the largest entry).
TOLERANCE = 1e-12


@dataclass(frozen=True)
class SparseMode:
    """A strategy: ``make(f, x)`` returns ``(work, plan)``; ``work()`` computes it once."""

    name: str
    label: str
    kinds: tuple[str, ...]
    make: Callable
    dense: bool = False
    prepares: bool = False
    symmetric: bool = False


def _dense(kind_transform: dict) -> Callable:
    def make(f, x, kind):
        transform = kind_transform[kind](f)
        return (lambda: transform(x)), None

    return make


def _sparse(jacobian_mode: str, hessian_mode: str, *, prepares: bool) -> Callable:
    def make(f, x, kind):
        prepare = prepare_jacobian if kind == "jacobian" else prepare_hessian
        mode = jacobian_mode if kind == "jacobian" else hessian_mode
        plan = prepare(f, x, mode)
        if prepares:
            return (lambda: prepare(f, x, mode)(f, x)), plan
        return (lambda: plan(f, x)), plan

    return make


#: The ordering the symmetric modes colour with.
SYMMETRIC_ORDER = "dynamic-largest-first"


def _symmetric(*, prepares: bool) -> Callable:
    def make(f, x, kind):
        jac = sparse_jacobian(f, "star", order=SYMMETRIC_ORDER)
        jac(x)
        if prepares:
            return (lambda: sparse_jacobian(f, "star", order=SYMMETRIC_ORDER)(x)), jac.last_plan
        return (lambda: jac(x)), jac.last_plan

    return make


def _sparse_modes() -> list[SparseMode]:
    modes = []
    for name, label, jacobian_mode, hessian_mode, kinds in [
        ("sparse-forward", "sparse forward (star for Hessians)", "forward", "star", None),
        ("sparse-reverse", "sparse reverse (acyclic for Hessians)", "reverse", "acyclic", None),
        ("bidirectional", "bidirectional", "bidirectional", None, ("jacobian",)),
    ]:
        kinds = kinds or ("jacobian", "hessian")
        for prepares in (False, True):
            modes.append(
                SparseMode(
                    name + ("+prep" if prepares else ""),
                    label + (", pattern and colouring included" if prepares else ""),
                    kinds,
                    _sparse(jacobian_mode, hessian_mode, prepares=prepares),
                    prepares=prepares,
                )
            )
    for prepares in (False, True):
        suffix = "+prep" if prepares else ""
        modes.append(
            SparseMode(
                "symmetric-star" + suffix,
                "symmetric Jacobian, star colouring" + (", prepare included" if prepares else ""),
                ("jacobian",),
                _symmetric(prepares=prepares),
                prepares=prepares,
                symmetric=True,
            )
        )
    return modes


SPARSE_MODES: dict[str, SparseMode] = {
    m.name: m
    for m in [
        SparseMode(
            "dense-forward",
            "dense forward (jacfwd)",
            ("jacobian", "hessian"),
            _dense({"jacobian": ad.jacfwd, "hessian": ad.hessian}),
            dense=True,
        ),
        SparseMode(
            "dense-reverse",
            "dense reverse (jacrev)",
            ("jacobian", "hessian"),
            _dense(
                {
                    "jacobian": ad.jacrev,
                    "hessian": lambda f: ad.hessian(f, mode="rev-over-rev"),
                }
            ),
            dense=True,
        ),
        *_sparse_modes(),
    ]
}


#: The sparse modes each colouring strategy of the tables stands for.
STRATEGY_MODES = {
    "jacobian": {"forward": "forward", "reverse": "reverse", "bidirectional": "bidirectional"},
    "symmetric": {"symmetric star": "star"},
    "hessian": {"star": "star", "acyclic": "acyclic"},
}


def colour_counts(pattern, kind: str, symmetric: bool = False) -> dict[str, dict[str, int]]:
    """Colours per strategy and vertex ordering: every ordering up to 1024 rows, past that
    each strategy's default ordering (:data:`~adcompare.sparsity.DEFAULT_ORDERS`) only.

    >>> import numpy as np
    >>> counts = colour_counts(np.eye(3, dtype=bool) | np.eye(3, k=1, dtype=bool), "jacobian")
    >>> counts["forward"]["largest-first"], counts["bidirectional"]["natural"]
    (2, 2)
    """

    def count(colours) -> int:
        parts = colours if isinstance(colours, tuple) else (colours,)  # a bicolouring: two
        return sum(len(set(part[part >= 0].tolist())) for part in parts)

    strategies = dict(STRATEGY_MODES[kind])
    if symmetric:
        strategies |= STRATEGY_MODES["symmetric"]
    counts = {}
    for name, mode in strategies.items():
        orders = ORDERINGS if max(pattern.shape) <= 1024 else [DEFAULT_ORDERS[mode]]
        counts[name] = {o: count(colour_for(mode, pattern, o)) for o in orders}
    return counts


def default_orders(kind: str, symmetric: bool = False) -> dict[str, str]:
    """The ordering each strategy's sparse mode colours with.

    >>> default_orders("hessian")
    {'star': 'dynamic-largest-first', 'acyclic': 'largest-first'}
    """
    strategies = STRATEGY_MODES[kind] | (STRATEGY_MODES["symmetric"] if symmetric else {})
    return {name: DEFAULT_ORDERS[mode] for name, mode in strategies.items()}


def _as_dense(value, shape) -> np.ndarray:
    if hasattr(value, "toarray"):
        return value.toarray()
    return np.asarray(value).reshape(shape)


def _cell(problem, size, instance, mode: SparseMode, reference, budget: float) -> dict:
    f, x = instance.on(ad), instance.x
    kind = kind_of(instance)
    shape = (instance.n, instance.n) if kind == "hessian" else (instance.m, instance.n)
    cell = {"problem": problem.name, "size": size, "n": instance.n, "m": instance.m}
    cell.update(mode=mode.name, kind=kind)
    if mode.dense and instance.n > DENSE_MAX_N:
        return cell | {"skipped": f"dense modes run only while n ≤ {DENSE_MAX_N}"}
    started = time.perf_counter()
    work, plan = mode.make(f, x, kind)
    prepare_time = time.perf_counter() - started
    with ad.count() as cost:
        result = work()
    slow = mode.prepares or prepare_time > 1.0
    timing, _ = time_calls(work, repeats=1 if slow else 5, budget=budget)
    cell.update(
        time=timing["median"],
        passes=cost.passes,
        seeds=cost.seeds,
        sweeps=cost.sweeps,
        cotangent_seeds=cost.cotangent_seeds,
    )
    if plan is not None:
        cell.update(colours=plan.passes, prepare_time=prepare_time, reason=plan.reason)
    if reference is not None:
        scale = max(1.0, float(np.abs(reference).max()))
        error = float(np.abs(_as_dense(result, shape) - reference).max()) / scale
        cell["error"] = error
        if error > TOLERANCE:
            raise AssertionError(
                f"{problem.name} at {size}: {mode.name} differs from the dense "
                f"derivative by {error:.2e}"
            )
    return cell


def _reference(problem, instance):
    """The dense derivative every sparse one is checked against (``None`` past
    :data:`DENSE_MAX_N` inputs)."""
    if instance.n > DENSE_MAX_N:
        return None
    f = instance.on(ad)
    dense = ad.jacfwd(f) if kind_of(instance) == "jacobian" else ad.hessian(f)
    shape = (instance.n if kind_of(instance) == "hessian" else instance.m, instance.n)
    return np.asarray(dense(instance.x)).reshape(shape)


def _colour_row(problem, size, instance, with_asdex: bool) -> dict:
    """The pattern's size and every strategy's colours at one size (asdex's beside them)."""
    prepare = prepare_jacobian if kind_of(instance) == "jacobian" else prepare_hessian
    pattern = prepare(instance.on(ad), instance.x).pattern
    row = {"problem": problem.name, "size": size, "n": instance.n, "m": instance.m}
    row |= {
        "nnz": int(pattern.nnz),
        "max_row": int(np.diff(pattern.indptr).max(initial=0)),
        "counts": colour_counts(pattern, kind_of(instance), problem.symmetric),
        "defaults": default_orders(kind_of(instance), problem.symmetric),
    }
    if with_asdex:
        row["asdex"] = asdex_peer.asdex_colours(instance, kind_of(instance), problem.symmetric)
    return row


def _cells(problem, size, instance, reference, budget: float, with_asdex: bool):
    """Every mode's cell at one size: adcompare's, then asdex's."""
    for mode in SPARSE_MODES.values():
        if kind_of(instance) in mode.kinds and (problem.symmetric or not mode.symmetric):
            yield _cell(problem, size, instance, mode, reference, budget)
    base = {"problem": problem.name, "size": size, "n": instance.n, "m": instance.m}
    for mode in asdex_peer.ASDEX_MODES if with_asdex else ():
        yield asdex_peer.asdex_cell(
            base | {"kind": kind_of(instance)}, instance, mode, reference, budget
        )


def run_sparse_sweep(
    out: Path,
    *,
    problems: list | None = None,
    sizes: dict[str, tuple] | None = None,
    log: Callable[[str], None] = print,
    budget: float = 2.0,
    peers: bool = True,
) -> dict:
    """Measure every mode on every problem and size; write and return the results.

    ``problems`` are names or :class:`~adcompare.bench.problems.Problem` objects (a
    user's function too), by default the sparse study's; ``sizes`` overrides a
    problem's default sweep (``{"arrowhead": (16, 64)}``; without either, a problem is
    measured at :data:`DEFAULT_SIZES`);
    ``budget`` is the seconds of timing one cell may take. With ``peers``,
    asdex is measured too where it is installed; ``results["asdex"]`` says
    whether it was, or why not.
    """
    missing = asdex_peer.missing() if peers else "asdex not asked for (--no-peers)"
    results: dict = {"schema": SCHEMA, "cells": [], "colours": [], "patterns": {}}
    results["asdex"] = missing or f"measured: asdex {asdex_peer.version()}"
    for given in problems or list(SPARSE_PROBLEMS):
        problem = resolve(given)
        for size in (sizes or {}).get(problem.name, problem.sizes or DEFAULT_SIZES):
            instance = problem.build(size)
            reference = _reference(problem, instance)
            results["colours"].append(_colour_row(problem, size, instance, missing is None))
            for cell in _cells(problem, size, instance, reference, budget, missing is None):
                results["cells"].append(cell)
                log(_describe(cell))
            out.write_text(json.dumps(results, indent=1, default=_jsonable))
    results["patterns"] = spy_examples()
    out.write_text(json.dumps(results, indent=1, default=_jsonable))
    return results


def spy_examples() -> dict:
    """Small patterns with, per non-zero, the seed it is read from (for the spy figure).

    Forward seeds are numbered first, then reverse ones.

    >>> example = spy_examples()["arrowhead, n = 12"]
    >>> example["shape"], max(example["colours"]) + 1
    ((12, 12), 3)
    """
    examples = {}
    for title, name, size, mode in [
        ("2-D Laplacian, k = 6", "laplacian-2d", 6, "forward"),
        ("arrowhead, n = 12", "arrowhead", 12, "bidirectional"),
        ("ADBench BA test", "bundle-adjustment", "test", "forward"),
    ]:
        instance = get_sparse_problem(name).build(size)
        plan = prepare_jacobian(instance.on(ad), instance.x, mode)
        entries = plan.pattern.tocoo()
        column_seed = plan.column_colours[entries.col]
        row_seed = plan.forward_passes + plan.row_colours[entries.row]
        seeds = np.where(plan.from_columns, column_seed, row_seed)
        caption = f"{mode}: {plan.forward_passes} JVPs + {plan.reverse_sweeps} VJPs"
        examples[title] = {
            "shape": plan.pattern.shape,
            "rows": entries.row.tolist(),
            "cols": entries.col.tolist(),
            "colours": seeds.tolist(),
            "caption": caption,
        }
    instance = get_sparse_problem("rosenbrock-hessian").build(12)
    plan = prepare_hessian(instance.on(ad), instance.x, "star")
    entries = plan.pattern.tocoo()
    counts = colours_in_rows(plan.pattern, plan.colours)
    alone = counts[entries.row, plan.colours[entries.col]] == 1
    seeds = np.where(alone, plan.colours[entries.col], plan.colours[entries.row])
    examples["Rosenbrock Hessian, n = 12"] = {
        "shape": plan.pattern.shape,
        "rows": entries.row.tolist(),
        "cols": entries.col.tolist(),
        "colours": seeds.tolist(),
        "caption": f"star: {plan.passes} HVPs",
    }
    return examples


def vjps(cell: dict) -> int:
    """The VJPs a cell made: the cotangent lanes its sweeps carried (in files written
    before reverse mode carried lanes, one sweep each).

    >>> vjps({"sweeps": 1, "cotangent_seeds": 3}), vjps({"sweeps": 3})
    (3, 3)
    """
    return cell.get("cotangent_seeds", cell["sweeps"])


def _jsonable(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


def _describe(cell: dict) -> str:
    where = f"{cell['problem']} {cell['size']} (n={cell['n']})"
    if "skipped" in cell:
        return f"{where} {cell['mode']}: skipped, {cell['skipped']}"
    passes = (
        f"{cell['seeds']} JVPs in {cell['passes']} pass(es) + {vjps(cell)} VJPs in "
        f"{cell['sweeps']} sweep(s)"
    )
    return f"{where} {cell['mode']}: {cell['time'] * 1e3:.2f} ms, {passes}"
