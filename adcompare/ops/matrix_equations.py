"""scipy.linalg's linear matrix equations as composites: ``solve_sylvester`` and
``solve_banded``, differentiable in every matrix, in every mode and to every order.

scipy's functions turn their arguments into numpy arrays, so on a value that
carries a derivative they raise, naming these (``adcompare.solve_sylvester``).
Both are built on ``solve``, on a dense matrix: the Sylvester equation as its
``mn × mn`` Kronecker system, costing ``O((mn)³)`` against Bartels–Stewart's
``O(m³ + n³)``, and the banded one as its full ``n × n`` matrix; they are meant for
the small systems a derivative is checked on, not for large ones.
"""

from __future__ import annotations

import numpy as np

from adcompare.ops.composite import composite
from adcompare.ops.elementwise import where
from adcompare.ops.linalg import solve
from adcompare.ops.matrix_functions import sylvester_operator, vec_solve
from adcompare.ops.registry import shape_of
from adcompare.ops.shape import getitem
from adcompare.runtime.dtypes import as_float


@composite(numpy=())
def solve_sylvester(a, b, q):
    """The solution ``x`` of ``a x + x b = q``, as ``scipy.linalg.solve_sylvester``.

    ``a`` is m × m, ``b`` n × n and ``q`` m × n; each may carry a derivative.

    >>> print(solve_sylvester([[1.0, 0.0], [0.0, 2.0]], [[3.0]], [[4.0], [10.0]]))
    [[1.]
     [2.]]
    """
    a, b, q = as_float(a), as_float(b), as_float(q)
    m, n = shape_of(a)[-1], shape_of(b)[-1]
    if shape_of(a)[-2:] != (m, m) or shape_of(b)[-2:] != (n, n) or shape_of(q)[-2:] != (m, n):
        raise ValueError(
            f"solve_sylvester: a {shape_of(a)}, b {shape_of(b)} and q {shape_of(q)} do not "
            "fit a x + x b = q; give a square a (m × m), a square b (n × n) and q of m × n"
        )
    return vec_solve(sylvester_operator(a, b), q)


@composite(numpy=())
def solve_banded(l_and_u, ab, b):
    """The solution of ``a x = b`` for ``a`` given by its bands, as
    ``scipy.linalg.solve_banded((l, u), ab, b)``: ``ab[u + i - j, j] = a[i, j]``.

    ``ab`` (``l + u + 1`` rows) and ``b`` may carry a derivative; the entries of ``ab``
    outside the band are not read, as scipy does not read them.

    >>> print(solve_banded((1, 0), [[2.0, 4.0], [1.0, 0.0]], [2.0, 9.0]))
    [1. 2.]
    """
    lower, upper = (int(count) for count in l_and_u)
    ab = as_float(ab)
    rows, n = shape_of(ab)
    if lower < 0 or upper < 0 or rows != lower + upper + 1:
        raise ValueError(
            f"solve_banded: ab has {rows} rows, but (l, u) = {tuple(l_and_u)} needs "
            f"l + u + 1 = {lower + upper + 1} (and l, u >= 0)"
        )
    i, j = np.indices((n, n))
    band = upper + i - j  # the row of ab that holds a[i, j]
    inside = (band >= 0) & (band < rows)
    dense = where(inside, getitem(ab, (np.clip(band, 0, rows - 1), j)), 0.0)
    return solve(dense, b)
