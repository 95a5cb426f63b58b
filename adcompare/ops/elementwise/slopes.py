"""Elementwise ops of one array given by their slope: one multiplication (or one
division) in each rule."""

from __future__ import annotations

from adcompare.ops.registry import defop


def unary(name, value, slope=None, *, sym, replay, domain=(-2.0, 2.0), **fields):
    """Register an elementwise function of one array whose derivative is ``slope(out, x)``.

    ``slope`` is written with the op set's functions and is primal-shaped: it
    meets the tangent lanes (or the cotangent) in one multiplication. Give
    ``reciprocal_slope=r`` instead for a derivative ``1 / r(out, x)``: the
    rules divide by it in one op (``log``'s is ``x``). ``saves`` follows from
    what the slope reads (see ``defop``).

    >>> from adcompare.ops import OPS
    >>> OPS["sin"].derived, sorted(OPS["sin"].saves), sorted(OPS["exp"].saves)
    ('slope', ['args'], ['out'])
    """
    if slope is not None:
        fields["slope"] = slope
    return defop(name, value, sym=sym, replay=replay, domain=domain, elementwise=True, **fields)
