"""The decisions ops take from their arguments' values, ready for records to declare.

An op whose result depends on a choice its inputs' values make (the order
``sort`` puts elements in, the positions an index argument names, the sign
``slogdet`` returns) lists it in ``decided_by_values``; these are the ones the
op set declares (see :class:`~adcompare.ops.registry.records.Decision`).

>>> import numpy as np
>>> ORDER.decide(np.array([[2.0, 1.0], [0.0, 3.0]]), axis=None)
array([2, 1, 0, 3])
>>> INDICES.decide([2, 0], axis=0)
array([2, 0])
"""

from __future__ import annotations

import numpy as np

from adcompare.ops.registry.records import INDEX, PERMUTATION, SIGN, Decision


def _order(x, axis=-1, **params):
    return np.argsort(x, axis=axis, kind="stable")


def _partition_order(x, kth, axis=-1, **params):
    return np.argpartition(x, kth, axis=axis)


def _indices(indices, **params):
    return np.asarray(indices)


def _sign(x, **params):
    return np.linalg.slogdet(x).sign


#: The permutation that sorts ``x`` along ``axis`` (flattened for ``None``), ties in order.
ORDER = Decision(PERMUTATION, "x", _order)
#: The permutation ``np.argpartition`` takes around ``kth``.
PARTITION_ORDER = Decision(PERMUTATION, "x", _partition_order)
#: The positions an ``indices`` argument names.
INDICES = Decision(INDEX, "indices", _indices)
#: The positions an ``index`` parameter names (integer arrays, and masks' true entries).
INDEX_PARAMETER = Decision(INDEX, "index", lambda index, **params: index)
#: The sign of a determinant.
DETERMINANT_SIGN = Decision(SIGN, "x", _sign)
