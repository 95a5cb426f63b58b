"""The index-set tracer: a box whose derivative is the set of inputs each element depends on.

A ``Tracer`` carries its value (so shapes, indices and, for local patterns,
branches are known) and, per element, the set of input elements it depends
on: row ``e`` of a boolean sparse matrix (``size × n``). For Hessian
patterns it also carries, per element, the set of input pairs whose second
derivative may be non-zero: row ``e`` of a ``size × n²`` matrix, pair
``(p, q)`` at column ``p * n + q``.

Like ``Dual`` and ``Tensor`` it knows no op: it asks
:func:`adcompare.sparsity.rules.links_of` what the op's record says.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sparse

from adcompare.engines.box import ArrayBox
from adcompare.ops.registry import Box, OpDef, apply, mixed_levels_error, new_level, shape_of
from adcompare.sparsity.rules import links_of

__all__ = ["Trace", "Tracer"]


def _empty(rows: int, cols: int) -> sparse.csr_array:
    return sparse.csr_array((rows, cols), dtype=bool)


def _links_matrix(rows, cols, shape) -> sparse.csr_array:
    data = np.ones(len(rows), dtype=bool)
    return sparse.csr_array((data, (rows, cols)), shape=shape)


def _row_outer(first: sparse.csr_array, second: sparse.csr_array, n: int) -> sparse.csr_array:
    """Row ``t``: every pair ``p * n + q``, ``p`` in ``first[t]`` and ``q`` in ``second[t]``."""
    first, second = first.tocsr(), second.tocsr()
    first.sort_indices()
    rows_of_first = np.repeat(np.arange(first.shape[0]), np.diff(first.indptr))
    counts = np.diff(second.indptr)[rows_of_first]
    p = np.repeat(first.indices, counts)
    starts = np.repeat(second.indptr[:-1][rows_of_first], counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    q = second.indices[starts + offsets]
    rows = np.repeat(rows_of_first, counts)
    return _links_matrix(rows, p.astype(np.int64) * n + q, (first.shape[0], n * n))


class Trace:
    """One tracing run: ``n`` inputs, global or local, with or without Hessian pairs."""

    def __init__(self, n: int, *, local: bool, hessian: bool):
        self.n = n
        self.local = local
        self.hessian = hessian
        self.level = new_level()

    def argument(self, value, first: int = 0) -> Tracer:
        """``value`` as an input: its elements are inputs ``first, first + 1, ...``."""
        value = np.asarray(value, dtype=np.result_type(value, np.float64))
        size = value.size
        numbers = np.arange(size)
        jac = _links_matrix(numbers, numbers + first, (size, self.n))
        hess = _empty(size, self.n * self.n) if self.hessian else None
        return Tracer(self, value, jac, hess)

    def depending_on(self, value, inputs) -> Tracer:
        """``value`` with every element depending on each of ``inputs``."""
        size = np.size(value)
        cols = np.tile(np.asarray(inputs, dtype=np.int64), size)
        rows = np.repeat(np.arange(size), len(inputs))
        return Tracer(self, value, _links_matrix(rows, cols, (size, self.n)), None)

    def dependencies(self, value) -> np.ndarray:
        """The inputs any element of ``value`` depends on (none for a constant)."""
        if isinstance(value, Tracer) and value._trace is self:
            return np.unique(value.jac.indices)
        return np.zeros(0, dtype=np.int64)

    def run(self, op: OpDef, args: tuple, params: dict):
        values, tracers = [], []
        for a in args:
            if isinstance(a, Tracer) and a._trace is self:
                values.append(a.primal)
                tracers.append(a)
            elif isinstance(a, Box) and a._level == self.level:
                raise mixed_levels_error(op, "Tracer", a)
            else:
                values.append(a)
                tracers.append(None)
        out = apply(op, tuple(values), params)
        links = links_of(
            op, out, tuple(values), params, local=self.local, second_order=self.hessian
        )
        size = int(np.size(out))
        jac = _empty(size, self.n)
        hess = _empty(size, self.n * self.n) if self.hessian else None
        for tracer, value, link in zip(tracers, values, links.inputs):
            if tracer is None or link is None:
                continue
            select = _links_matrix(*link, (size, int(np.size(value))))
            jac = jac + select @ tracer.jac
            if hess is not None:
                hess = hess + select @ tracer.hess
        if hess is not None:
            for i, j, rows, a, b in links.interactions:
                if tracers[i] is None or tracers[j] is None or not len(rows):
                    continue
                pairs = _row_outer(tracers[i].jac[a], tracers[j].jac[b], self.n)
                gather = _links_matrix(rows, np.arange(len(rows)), (size, len(rows)))
                hess = hess + gather @ pairs
        return Tracer(self, out, jac, hess)


class Tracer(ArrayBox):
    """A value with the index sets of the inputs each of its elements depends on."""

    __slots__ = ("_trace", "hess", "jac", "primal")

    def __init__(self, trace: Trace, primal, jac, hess):
        self._trace = trace
        self._level = trace.level
        self.primal = np.asarray(primal)
        self.jac = jac
        self.hess = hess

    def _raw_value(self):
        return self.primal

    def _carries_derivative(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "converting a traced value to a numpy array would lose its dependencies; "
            "build the function from adcompare ops"
        )

    def __repr__(self) -> str:
        return f"Tracer(shape={shape_of(self.primal)}, links={self.jac.nnz})"

    def _apply(self, op: OpDef, level: int, args: tuple, params: dict):
        return self._trace.run(op, args, params)
