"""Jacobians by cross-country elimination on the linearized computational graph.

Forward and reverse mode are two orders of one process: eliminating the
intermediate vertices of the graph whose edges carry local partial
derivatives (Griewank and Walther, *Evaluating Derivatives*, 2nd ed.,
chapters 9 and 10). Forward mode eliminates in the order values were
computed, reverse mode in the opposite order; other orders may need fewer
multiplications, and finding the best is NP-complete (Naumann 2008).

:func:`linearize` reads the graph of ``f`` at ``x`` from the reverse engine's
tape (:mod:`.linearize`), its edges kept as blocks with their structure
(:mod:`.blocks`); :func:`eliminate` follows an order to the Jacobian and
counts what each step multiplies and adds (:mod:`.graph`, :mod:`.orders`).

>>> import numpy as np
>>> import adcompare as ad
>>> from adcompare.elimination import jacobian
>>> jacobian(lambda x: ad.sin(x) * x[0], np.array([1.0, 2.0]), order="reverse").round(3)
array([[ 1.382,  0.   ],
       [ 0.909, -0.416]])
"""

from collections.abc import Callable, Sequence

import numpy as np

from adcompare.elimination.blocks import Block, product, product_multiplications, total
from adcompare.elimination.graph import LinearGraph, Step
from adcompare.elimination.linearize import linearize, local_block
from adcompare.elimination.orders import MAX_EXACT, ORDERS, Elimination, eliminate, optimal_order
from adcompare.elimination.picture import draw_order, draw_orders
from adcompare.elimination.steps import describe

__all__ = [
    "MAX_EXACT",
    "ORDERS",
    "Block",
    "Elimination",
    "LinearGraph",
    "Step",
    "describe",
    "draw_order",
    "draw_orders",
    "eliminate",
    "jacobian",
    "linearize",
    "local_block",
    "optimal_order",
    "product",
    "product_multiplications",
    "total",
]


def jacobian(f: Callable, x, order: str | Sequence = "markowitz") -> np.ndarray:
    """``f``'s Jacobian at ``x`` by vertex elimination in ``order``, shaped
    ``out.shape + x.shape`` as ``jacfwd`` and ``jacrev`` give it.

    >>> import adcompare as ad
    >>> jacobian(lambda x: x[0] * x[1], np.array([2.0, 3.0]))
    array([3., 2.])
    """
    graph = linearize(f, x)
    in_shape, out_shape = graph.shapes
    return eliminate(graph, order).jacobian.reshape(out_shape + in_shape)
