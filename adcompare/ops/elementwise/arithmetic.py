"""The arithmetic of two arrays (``+ - * /``), negation and ``stop_gradient``."""

from __future__ import annotations

import operator

import numpy as np
import sympy

from adcompare.ops.links import Links
from adcompare.ops.registry import HOLOMORPHIC, Box, Hints, defop, raw, shape_of, unbroadcast
from adcompare.ops.shape import broadcast_to, getitem

_SCALE_DISTINCT_FROM = 2**17


def _spread_out(cotangent, factor) -> bool:
    """Whether ``cotangent`` is a large broadcast view and ``factor`` a plain number.

    A box (a traced or taped cotangent) is looked through to its plain value when
    that has the box's own shape: its strides say how the value was made (a
    broadcast view has a stride 0, at every replay as at the recording), and either
    branch computes the same numbers, so the choice changes only the work.
    """
    value = raw(cotangent)
    return (
        isinstance(value, np.ndarray)  # a tracer's value is a subclass that records
        and value.size >= _SCALE_DISTINCT_FROM
        and 0 in value.strides
        and value.shape == shape_of(cotangent)
        and not isinstance(factor, Box)
        and np.ndim(factor) == 0
    )


def scaled(cotangent, factor):
    """``cotangent * factor``, for a ``factor`` that is a plain constant number.

    A cotangent that comes from a sum or a mean is a broadcast view: along
    its stride-0 axes every element is the same number. Scaling it takes one
    multiplication per distinct value, broadcast back, instead of one per
    element (Rosenbrock's ``100 * ...`` and ``x ** 2`` under a sum). Below
    ``_SCALE_DISTINCT_FROM`` elements one full multiplication is cheaper than
    the three op calls that avoid it.
    """
    if _spread_out(cotangent, factor):
        strides = raw(cotangent).strides
        distinct = tuple(slice(0, 1) if step == 0 else slice(None) for step in strides)
        return broadcast_to(multiply(getitem(cotangent, distinct), factor), shape_of(cotangent))
    return multiply(cotangent, factor)  # the op, not ``*``: counted, and pooled when large


def _twice(cotangent, x):
    """``(2x) · cotangent``, the cotangent of ``x * x``.

    When the cotangent comes from a sum (a large broadcast view, see :func:`scaled`),
    its distinct values are doubled instead of x: ``(2·cotangent) · x`` is the same
    number (doubling is exact), in one pass over x instead of two (GMM's squared
    distances under a sum: a 1.6-million-element pass saved).
    """
    if _spread_out(cotangent, 2.0):
        return multiply(scaled(cotangent, 2.0), x)
    return scaled(cotangent, 2.0 * x)


add = defop(
    "add",
    np.add,
    operators=("__add__", "__radd__"),
    replay=operator.add,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=(),
    sym=lambda x, y: x + y,
    jvp=(lambda out, x, y, x_dot: x_dot, lambda out, x, y, y_dot: y_dot),
    vjp=(lambda out, x, y, out_bar: out_bar, lambda out, x, y, out_bar: out_bar),
    doc="Sum of two arrays, elementwise (``x + y``).",
    example="add(2.0, 3.0) -> 5.0",
)

subtract = defop(
    "subtract",
    np.subtract,
    operators=("__sub__", "__rsub__"),
    replay=operator.sub,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=(),
    label="Sub",
    sym=lambda x, y: x - y,
    jvp=(lambda out, x, y, x_dot: x_dot, lambda out, x, y, y_dot: negative(y_dot)),
    # y's share is summed down to y's shape before it is negated: fewer elements to negate.
    vjp=(
        lambda out, x, y, out_bar: out_bar,
        lambda out, x, y, out_bar: negative(unbroadcast(out_bar, shape_of(y))),
    ),
    hints=Hints(vjp_negates=(False, True)),
    doc="Difference of two arrays, elementwise (``x - y``).",
    example="subtract(2.0, 3.0) -> -1.0",
)

multiply = defop(
    "multiply",
    np.multiply,
    operators=("__mul__", "__rmul__"),
    replay=operator.mul,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    saves=("args",),
    # x * x: (2x) · out_bar, exactly out_bar · x + out_bar · x, in one product.
    hints=Hints(vjp_reads=(("y",), ("x",)), vjp_same=lambda out, x, y, out_bar: _twice(out_bar, x)),
    label="Mul",
    sym=lambda x, y: x * y,
    bilinear=(
        lambda out, x, y, out_bar: scaled(out_bar, y),
        lambda out, x, y, out_bar: scaled(out_bar, x),
    ),
    doc="Product of two arrays, elementwise (``x * y``).",
    example="multiply(2.0, 3.0) -> 6.0",
)

divide = defop(
    "divide",
    np.divide,
    operators=("__truediv__", "__rtruediv__"),
    numpy=("divide", "true_divide"),
    replay=operator.truediv,
    complex=HOLOMORPHIC,
    nargs=2,
    elementwise=True,
    domain=((-2.0, 2.0), (0.5, 2.0)),
    hints=Hints(vjp_reads=(("y",), ("y", "out"))),
    label="Div",
    sym=lambda x, y: x / y,
    # d(x/y)/dy = -out/y is formed on primals before it meets the tangent lanes.
    jvp=(
        lambda out, x, y, x_dot: x_dot / y,
        lambda out, x, y, y_dot: negative(out / y) * y_dot,
    ),
    vjp=(
        lambda out, x, y, out_bar: out_bar / y,
        lambda out, x, y, out_bar: out_bar * negative(out / y),
    ),
    doc="Quotient of two arrays, elementwise (``x / y``).",
    example="divide(3.0, 2.0) -> 1.5",
)

negative = defop(
    "negative",
    np.negative,
    operators=("__neg__",),
    replay=operator.neg,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=(),
    label="Neg",
    sym=lambda x: -x,
    linear=lambda out, x, out_bar: negative(out_bar),
    hints=Hints(vjp_negates=(True,)),
    doc="Negation, elementwise (``-x``).",
    example="negative(2.0) -> -2.0",
)


class _StopGradient(sympy.Function):
    """SymPy's face of ``stop_gradient``: its argument's value, with derivative zero."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return x
        return None

    def fdiff(self, argindex=1):
        return sympy.Integer(0)

    def _numpycode(self, printer):
        return printer._print(self.args[0])


stop_gradient = defop(
    "stop_gradient",
    np.positive,
    replay=operator.pos,
    complex="has a zero derivative by definition, which the complex step cannot see",
    elementwise=True,
    saves=(),
    label="StopGradient",
    sym=_StopGradient,
    jvp=lambda out, x, x_dot: multiply(x_dot, 0.0),
    vjp=lambda out, x, out_bar: multiply(out_bar, 0.0),
    doc=(
        "``x`` itself, treated as a constant: its JVP and VJP are zero (JAX's "
        "``lax.stop_gradient``, PyTorch's ``detach`` inside a computation)."
    ),
    example="stop_gradient(2.0) -> 2.0",
    sparsity=lambda out, x, *, local: Links((None,)),  # no output depends on x
)
