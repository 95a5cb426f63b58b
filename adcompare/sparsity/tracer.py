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
from adcompare.sparsity.decisions import read_from
from adcompare.sparsity.rules import links_of

__all__ = ["Trace", "Tracer"]


def _empty(rows: int, cols: int) -> sparse.csr_array:
    return sparse.csr_array((rows, cols), dtype=bool)


def _links_matrix(rows, cols, shape) -> sparse.csr_array:
    data = np.ones(len(rows), dtype=bool)
    return sparse.csr_array((data, (rows, cols)), shape=shape)


def _gather(sets: sparse.csr_array, rows: np.ndarray, sources: np.ndarray):
    """``(rows', cols')``: row ``rows[t]`` receives every entry of row ``sources[t]`` of ``sets``.

    Done on the index arrays, never by a sparse product: a product allocates a
    work array as long as a row, and Hessian rows are ``n²`` long.
    """
    counts = np.diff(sets.indptr)[sources]
    starts = np.repeat(sets.indptr[:-1][sources], counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(rows, counts), sets.indices[starts + offsets].astype(np.int64)


def _row_outer(first, second, rows, a, b, n: int):
    """Row ``rows[t]`` receives every pair ``p * n + q``, ``p`` in ``first[a[t]]`` and ``q``
    in ``second[b[t]]``."""
    t, p = _gather(first, np.arange(len(rows)), a)
    entry, q = _gather(second, np.arange(len(t)), b[t])
    return rows[t[entry]], p[entry] * n + q


def _assemble(pieces: list, shape: tuple) -> sparse.csr_array:
    """One boolean sparse matrix from ``(rows, cols)`` pieces, duplicates merged."""
    if not pieces:
        return _empty(*shape)
    rows = np.concatenate([r for r, _ in pieces])
    cols = np.concatenate([c for _, c in pieces])
    matrix = sparse.coo_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=shape).tocsr()
    matrix.sum_duplicates()
    return matrix


class Trace:
    """One tracing run: ``n`` inputs, global or local, with or without Hessian pairs."""

    def __init__(self, n: int, *, local: bool, hessian: bool, derived: bool = True):
        self.n = n
        self.local = local
        self.hessian = hessian
        self.derived = derived  # see links_of
        self.level = new_level()
        #: Arrays computed from the traced values, by memory (see adcompare.sparsity.decisions).
        self.read: dict = {}

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
            elif isinstance(a, Box) and a.level == self.level:
                raise mixed_levels_error(op, "Tracer", a)
            else:
                values.append(a)
                tracers.append(None)
        out = apply(op, tuple(values), params)
        links = links_of(
            op,
            out,
            tuple(values),
            params,
            local=self.local,
            second_order=self.hessian,
            derived=self.derived,
            read=self.read,
        )
        size = int(np.size(out))
        jac_pieces, hess_pieces = [], []
        for tracer, link in zip(tracers, links.inputs):
            if tracer is None or link is None:
                continue
            jac_pieces.append(_gather(tracer.jac, *link))
            if self.hessian:
                hess_pieces.append(_gather(tracer.hess, *link))
        if self.hessian:
            for i, j, rows, a, b in links.interactions:
                if tracers[i] is None or tracers[j] is None or not len(rows):
                    continue
                hess_pieces.append(_row_outer(tracers[i].jac, tracers[j].jac, rows, a, b, self.n))
        jac = _assemble(jac_pieces, (size, self.n))
        hess = _assemble(hess_pieces, (size, self.n * self.n)) if self.hessian else None
        return Tracer(self, out, jac, hess)


class Tracer(ArrayBox):
    """A value with the index sets of the inputs each of its elements depends on."""

    __slots__ = ("_trace", "hess", "jac", "primal")

    def __init__(self, trace: Trace, primal, jac, hess):
        self._trace = trace
        self.level = trace.level
        self.primal = np.asarray(primal)
        self.jac = jac
        self.hess = hess

    def raw_value(self):
        """The value; in a global trace marked as read from the inputs (see
        :mod:`~adcompare.sparsity.decisions`), so that decisions taken from it are seen."""
        return self.primal if self._trace.local else read_from(self.primal, self._trace.read)

    def _carries_derivative(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "converting a traced value to a numpy array would lose its dependencies; "
            "build the function from adcompare ops"
        )

    def __repr__(self) -> str:
        return f"Tracer(shape={shape_of(self.primal)}, links={self.jac.nnz})"

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        return self._trace.run(op, args, params)
