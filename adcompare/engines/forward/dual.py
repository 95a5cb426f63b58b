"""The forward engine's box: ``Dual``, a primal value with tangent lanes.

A ``Dual`` carries a primal value and its tangent. The tangent may have a
leading *lane* axis of size ``k``: one pass through the function then
computes ``k`` directional derivatives (ForwardDiff.jl's chunks), which is
how ``jacfwd`` builds a Jacobian column block by column block.

The engine knows nothing about individual ops: it asks the op record for
its JVP rule per argument and adds up the contributions.
"""

from __future__ import annotations

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.engines.box import ArrayBox, library_alternative
from adcompare.ops import OpDef, add, broadcast_to, reshape
from adcompare.ops.registry import (
    Box,
    apply,
    apply_plain,
    mixed_levels_error,
    new_level,
    pad_lanes,
    raw,
    shape_of,
)
from adcompare.runtime import cost
from adcompare.runtime.dtypes import as_float

__all__ = ["Dual"]


def _level_of(*values) -> int:
    inner = [v.level for v in values if isinstance(v, Box)]
    return new_level() if inner else 0


class Dual(ArrayBox):
    """A primal value with a tangent: ``f(Dual(x, v))`` gives ``f(x)`` and ``J·v``.

    ``tangent`` has the primal's shape (one direction) or ``(k, *shape)``
    (``k`` lanes, ``k`` directions in one pass). Omitted, it is zero.

    >>> import adcompare as ad
    >>> x = ad.Dual(2.0, 1.0)
    >>> y = 3 * x**2 + x * 3.0 + 5 * 3.0**2
    >>> print(y.primal, y.tangent)
    63.0 15.0
    >>> lanes = ad.Dual([2.0, 3.0], [[1.0, 0.0], [0.0, 1.0]])
    >>> print(ad.sum(lanes * lanes).tangent)
    [4. 6.]
    """

    __slots__ = ("_lanes", "_tangent", "primal")

    def __init__(self, primal, tangent=None, *, level: int | None = None):
        primal = as_float(primal)
        shape = shape_of(primal)
        if tangent is None:
            tangent = np.zeros(shape, dtype=np.result_type(raw(primal)))
        tangent = as_float(tangent)
        tangent_shape = shape_of(tangent)
        if tangent_shape == shape:
            lanes = None
            tangent = reshape(tangent, (1,) + shape)
        elif tangent_shape[1:] == shape and len(tangent_shape) == len(shape) + 1:
            lanes = tangent_shape[0]
        else:
            raise ValueError(
                f"Dual: a tangent of shape {tangent_shape} does not fit a primal of shape "
                f"{shape}; give shape {shape} for one direction, or (k, *{shape}) for k lanes"
            )
        self.primal = primal
        self._tangent = tangent
        self._lanes = lanes
        self.level = _level_of(primal, tangent) if level is None else level

    @classmethod
    def _make(cls, primal, tangent, lanes, level):
        return _new_dual(cls, primal, tangent, lanes, level)

    @property
    def tangent(self):
        """The tangent: shaped like the primal, or ``(k, *shape)`` with lanes."""
        if self._lanes is None:
            return reshape(self._tangent, shape_of(self.primal))
        return self._tangent

    @property
    def lanes(self) -> int:
        """How many directions this value carries (1 without lanes)."""
        return shape_of(self._tangent)[0]

    def raw_value(self):
        return self.primal

    plain_value = "x.primal; a Dual has no .detach()"

    def _carries_derivative(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            library_alternative()
            or "converting a Dual to a numpy array would drop its tangent; "
            "use .primal for the value and .tangent for the derivative (to build an "
            "array from a list holding Duals, use adcompare.array([...]))"
        )

    def __repr__(self) -> str:
        return f"Dual(primal={self.primal!r}, tangent={self.tangent!r})"

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        # runtime.boxes.unbox's split, inline: it runs once per op (see Tensor.apply_op).
        # ``nested``: a primal is itself a box (of an outer transform), so the value goes
        # through dispatch to its engine; else straight to numpy, as apply would send it.
        primals = []
        tangents = []
        lanes = None
        nested = False
        for a in args:
            if isinstance(a, Dual) and a.level == level:
                primal = a.primal
                primals.append(primal)
                tangents.append(a._tangent)
                if a._lanes is not None:
                    lanes = a._lanes
                if type(primal) is not ndarray and isinstance(primal, Box):
                    nested = True
            else:
                if isinstance(a, Box):
                    if a.level == level:
                        raise mixed_levels_error(op, "Dual", a)
                    nested = True
                primals.append(a)
                tangents.append(None)
        primals = tuple(primals)
        out = apply(op, primals, params) if nested else apply_plain(op, primals, params)
        out_shape = out.shape if type(out) is ndarray else shape_of(out)
        total = None
        if op.nargs is None:
            # A variadic op's rule takes every tangent at once.
            total = op.jvp(out, primals, tangents, **params)
            tangents = ()
        rules, elementwise, out_ndim = op.jvp, op.elementwise, len(out_shape)
        for i, tangent in enumerate(tangents):
            if tangent is None:
                continue
            rule = rules[i]  # op.jvp_at(i), without the call
            if rule is None:
                continue
            if elementwise:  # pad_lanes, called only where the primal has fewer axes
                primal = primals[i]
                ndim = primal.ndim if type(primal) is ndarray else len(shape_of(primal))
                if ndim < out_ndim:
                    tangent = pad_lanes(tangent, ndim, out_ndim)
            contribution = rule(out, *primals, tangent, **params)
            total = contribution if total is None else add(total, contribution)
        k = lanes or 1
        if total is None:
            total = np.zeros((k,) + out_shape, dtype=np.result_type(raw(out), np.float32))
        elif (total.shape if type(total) is ndarray else shape_of(total)) != (k, *out_shape):
            total = broadcast_to(total, (k,) + out_shape)
        if cost.ACTIVE:
            cost.record_forward(op.name, k, out)
        return _new_dual(Dual, out, total, lanes, level)


_allocate = object.__new__


def _new_dual(cls, primal, tangent, lanes, level) -> Dual:
    """A ``Dual`` of class ``cls`` without ``__init__``'s conversions and checks (once per
    op: a plain function, not the classmethod ``Dual._make``)."""
    self = _allocate(cls)
    self.primal = primal
    self._tangent = tangent
    self._lanes = lanes
    self.level = level
    return self
