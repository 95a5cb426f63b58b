"""The symbolic box: ops applied to :class:`Symbolic` values apply their SymPy counterparts."""

from __future__ import annotations

import math
import operator

import numpy as np

from adcompare.engines.box import ArrayBox
from adcompare.ops import OpDef
from adcompare.ops.registry import Box, apply
from adcompare.runtime.boxes import unbox
from adcompare.symbolic.expressions import _as_expr_array, _to_sym, _to_sympy, _tree_size
from adcompare.symbolic.limits import LIMITS, NoSymbolicCounterpartError, _refuse


class _TraceState:
    """What one trace shares among its values: work done, whether values were read."""

    __slots__ = ("point_dependent", "sizes", "work")

    def __init__(self):
        self.point_dependent = False
        self.work = 0
        self.sizes: dict = {}

    def charge(self, work: int) -> None:
        self.work += work
        if self.work > LIMITS.max_work:
            _refuse("element-level op applications", self.work, "max_work")

    def measure(self, exprs: np.ndarray) -> None:
        """Refuse when an element of ``exprs`` is larger than ``max_expression_size``."""
        for expr in exprs.ravel():
            size = _tree_size(expr, self.sizes)
            if size > LIMITS.max_expression_size:
                _refuse("the size of one expression", size, "max_expression_size")


_POINT = operator.attrgetter("point")


class Symbolic(ArrayBox):
    """A SymPy expression (an object array of them) with its value at the traced point.

    Made by :func:`record` and the symbolic transforms; ops applied to it
    apply their SymPy counterparts. Reading its numeric value (comparisons,
    ``bool``, ``float``, ``raw``) marks the trace as valid at this point only.

    >>> from adcompare import symbolic
    >>> import adcompare as ad
    >>> t = symbolic.record(lambda x: ad.exp(x) * x, 0.5)
    >>> t.expressions
    x*exp(x)
    """

    __slots__ = ("_state", "expr", "point")

    @classmethod
    def _make(cls, expr: np.ndarray, point, state: _TraceState, level: int) -> Symbolic:
        self = object.__new__(cls)
        self.expr = expr
        self.point = point
        self._state = state
        self.level = level
        return self

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value."""
        return self.expr.shape

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the value at the traced point."""
        return np.result_type(self.point)

    @property
    def expression(self):
        """The value as a SymPy expression (``sympy.Array`` for arrays)."""
        return _to_sympy(self.expr)

    def raw_value(self):
        # Whoever reads the number may branch on it: the trace holds at this point only.
        self._state.point_dependent = True
        return self.point

    def _carries_derivative(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "converting a Symbolic value to a numpy array would drop its expression; "
            "use .expr for the SymPy expressions and .point for the value"
        )

    def __repr__(self) -> str:
        return f"Symbolic({self.expression})"

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        points = unbox(op, "Symbolic", Symbolic, args, level, _POINT)
        for p in points:
            if isinstance(p, Box):
                raise TypeError(
                    f"{op.name}: a symbolic value met a {type(p).__name__} from another "
                    "trace or transform; symbolic mode evaluates functions at plain numbers, "
                    "so call the symbolic transforms outside the others, not inside"
                )
        if op.sym is None:
            raise NoSymbolicCounterpartError(
                f"op {op.name!r} has no SymPy counterpart (defop(..., sym=...) gives it one), "
                "so symbolic mode cannot differentiate it; use against='complex_step' or 'fd'"
            )
        out_point = apply(op, tuple(points), params)
        out_shape = np.shape(out_point)
        exprs = [
            a.expr if isinstance(a, Symbolic) else _as_expr_array(p) for a, p in zip(args, points)
        ]
        self._state.charge(sum(e.size for e in exprs) + math.prod(out_shape))
        if op.elementwise:
            out_expr = _elementwise(op, exprs, params, out_shape)
        else:
            out_expr = _as_expr_array(op.sym(*exprs, **params))
        if out_expr.shape != out_shape:
            raise RuntimeError(
                f"the SymPy counterpart of op {op.name!r} gave shape {out_expr.shape}, but "
                f"the op's value has shape {out_shape}: the op record's sym is wrong"
            )
        self._state.measure(out_expr)
        return Symbolic._make(out_expr, out_point, self._state, level)


def _elementwise(op: OpDef, exprs: list, params: dict, shape: tuple) -> np.ndarray:
    """Apply an elementwise op's ``sym`` to each element, broadcasting like numpy.

    Array-valued static parameters (``where``'s condition, array bounds of
    ``clip``) are broadcast along with the arguments and passed per element.
    """
    arrays = [np.broadcast_to(e, shape) for e in exprs]
    scalar_params = {
        k: _to_sym(v) if isinstance(v, (float, np.floating)) else v
        for k, v in params.items()
        if np.ndim(v) == 0
    }
    array_params = {
        k: np.broadcast_to(np.asarray(v), shape) for k, v in params.items() if np.ndim(v) > 0
    }
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        element_params = {k: v[index] for k, v in array_params.items()}
        out[index] = _to_sym(op.sym(*[a[index] for a in arrays], **scalar_params, **element_params))
    return out
