"""Rules derived from an op's structure, and what its rules read.

JAX's ``deflinear``/``defbilinear``, autograd's ``def_linear`` and PyTorch's
``auto_linear`` derive the rules of a linear op from the op itself; the same
holds here for three kinds of record, each stating its mathematics once:

``linear=transpose``
    the op is linear in its one array: its JVP is the op applied to the
    tangent, its VJP the given transpose (which may read ``x`` for its shape
    or dtype, as an FFT's does).
``bilinear=(transpose_x, transpose_y)``
    the op is linear in each of its two arrays: the JVP of ``f(x, y)`` is
    ``f(x_dot, y)`` plus ``f(x, y_dot)``, each VJP the given transpose.
``slope=s`` or ``reciprocal_slope=r``
    an elementwise op: for one array the JVP is ``s(out, x) * x_dot`` and the
    VJP ``s(out, x) * out_bar``, or ``x_dot / r(out, x)`` and ``out_bar / r(out,
    x)`` (``log`` divides by ``x`` in one op instead of multiplying by ``1 / x``):
    one rule serves both modes. An op of two arrays gives one slope per
    argument, ``slope=(s_x, s_y)`` with ``s_x(out, x, y)``.

:func:`vjp_reads` tells from a rule's code which of ``out``, ``x``, ``y``, ...
it reads, so ``defop`` can check ``saves`` and ``Hints.vjp_reads`` against the
rules (or fill ``saves`` in).
"""

from __future__ import annotations

import dis

from adcompare.ops.registry.dispatch import apply
from adcompare.ops.registry.records import ARG_NAMES
from adcompare.runtime.boxes import Box

#: ``derived`` of an op whose JVP is the op applied to the tangent (``linear=``).
LINEAR = "linear"
#: ``derived`` of an op whose JVP applies it to one tangent at a time (``bilinear=``).
BILINEAR = "bilinear"
#: ``derived`` of an elementwise op whose two rules meet one slope (``slope=``).
SLOPE = "slope"


def derived_rules(name: str, given: dict, nargs: int | None, record) -> tuple:
    """``(jvp, vjp, kind)`` from ``defop``'s one deriving keyword in ``given``.

    ``record()`` returns the op's record once it exists (a linear op's JVP
    applies the op itself).
    """
    ((keyword, rule),) = given.items()
    if keyword == "bilinear" and not (isinstance(rule, tuple) and len(rule) == 2 == nargs):
        raise ValueError(
            f"op {name!r}: bilinear= takes the two transposes (transpose_x, transpose_y) "
            "of an op of nargs=2"
        )
    if keyword == "linear" and nargs != 1:
        raise ValueError(f"op {name!r}: linear= is for an op of one array (nargs=1)")
    count = len(rule) if isinstance(rule, tuple) else 1
    if DERIVING[keyword][1] == SLOPE and count != nargs:
        raise ValueError(
            f"op {name!r}: {keyword}= gives {count} slope(s) for nargs={nargs}; give one "
            "per argument"
        )
    make, kind = DERIVING[keyword]
    return (*make(rule, record), kind)


def _linear(transpose, record):
    def jvp(out, x, x_dot, **params):
        return apply(record(), (x_dot,), params)

    return (jvp,), transpose


def _bilinear(transposes, record):
    def jvp_x(out, x, y, x_dot, **params):
        return _apply_bilinear(record(), x_dot, y, params)

    def jvp_y(out, x, y, y_dot, **params):
        return _apply_bilinear(record(), x, y_dot, params)

    return (jvp_x, jvp_y), transposes


def _apply_bilinear(op, x, y, params):
    """``op`` on two values; on plain values, its numpy value directly, as the operator
    ``x_dot * y`` that ``multiply``'s hand-written rule used computes it (no dispatch)."""
    if isinstance(x, Box) or isinstance(y, Box):
        return apply(op, (x, y), params)
    return op.value(x, y, **params)


def _slope(slopes, record):
    return _per_position(slopes, divide=False)


def _reciprocal_slope(reciprocals, record):
    return _per_position(reciprocals, divide=True)


def _per_position(slopes, *, divide: bool) -> tuple:
    """The JVP and VJP rules of each position from its slope (one per argument)."""
    slopes = slopes if isinstance(slopes, tuple) else (slopes,)
    rules = tuple(_slope_rule(slope, len(slopes), divide) for slope in slopes)
    return rules, rules


def _slope_rule(slope, nargs: int, divide: bool):
    """``slope * t``, or ``t / slope`` with ``divide``, for the tangent or the cotangent
    ``t``: the slope is a number per element, so one rule serves both modes, spending
    one operation on the slope."""
    if nargs == 1:

        def rule(out, x, t):
            return t / slope(out, x) if divide else slope(out, x) * t

    else:

        def rule(out, x, y, t):
            return t / slope(out, x, y) if divide else slope(out, x, y) * t

    rule.reads = _reads_of(slope, ("out", *ARG_NAMES[:nargs]))
    return rule


#: The ``defop`` keywords that derive rules: how each makes them, and the kind it records.
DERIVING = {
    "linear": (_linear, LINEAR),
    "bilinear": (_bilinear, BILINEAR),
    "slope": (_slope, SLOPE),
    "reciprocal_slope": (_reciprocal_slope, SLOPE),
}


#: Functions that read only the shape of their one argument: a value the tape did not
#: keep is a placeholder that knows its shape, so reading it this way needs no saving.
SHAPE_READERS = frozenset({"shape_of", "ndim_of"})


def _reads_of(function, names: tuple[str, ...]) -> dict[str, bool] | None:
    """Which of ``names`` (the function's first parameters, in order) its code reads:
    ``{name: True}`` for a value read, ``False`` where it reads only the shape."""
    code = getattr(function, "__code__", None)
    if code is None or code.co_argcount < len(names):
        return None
    params = dict(zip(code.co_varnames, names))
    reads = {params[name]: True for name in code.co_cellvars if name in params}
    instructions = list(dis.get_instructions(code))
    for before, instruction, after in zip(
        [None, *instructions], instructions, [*instructions[1:], None]
    ):
        name = params.get(instruction.argval) if instruction.opname.startswith("LOAD_") else None
        if name is not None:
            reads[name] = reads.get(name, False) or not _shape_read(before, after)
    return reads


def _shape_read(before, after) -> bool:
    """Whether a value loaded between these instructions is the one argument of a call
    to one of :data:`SHAPE_READERS` (``shape_of(x)``)."""
    return (
        before is not None
        and before.opname == "LOAD_GLOBAL"
        and before.argval in SHAPE_READERS
        and after is not None
        and after.opname in ("PRECALL", "CALL")
        and after.arg == 1
    )


def vjp_reads(rule, nargs: int) -> dict[str, bool] | None:
    """What a VJP rule ``rule(out, x, ..., out_bar, **params)`` reads of ``out`` and the
    arguments, from its code: ``{name: True}`` for a value read, ``False`` for a read of
    the shape only (``None``: not a plain function, so unknown).

    >>> vjp_reads(lambda out, x, y, out_bar: out_bar * y, 2)
    {'y': True}
    >>> vjp_reads(lambda out, x, out_bar: reshape(out_bar, shape_of(x)), 1)
    {'x': False}
    """
    reads = getattr(rule, "reads", None)
    if reads is not None:
        return reads
    return _reads_of(rule, ("out", *ARG_NAMES[:nargs]))
