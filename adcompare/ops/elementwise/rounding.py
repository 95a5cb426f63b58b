"""Rounding, the sign, and remainders: piecewise constant, or nearly."""

from __future__ import annotations

import math
import operator

import numpy as np
import sympy

from adcompare.ops.elementwise.arithmetic import negative
from adcompare.ops.links import Links, elementwise_links
from adcompare.ops.registry import ARRAY_ONLY, REAL_ONLY, defop, raw

# --- functions with zero derivative --------------------------------------------------
#
# Rounding is piecewise constant: its derivative is 0 wherever it exists, and 0 is
# taken at the jumps too (PyTorch, JAX). SymPy leaves the derivative of floor
# unevaluated, so the SymPy counterparts are step functions that say their
# derivative is 0 (``fdiff``) and evaluate through numpy (``_imp_``).


def _step_function(name: str, numeric) -> type:
    return type(
        name,
        (sympy.Function,),
        {
            "_imp_": staticmethod(numeric),
            "fdiff": lambda self, argindex=1: sympy.S.Zero,
            # Real valued, so Abs and sign of it differentiate without re/im parts.
            "is_extended_real": True,
            "is_real": True,
        },
    )


_SymFloor = _step_function("Floor", np.floor)
_SymCeil = _step_function("Ceil", np.ceil)
_SymTrunc = _step_function("Trunc", np.trunc)
_SymRint = _step_function("Rint", np.rint)
_SymSign = _step_function("Sign", np.sign)


def _no_links(out, x, *, local, **params) -> Links:
    """A derivative that is 0 everywhere: no output element depends on an input."""
    return Links((None,))


def _remainder_sparsity(quotient):
    """x always; y (``d/dy = -quotient(x / y)``) only where the quotient is not 0, locally."""

    def rule(out, x, y, *, local):
        if not local:
            return elementwise_links(out, x, y)
        return elementwise_links(out, x, y, keep=(True, quotient(raw(x) / raw(y)) != 0))

    return rule


def _flat(name, value, sym, replay, doc, example, **fields):
    return defop(
        name,
        value,
        jvp=lambda out, x, x_dot, **params: 0.0 * x_dot,
        vjp=lambda out, x, out_bar, **params: 0.0 * out_bar,
        sparsity=_no_links,
        sym=sym,
        replay=replay,
        saves=(),
        elementwise=True,
        domain=(-3.0, 3.0),
        doc=doc + " Its derivative is 0 (also at the jumps).",
        example=example,
        **fields,
    )


floor = _flat(
    "floor",
    np.floor,
    _SymFloor,
    math.floor,
    "The largest integer not above ``x``, elementwise.",
    "floor(-1.5) -> -2.0",
    complex=REAL_ONLY,
)
ceil = _flat(
    "ceil",
    np.ceil,
    _SymCeil,
    math.ceil,
    "The smallest integer not below ``x``, elementwise.",
    "ceil(-1.5) -> -1.0",
    complex=REAL_ONLY,
)
trunc = _flat(
    "trunc",
    np.trunc,
    _SymTrunc,
    math.trunc,
    "``x`` rounded towards zero, elementwise.",
    "trunc(-1.5) -> -1.0",
    complex=REAL_ONLY,
    numpy=("trunc", "fix"),
)
sign = _flat(
    "sign",
    np.sign,
    _SymSign,
    lambda x: float((x > 0) - (x < 0)) if x == x else x,  # nan stays nan, as numpy's
    "The sign of ``x`` (-1, 0 or 1), elementwise.",
    "sign(-2.0) -> -1.0",
    complex="is z/|z| for complex numbers, which is not holomorphic",
)


def _prepare_round(x, decimals=0, out=None):
    if out is not None:
        raise TypeError("round: out= is not supported on values that carry a derivative")
    return {"decimals": int(decimals)}


round = _flat(
    "round",
    lambda x, decimals: np.round(x, decimals),
    lambda x, decimals: _SymRint(x * 10**decimals) / 10**decimals,
    ARRAY_ONLY,
    "``x`` rounded to ``decimals`` places, halves to even, as ``np.round``.",
    "round(2.5) -> 2.0",
    complex=REAL_ONLY,
    prepare=_prepare_round,
    method="round",
    numpy=("round", "around"),
    test_params=lambda shape, rng: {"decimals": int(rng.integers(0, 2))},
)


def _remainder(name, value, quotient, **fields):
    """The remainder ``x - y * quotient(x / y)`` for a rounding op ``quotient`` (floor,
    trunc): its derivative is 0, so ``d/dx = 1`` and ``d/dy = -quotient(x / y)``."""
    round_sym, round_value = quotient.op.sym, quotient.op.value
    return defop(
        name,
        value,
        complex=REAL_ONLY,
        nargs=2,
        elementwise=True,
        domain=((-3.0, 3.0), (0.5, 2.0)),
        saves=("args",),
        sym=lambda x, y: x - y * round_sym(x / y),
        jvp=(
            lambda out, x, y, x_dot: x_dot,
            lambda out, x, y, y_dot: negative(quotient(x / y)) * y_dot,
        ),
        vjp=(
            lambda out, x, y, out_bar: out_bar,
            lambda out, x, y, out_bar: out_bar * negative(quotient(x / y)),
        ),
        sparsity=_remainder_sparsity(round_value),
        **fields,
    )


mod = _remainder(
    "mod",
    np.mod,
    floor,
    operators=("__mod__", "__rmod__"),
    numpy=("mod", "remainder"),
    replay=operator.mod,
    doc="Remainder with the sign of the divisor, elementwise (``x % y``, as ``np.mod``).",
    example="mod(-1.0, 3.0) -> 2.0",
)

fmod = _remainder(
    "fmod",
    np.fmod,
    trunc,
    replay=math.fmod,
    doc="Remainder with the sign of the dividend, elementwise (C's ``fmod``, as ``np.fmod``).",
    example="fmod(-1.0, 3.0) -> -1.0",
)
