"""Sparse Jacobians and Hessians: detect, colour, one pass per colour, decompress.

A *plan* holds what depends only on the function and the input's shape:
the pattern, the colouring and where each non-zero is read from. The
functions :func:`sparse_jacobian` and :func:`sparse_hessian` return keep
one plan per input shape, so repeated calls only run the passes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sparse

from adcompare.engines.forward import Dual
from adcompare.ops.registry import new_level, shape_of
from adcompare.runtime import cost
from adcompare.runtime.dtypes import as_float
from adcompare.sparsity.colouring import (
    acyclic_colouring,
    adjacency_graph,
    colours_in_rows,
    column_colouring,
    row_colouring,
    star_bicolouring,
    star_colouring,
)
from adcompare.sparsity.orderings import ORDERINGS
from adcompare.sparsity.patterns import hessian_pattern, jacobian_pattern
from adcompare.transforms import grad, hvp, vjp, vmap

__all__ = [
    "HessianPlan",
    "JacobianPlan",
    "prepare_hessian",
    "prepare_jacobian",
    "sparse_hessian",
    "sparse_jacobian",
]

JACOBIAN_MODES = ("forward", "reverse", "bidirectional")
#: Jacobian modes for a Jacobian known to be symmetric (a gradient's): one JVP per colour.
SYMMETRIC_MODES = ("star", "acyclic")
HESSIAN_MODES = ("star", "acyclic")


def _count(colours: np.ndarray) -> int:
    return int(colours.max(initial=-1)) + 1


#: The colouring each mode uses.
COLOURINGS = {
    "forward": column_colouring,
    "reverse": row_colouring,
    "bidirectional": star_bicolouring,
    "star": star_colouring,
    "acyclic": acyclic_colouring,
}

#: The vertex ordering each mode colours with unless told: saturation degree (DSATUR) for
#: columns and rows (the five-point stencil's optimal 5 colours, where the static orderings
#: take 6 or 7), largest-first for the bicolouring (an arrowhead's 3), dynamic
#: largest-first for star colouring (the 2-D grid's optimal 5, where the others take 6).
DEFAULT_ORDERS = {
    "forward": "saturation-degree",
    "reverse": "saturation-degree",
    "bidirectional": "largest-first",
    "star": "dynamic-largest-first",
    "acyclic": "largest-first",
}


def colour_for(mode: str, pattern, order: str | None = None):
    """``mode``'s colouring of ``pattern`` in ``order``: its default ordering (``None``), a
    named one, or ``"best"``, every ordering tried and the fewest colours kept.

    >>> tridiagonal = np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1)
    >>> colour_for("forward", tridiagonal).tolist(), colour_for("acyclic", tridiagonal).tolist()
    ([2, 1, 0, 2, 1], [1, 0, 1, 0, 1])
    """
    colour = COLOURINGS[mode]
    if order != "best":
        return colour(pattern, order or DEFAULT_ORDERS[mode])
    return min(
        (colour(pattern, name) for name in ORDERINGS),
        key=lambda c: sum(_count(part) for part in (c if isinstance(c, tuple) else (c,))),
    )


def _seeds(colours: np.ndarray, shape: tuple) -> np.ndarray:
    """One seed per colour, stacked as lanes: ``(colours, *shape)``, 1 where the colour is."""
    count = _count(colours)
    return (colours[None, :] == np.arange(count)[:, None]).reshape((count, *shape)) * 1.0


def _lanes_jvp(f: Callable, x: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """``J · seeds`` in one forward pass of ``len(seeds)`` lanes, as an ``m × lanes`` matrix."""
    level = new_level()
    if cost.ACTIVE:
        cost.record_pass(len(seeds))
    out = f(Dual(x, seeds, level=level))
    if isinstance(out, Dual):
        tangent = np.asarray(out.tangent).reshape(len(seeds), -1)
    else:
        tangent = np.zeros((len(seeds), int(np.size(out))))
    return tangent.T


@dataclass
class JacobianPlan:
    """Everything about a sparse Jacobian that does not depend on the input's values.

    ``column_colours`` and ``row_colours`` are ``-1`` where not seeded;
    ``from_columns`` says, per non-zero, whether it is read from the forward
    passes (else from the reverse sweeps).
    """

    mode: str
    pattern: sparse.csr_array
    row_colours: np.ndarray
    column_colours: np.ndarray
    from_columns: np.ndarray
    reason: str
    in_shape: tuple
    out_shape: tuple

    @property
    def forward_passes(self) -> int:
        """One JVP per column colour (the lanes of one forward pass)."""
        return _count(self.column_colours)

    @property
    def reverse_sweeps(self) -> int:
        """One VJP per row colour (the lanes of one backward sweep)."""
        return _count(self.row_colours)

    @property
    def passes(self) -> int:
        """JVPs and VJPs together."""
        return self.forward_passes + self.reverse_sweeps

    def __call__(self, f: Callable, x) -> sparse.csr_array:
        """The Jacobian of ``f`` at ``x`` with this plan's pattern."""
        x = np.asarray(as_float(x))
        entries = self.pattern.tocoo()
        rows, cols = entries.row, entries.col
        values = np.zeros(len(rows))
        forward = self.from_columns
        if self.forward_passes:
            compressed = _lanes_jvp(f, x, _seeds(self.column_colours, x.shape))
            values[forward] = compressed[rows[forward], self.column_colours[cols[forward]]]
        if self.reverse_sweeps:
            out, pullback = vjp(f, x)
            # One sweep carries every row colour as a cotangent lane, as forward mode's
            # one pass carries every column colour.
            seeds = _seeds(self.row_colours, np.shape(out))
            compressed = np.reshape(vmap(lambda u: pullback(u)[0])(seeds), (len(seeds), -1))
            backward = ~forward
            values[backward] = compressed[self.row_colours[rows[backward]], cols[backward]]
        return sparse.csr_array((values, (rows, cols)), shape=self.pattern.shape)


def _jacobian_plan(mode: str, pattern, order: str | None, in_shape, out_shape) -> JacobianPlan:
    m, n = pattern.shape
    none_m, none_n = np.full(m, -1), np.full(n, -1)
    nnz = pattern.nnz
    if mode == "forward":
        columns = colour_for(mode, pattern, order)
        return JacobianPlan(
            mode, pattern, none_m, columns, np.ones(nnz, bool), "", in_shape, out_shape
        )
    if mode == "reverse":
        rows = colour_for(mode, pattern, order)
        return JacobianPlan(
            mode, pattern, rows, none_n, np.zeros(nnz, bool), "", in_shape, out_shape
        )
    rows, columns = colour_for(mode, pattern, order)
    entries = pattern.tocoo()
    by_column = np.zeros(nnz, dtype=bool)
    seeded = columns[entries.col] >= 0
    counts = colours_in_rows(pattern, columns)
    by_column[seeded] = counts[entries.row[seeded], columns[entries.col[seeded]]] == 1
    return JacobianPlan(mode, pattern, rows, columns, by_column, "", in_shape, out_shape)


def prepare_jacobian(
    f: Callable,
    x,
    mode: str = "auto",
    *,
    pattern=None,
    order: str | None = None,
    local: bool = False,
) -> JacobianPlan:
    """Detect (or take) the pattern of ``f``'s Jacobian at ``x``'s shape and colour it.

    ``mode="auto"`` colours the pattern all three ways and keeps the one with
    the fewest passes (JVPs plus VJPs; a tie goes to forward, then reverse,
    which keep no tape or fewer of them); the plan's ``reason`` says why.
    ``order`` names a vertex ordering, or ``"best"`` for the fewest colours
    over all of them; by default each mode uses its own (:data:`DEFAULT_ORDERS`).
    ``local=True`` uses the pattern at this ``x`` only
    (see :func:`~adcompare.sparsity.jacobian_pattern`).

    >>> import adcompare as ad
    >>> plan = prepare_jacobian(lambda x: x[1:] - x[:-1], [1.0, 2.0, 4.0, 7.0])
    >>> plan.mode, plan.forward_passes, plan.reverse_sweeps
    ('forward', 2, 0)
    """
    x = np.asarray(as_float(x))
    if pattern is None:
        pattern = jacobian_pattern(f, x, local=local)
    pattern = sparse.csr_array(pattern, dtype=bool)
    out_shape = shape_of(f(x))
    if pattern.shape != (math.prod(out_shape), x.size):
        raise ValueError(
            f"sparse_jacobian: a pattern of shape {pattern.shape} does not fit a Jacobian of "
            f"{math.prod(out_shape)} outputs and {x.size} inputs"
        )
    if mode in JACOBIAN_MODES:
        plan = _jacobian_plan(mode, pattern, order, x.shape, out_shape)
        plan.reason = (
            f"{mode} asked for: {plan.forward_passes} JVP(s), {plan.reverse_sweeps} VJP(s)"
        )
        return plan
    if mode != "auto":
        known = ", ".join(repr(m) for m in ("auto", *JACOBIAN_MODES))
        raise ValueError(f"sparse_jacobian: unknown mode {mode!r}; use one of {known}")
    plans = [_jacobian_plan(m, pattern, order, x.shape, out_shape) for m in JACOBIAN_MODES]
    best = min(plans, key=lambda p: p.passes)
    counts = ", ".join(f"{p.mode} {p.forward_passes}+{p.reverse_sweeps}" for p in plans)
    best.reason = (
        f"{best.mode} needs the fewest passes (JVPs+VJPs: {counts}; "
        f"dense: {x.size} JVPs or {math.prod(out_shape)} VJPs)"
    )
    return best


def sparse_jacobian(
    f: Callable,
    mode: str = "auto",
    *,
    pattern=None,
    order: str | None = None,
    local: bool = False,
) -> Callable:
    """The Jacobian of ``f`` as a ``scipy.sparse`` matrix, one pass per colour.

    ``mode`` is ``"forward"`` (one JVP per column colour: columns that share
    no row are seeded together), ``"reverse"`` (one VJP per row colour),
    ``"bidirectional"`` (both, with a star bicolouring: an arrowhead takes 3
    passes where either mode alone takes ``n``) or ``"auto"`` (the fewest
    passes; the returned function's ``last_plan.reason`` says why). For a
    Jacobian you know to be symmetric (the Jacobian of a gradient), ``"star"``
    and ``"acyclic"`` colour it as a Hessian: one JVP per colour, often fewer
    than columns need (a tridiagonal one: 2 acyclic colours against 3
    columns); the values are wrong if it is not symmetric. ``order`` is as in
    :func:`prepare_jacobian`. The pattern is detected by
    :func:`~adcompare.sparsity.jacobian_pattern` unless given, and the plan
    (pattern, colouring) is kept per input shape, so later calls only run the
    passes (with ``local=True`` the pattern holds at one point only, so it is
    detected again at every call). Rows and columns number the elements of
    ``f(x)`` and ``x`` in C order. The JVPs run as the lanes of one forward
    pass (``adcompare.count()`` shows one pass and a seed per column colour),
    the VJPs as sweeps over one recorded pass (a sweep per row colour).

    >>> import adcompare as ad
    >>> arrow = lambda x: ad.concatenate([ad.sum(x, keepdims=True), x[1:] * x[0]])
    >>> jac = sparse_jacobian(arrow)
    >>> print(jac(np.arange(1.0, 6.0)).toarray())
    [[1. 1. 1. 1. 1.]
     [2. 1. 0. 0. 0.]
     [3. 0. 1. 0. 0.]
     [4. 0. 0. 1. 0.]
     [5. 0. 0. 0. 1.]]
    >>> print(jac.last_plan.mode, jac.last_plan.passes)
    bidirectional 3
    """
    plans: dict[tuple, JacobianPlan | HessianPlan] = {}

    @functools.wraps(f)
    def sparse_jacobian_of(x):
        x = np.asarray(as_float(x))
        key = (x.shape, x.dtype.str)
        plan = plans.get(key)
        if plan is None or local:
            plan = plans[key] = _any_jacobian_plan(f, x, mode, pattern, order, local)
        sparse_jacobian_of.last_plan = plan
        if isinstance(plan, HessianPlan):
            return plan.recover(_lanes_jvp(f, x, _seeds(plan.colours, x.shape)))
        return plan(f, x)

    sparse_jacobian_of.last_plan = None
    return sparse_jacobian_of


def _any_jacobian_plan(f, x, mode, pattern, order, local) -> JacobianPlan | HessianPlan:
    """A Jacobian plan, or for a symmetric mode a Hessian plan of the Jacobian's pattern."""
    if mode in SYMMETRIC_MODES:
        found = jacobian_pattern(f, x, local=local) if pattern is None else pattern
        return prepare_hessian(f, x, mode, pattern=found, order=order)
    return prepare_jacobian(f, x, mode, pattern=pattern, order=order, local=local)


@dataclass
class HessianPlan:
    """A symmetric pattern, its star or acyclic colouring, and how to recover each entry."""

    mode: str
    pattern: sparse.csr_array
    colours: np.ndarray
    reason: str

    @property
    def passes(self) -> int:
        """One Hessian-vector product per colour."""
        return _count(self.colours)

    def __call__(self, f: Callable, x, hvp_mode: str = "fwd-over-rev") -> sparse.csr_array:
        """The Hessian of ``f`` at ``x`` with this plan's pattern."""
        x = np.asarray(as_float(x))
        seeds = _seeds(self.colours, x.shape)
        if hvp_mode == "fwd-over-rev":
            # All the HVPs in one forward pass over the gradient, one lane each.
            return self.recover(_lanes_jvp(grad(f), x, seeds))
        products = [np.ravel(hvp(f, x, seed, hvp_mode)) for seed in seeds]
        return self.recover(np.stack(products, axis=1))

    def recover(self, compressed: np.ndarray) -> sparse.csr_array:
        """The symmetric matrix from its products with the seeds, ``n × colours``."""
        if self.mode == "star":
            return _recover_direct(self.pattern, self.colours, compressed)
        return _recover_substitution(self.pattern, self.colours, compressed)


def _recover_direct(pattern, colours, compressed) -> sparse.csr_array:
    """Each entry is alone among its row's columns of its colour, in its row or in its column."""
    entries = pattern.tocoo()
    i, j = entries.row, entries.col
    counts = colours_in_rows(pattern, colours)
    alone = counts[i, colours[j]] == 1
    if not np.all(alone | (counts[j, colours[i]] == 1)):
        raise ValueError("sparse_hessian: the colouring is not a star colouring of the pattern")
    values = np.where(alone, compressed[i, colours[j]], compressed[j, colours[i]])
    return sparse.csr_array((values, (i, j)), shape=pattern.shape)


def _recover_substitution(pattern, colours, compressed) -> sparse.csr_array:
    """Peel the leaves of each two-coloured tree: a leaf's sum over its colour is one entry."""
    n = pattern.shape[0]
    graph = adjacency_graph(pattern)
    values: dict[tuple[int, int], float] = {(v, v): compressed[v, colours[v]] for v in range(n)}
    residual = compressed.copy()
    degree: dict[tuple[int, int], int] = {}
    neighbours: dict[tuple[int, int], set[int]] = {}
    for v in range(n):
        for w in graph.indices[graph.indptr[v] : graph.indptr[v + 1]]:
            neighbours.setdefault((v, int(colours[w])), set()).add(int(w))
    for key, found in neighbours.items():
        degree[key] = len(found)
    leaves = [key for key, d in degree.items() if d == 1]
    while leaves:
        v, c = leaves.pop()
        if degree[(v, c)] != 1:
            continue
        (w,) = neighbours[(v, c)]
        entry = residual[v, c]
        values[(v, w)] = values[(w, v)] = entry
        neighbours[(v, c)].discard(w)
        degree[(v, c)] = 0
        back = (w, int(colours[v]))
        neighbours[back].discard(v)
        residual[w, colours[v]] -= entry
        degree[back] -= 1
        if degree[back] == 1:
            leaves.append(back)
    rows, cols = pattern.nonzero()
    missing = [(a, b) for a, b in zip(rows, cols) if (int(a), int(b)) not in values]
    if missing:
        raise ValueError("sparse_hessian: the colouring is not an acyclic colouring of the pattern")
    data = [values[(int(a), int(b))] for a, b in zip(rows, cols)]
    return sparse.csr_array((data, (rows, cols)), shape=pattern.shape)


def prepare_hessian(
    f: Callable,
    x,
    mode: str = "auto",
    *,
    pattern=None,
    order: str | None = None,
    local: bool = False,
) -> HessianPlan:
    """Detect (or take) the Hessian pattern of a scalar ``f`` and colour it.

    ``mode`` is ``"star"`` (direct recovery), ``"acyclic"`` (fewer colours,
    recovered by substitution) or ``"auto"`` (the fewer colours; a tie goes
    to star, whose recovery is a lookup). ``order`` is as in
    :func:`prepare_jacobian`.

    >>> import adcompare as ad
    >>> plan = prepare_hessian(lambda x: ad.sum(x[1:] * x[:-1]), np.ones(6))
    >>> plan.mode, plan.passes
    ('acyclic', 2)
    """
    x = np.asarray(as_float(x))
    if pattern is None:
        pattern = hessian_pattern(f, x, local=local)
    pattern = sparse.csr_array(pattern, dtype=bool)
    pattern = sparse.csr_array(pattern + pattern.T + sparse.eye_array(x.size, dtype=bool))
    if pattern.shape != (x.size, x.size):
        raise ValueError(
            f"sparse_hessian: a pattern of shape {pattern.shape} does not fit {x.size} inputs"
        )
    colourings = {
        "star": lambda: colour_for("star", pattern, order),
        "acyclic": lambda: colour_for("acyclic", pattern, order),
    }
    if mode in colourings:
        colours = colourings[mode]()
        return HessianPlan(mode, pattern, colours, f"{mode} asked for: {_count(colours)} HVP(s)")
    if mode != "auto":
        known = ", ".join(repr(m) for m in ("auto", *HESSIAN_MODES))
        raise ValueError(f"sparse_hessian: unknown mode {mode!r}; use one of {known}")
    star, acyclic = colourings["star"](), colourings["acyclic"]()
    counts = f"star {_count(star)}, acyclic {_count(acyclic)}, dense {x.size}"
    if _count(acyclic) < _count(star):
        return HessianPlan("acyclic", pattern, acyclic, f"acyclic needs fewer HVPs ({counts})")
    return HessianPlan("star", pattern, star, f"star needs no more HVPs ({counts})")


def sparse_hessian(
    f: Callable,
    mode: str = "auto",
    *,
    pattern=None,
    order: str | None = None,
    hvp_mode: str = "fwd-over-rev",
    local: bool = False,
) -> Callable:
    """The Hessian of a scalar ``f`` as a ``scipy.sparse`` matrix, one HVP per colour.

    ``mode`` picks the colouring (see :func:`prepare_hessian`); ``hvp_mode``
    how each Hessian-vector product is taken (see ``adcompare.hvp``). The
    plan is kept per input shape; ``last_plan`` tells the mode and why.

    >>> import adcompare as ad
    >>> rosenbrock = lambda x: ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    >>> hess = sparse_hessian(rosenbrock)
    >>> print(hess(np.zeros(4)).toarray())
    [[   2.    0.    0.    0.]
     [   0.  202.    0.    0.]
     [   0.    0.  202.    0.]
     [   0.    0.    0.  200.]]
    >>> hess.last_plan.passes
    2
    """
    plans: dict[tuple, HessianPlan] = {}

    @functools.wraps(f)
    def sparse_hessian_of(x):
        x = np.asarray(as_float(x))
        key = (x.shape, x.dtype.str)
        plan = plans.get(key)
        if plan is None or local:
            plan = plans[key] = prepare_hessian(
                f, x, mode, pattern=pattern, order=order, local=local
            )
        sparse_hessian_of.last_plan = plan
        return plan(f, x, hvp_mode)

    sparse_hessian_of.last_plan = None
    return sparse_hessian_of
