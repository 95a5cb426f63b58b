"""A function traced on symbols (:class:`Trace`): its expressions and exact derivatives."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import sympy

from adcompare.symbolic.compiler import _Program
from adcompare.symbolic.deadline import Clock, deadline
from adcompare.symbolic.expressions import _differentiate, _to_sympy, _tree_size
from adcompare.symbolic.limits import LIMITS, _refuse


class Trace:
    """A function traced on symbols: its inputs, output expressions, and derivatives.

    ``symbols`` holds an object array of symbols per traced argument
    position (``positions``), ``output`` the output's object array (a tuple
    of them for tuple outputs). Derivative expressions are computed on
    demand and remembered, as are their compiled evaluators.

    >>> from adcompare import symbolic
    >>> t = symbolic.record(lambda x, y: x**2 * y, 2.0, 3.0)
    >>> t.gradient_expressions(0), t.hessian_expressions(0, 1)
    (2*x*y, 2*x)
    """

    def __init__(self, name, positions, symbols, output, point_dependent, work, sizes=None):
        self.name = name
        self._sizes: dict = {} if sizes is None else sizes
        self.positions: tuple[int, ...] = positions
        self.symbols: dict[int, np.ndarray] = symbols
        self.output = output
        self.point_dependent: bool = point_dependent
        self.work: int = work
        self._flat_symbols = [s for p in positions for s in symbols[p].ravel()]
        self._jacobians: dict[int, np.ndarray] = {}
        self._hessians: dict[tuple[int, int], np.ndarray] = {}
        self._compiled: dict = {}

    def __repr__(self) -> str:
        shape = tuple(o.shape for o in self.output) if self._tuple else self.output.shape
        note = ", point-dependent" if self.point_dependent else ""
        return (
            f"<symbolic Trace of {self.name}: {len(self._flat_symbols)} symbol(s), "
            f"output shape {shape}{note}>"
        )

    @property
    def _tuple(self) -> bool:
        return isinstance(self.output, tuple)

    @property
    def expressions(self):
        """The output as SymPy expression(s): an expression, a ``sympy.Array``, or a tuple."""
        if self._tuple:
            return tuple(_to_sympy(o) for o in self.output)
        return _to_sympy(self.output)

    def _single_output(self, what: str) -> np.ndarray:
        if self._tuple:
            raise TypeError(
                f"{what}: the function returned a tuple; return a single array "
                "(stack or concatenate the outputs)"
            )
        return self.output

    def _check_position(self, position: int) -> None:
        if position not in self.symbols:
            raise ValueError(
                f"argument {position} was not traced as symbols (traced: {self.positions}); "
                "record the trace with that position in argnums"
            )

    # --- derivative expressions ----------------------------------------------------------
    def jacobian_array(self, position: int) -> np.ndarray:
        """d output / d argument, an object array of shape ``out.shape + x.shape``."""
        self._check_position(position)
        if position not in self._jacobians:
            output = self._single_output("jacobian")
            symbols = self.symbols[position]
            entries = output.size * symbols.size
            if entries > LIMITS.max_entries:
                _refuse("Jacobian entries", entries, "max_entries")
            with deadline("differentiating") as clock:
                self._predict(output, symbols)
                self._jacobians[position] = _jacobian(output, symbols, clock)
        return self._jacobians[position]

    def hessian_array(self, first: int, second: int) -> np.ndarray:
        """d² output / d x_first d x_second for a scalar output, shape ``x1.shape + x2.shape``.

        Mixed partials are computed once (the upper triangle) and mirrored.
        """
        if (first, second) not in self._hessians:
            if (second, first) in self._hessians:
                other = self._hessians[second, first]
                n = self.symbols[second].ndim
                axes = tuple(range(n, other.ndim)) + tuple(range(n))
                return np.transpose(other, axes)
            output = self._single_output("hessian")
            if output.size != 1:
                raise ValueError(
                    f"hessian needs a function with a scalar output, but this one returned "
                    f"shape {output.shape}; use the Jacobian of its Jacobian for array outputs"
                )
            self._check_position(second)
            grad = self.jacobian_array(first).reshape(self.symbols[first].shape)
            symbols = self.symbols[second]
            entries = grad.size * symbols.size
            if entries > LIMITS.max_entries:
                _refuse("Hessian entries", entries, "max_entries")
            same = first == second
            with deadline("differentiating") as clock:
                self._predict(grad, symbols, half=same)
                hess = _jacobian(grad.ravel(), symbols.ravel(), clock, symmetric=same)
            self._hessians[first, second] = hess.reshape(grad.shape + symbols.shape)
        return self._hessians[first, second]

    def _predict(self, exprs: np.ndarray, symbols: np.ndarray, half: bool = False) -> None:
        """Refuse before differentiating ``exprs`` by ``symbols`` when the predicted work
        (each expression's size times the symbols it holds) exceeds ``max_derivative_size``."""
        wanted = set(symbols.ravel())
        work = 0
        for expr in exprs.ravel():
            work += _tree_size(expr, self._sizes) * len(expr.free_symbols & wanted)
        if half:
            work //= 2
        if work > LIMITS.max_derivative_size:
            _refuse("the predicted work of a derivative", work, "max_derivative_size")

    def gradient_expressions(self, position: int = 0):
        """The gradient of a scalar output as SymPy expression(s)."""
        output = self._single_output("gradient")
        _check_scalar(output.shape)
        return _to_sympy(self.jacobian_array(position).reshape(self.symbols[position].shape))

    def jacobian_expressions(self, position: int = 0):
        """The Jacobian as a SymPy expression or ``sympy.Array``."""
        return _to_sympy(self.jacobian_array(position))

    def hessian_expressions(self, first: int = 0, second: int | None = None):
        """The Hessian block d²f / dx_first dx_second as SymPy expression(s)."""
        return _to_sympy(self.hessian_array(first, first if second is None else second))

    # --- numeric evaluation ---------------------------------------------------------------
    def evaluate(self, key, args: Sequence) -> np.ndarray:
        """Evaluate derivative ``key`` (``"value"``, ``("jacobian", p)``, ``("hessian", p, q)``)
        at the traced positions of ``args``, in float64."""
        if key == "value":
            exprs = self._single_output("value")
        elif key[0] == "jacobian":
            exprs = self.jacobian_array(key[1])
        else:
            exprs = self.hessian_array(key[1], key[2])
        if key not in self._compiled:
            self._compiled[key] = _Program(self._flat_symbols, exprs)
        values = []
        for p in self.positions:
            values.extend(np.asarray(args[p], dtype=np.float64).ravel())
        with np.errstate(all="ignore"):
            return self._compiled[key](values)


def _jacobian(
    output: np.ndarray, symbols: np.ndarray, clock: Clock, symmetric: bool = False
) -> np.ndarray:
    """Each expression of ``output`` differentiated by each symbol (shape ``output.shape +
    symbols.shape``), the ``clock`` checked after each entry. ``symmetric``: ``output`` is a
    gradient by the same ``symbols``, so the lower triangle mirrors the upper one."""
    jac = np.empty(output.shape + symbols.shape, dtype=object)
    for out_index in np.ndindex(output.shape):
        expr = output[out_index]
        free = expr.free_symbols
        for in_index in np.ndindex(symbols.shape):
            if symmetric and in_index < out_index:
                jac[out_index + in_index] = jac[in_index + out_index]
                continue
            s = symbols[in_index]
            jac[out_index + in_index] = _differentiate(expr, s) if s in free else sympy.Integer(0)
            clock.check()
    return jac


def _check_scalar(shape: tuple) -> None:
    if math.prod(shape) != 1:
        raise ValueError(
            f"grad needs a function with a scalar output, but this one returned shape "
            f"{shape}; use adcompare.jacobian (or symbolic.jacobian) for array outputs, "
            "or reduce the output (e.g. with sum) first"
        )
