"""Elementwise ops of one array given by their slope: one multiplication in each rule."""

from __future__ import annotations

from adcompare.ops.registry import defop


def unary(name, value, slope, *, sym, replay, domain=(-2.0, 2.0), saves=("args",), **fields):
    """Register an elementwise function of one array whose derivative is ``slope(out, x)``.

    ``slope`` is written with the op set's functions and is primal-shaped: it
    meets the tangent lanes (or the cotangent) in one multiplication.
    """
    return defop(
        name,
        value,
        jvp=lambda out, x, x_dot: slope(out, x) * x_dot,
        vjp=lambda out, x, out_bar: out_bar * slope(out, x),
        sym=sym,
        replay=replay,
        domain=domain,
        saves=saves,
        elementwise=True,
        **fields,
    )
