"""Sparsity patterns of Jacobians and Hessians, by abstract interpretation of the op set."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sparse

from adcompare.ops.registry import shape_of
from adcompare.runtime.dtypes import as_float
from adcompare.sparsity.tracer import Trace, Tracer

__all__ = ["hessian_pattern", "jacobian_pattern"]


def _trace(f: Callable, x, *, local: bool, hessian: bool):
    x = np.asarray(as_float(x))
    trace = Trace(x.size, local=local, hessian=hessian)
    out = f(trace.argument(x))
    return x, trace, out


def jacobian_pattern(f: Callable, x, *, local: bool = False) -> sparse.csr_array:
    """Which outputs of ``f`` depend on which inputs: a boolean ``m × n`` sparse matrix.

    Found by running ``f`` once on index-set tracers (as
    SparseConnectivityTracer.jl does): each op's record says which input
    elements each of its output elements depends on. No derivative is
    computed and nothing is probed at random. Rows and columns number the
    elements of the output and of ``x`` in C order.

    The pattern is *global* by default: valid at every input, so it can be
    computed once and reused (``where`` depends on both branches, ``maximum``
    on both arguments). ``local=True`` gives the pattern at this ``x`` only:
    ``where``, ``maximum``, ``minimum``, ``clip``, ``max`` and ``min`` keep the
    branch this ``x`` takes. A local pattern can be sparser, but it is wrong
    at inputs where another branch is taken.

    ``x`` is ``f``'s only array argument; ``x``'s values matter only for
    shapes and, with ``local=True``, branches.

    >>> import adcompare as ad
    >>> f = lambda x: ad.concatenate([x[1:] * x[:-1], ad.sum(x, keepdims=True)])
    >>> print(jacobian_pattern(f, [1.0, 2.0, 3.0]).toarray().astype(int))
    [[1 1 0]
     [0 1 1]
     [1 1 1]]
    >>> g = lambda x: ad.maximum(x[0], x[1])
    >>> print(jacobian_pattern(g, [1.0, 2.0]).toarray())
    [[ True  True]]
    >>> print(jacobian_pattern(g, [1.0, 2.0], local=True).toarray())
    [[False  True]]
    """
    x, trace, out = _trace(f, x, local=local, hessian=False)
    if isinstance(out, Tracer) and out._trace is trace:
        return out.jac.astype(bool).tocsr()
    return sparse.csr_array((int(np.prod(shape_of(out))), x.size), dtype=bool)


def hessian_pattern(f: Callable, x, *, local: bool = False) -> sparse.csr_array:
    """Which pairs of inputs of a scalar ``f`` interact: the boolean ``n × n`` Hessian pattern.

    Tracers carry, besides the inputs each element depends on, the input
    pairs whose second derivative may be non-zero: ``x * y`` links ``x`` and
    ``y``, ``x + y`` does not, ``exp(x)`` links ``x`` with itself. Linear ops
    (sums, indexing, reshapes, ``maximum`` and ``abs`` almost everywhere)
    pass pairs through without adding any. Global and local as in
    :func:`jacobian_pattern`. The result is symmetric.

    >>> import adcompare as ad
    >>> f = lambda x: x[0] * x[1] + ad.exp(x[2]) + x[3]
    >>> print(hessian_pattern(f, [1.0, 2.0, 3.0, 4.0]).toarray().astype(int))
    [[0 1 0 0]
     [1 0 0 0]
     [0 0 1 0]
     [0 0 0 0]]
    """
    x, trace, out = _trace(f, x, local=local, hessian=True)
    size = int(np.prod(shape_of(out)))
    if size != 1:
        raise ValueError(
            f"hessian_pattern: f returned {size} values; a Hessian needs a scalar "
            "function (sum the outputs, or use jacobian_pattern)"
        )
    n = x.size
    if not (isinstance(out, Tracer) and out._trace is trace):
        return sparse.csr_array((n, n), dtype=bool)
    pairs = out.hess.tocoo().col.astype(np.int64)
    rows, cols = pairs // n, pairs % n
    data = np.ones(2 * len(pairs), dtype=bool)
    both = (np.concatenate([rows, cols]), np.concatenate([cols, rows]))
    return sparse.csr_array((data, both), shape=(n, n), dtype=bool)
