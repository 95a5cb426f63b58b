"""``defop``: register a primitive and make the function users call."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from adcompare.ops.registry.dispatch import apply, apply_plain
from adcompare.ops.registry.numpy_names import default_numpy_names, register_numpy_names
from adcompare.ops.registry.records import ARG_NAMES, NO_HINTS, OPS, Hints, OpDef
from adcompare.runtime.boxes import Box


def _ufunc_into(value) -> Callable | None:
    """``value(*args, out=out)`` when ``value`` is a numpy ufunc with one output."""
    if not (isinstance(value, np.ufunc) and value.nout == 1):
        return None

    def into(out, *args):
        value(*args, out=out)

    return into


def _tuple_rule(rule) -> tuple:
    if rule is None or isinstance(rule, tuple):
        return rule
    return (rule,)


def defop(name: str, value: Callable, *, jvp, vjp, **fields: Any) -> Callable:
    """Register a primitive and return its public function.

    The fields are :class:`OpDef`'s, given by keyword. ``saves`` names what
    the VJP rules need from the forward pass: ``"args"`` (the primal inputs)
    and/or ``"out"``; rules receive ``None`` for what is not saved, and the
    tape holds only what is. ``prepare(*args, **params)`` normalises static
    parameters (axes, shapes, indices) once, before dispatch. ``numpy``
    defaults to the op's own name, ``label`` to it capitalised. ``example``
    is a doctest expression whose printed value follows after ``->``.
    ``batch(args, batched, **params)`` is the op's batching rule for ``vmap``
    (or ``LEADING_AXIS``; see :mod:`adcompare.ops.batching`); elementwise ops
    derive theirs. A user's op is registered the same way:

    >>> import numpy as np
    >>> cube = defop(
    ...     "cube_example", lambda x: x**3, sym=lambda x: x**3, numpy=(),
    ...     jvp=lambda out, x, x_dot: 3.0 * x * x * x_dot,
    ...     vjp=lambda out, x, out_bar: out_bar * 3.0 * x * x)
    >>> import adcompare as ad
    >>> print(ad.grad(cube)(2.0))
    12.0
    >>> del OPS["cube_example"]
    """
    if name in OPS:
        raise ValueError(f"op {name!r} is registered twice")
    fields = _record_fields(name, value, fields)
    if fields.get("nargs", 1) is not None:
        jvp, vjp = _tuple_rule(jvp), _tuple_rule(vjp)
    module = sys._getframe(1).f_globals.get("__name__", "")
    op = OpDef(name=name, value=value, jvp=jvp, vjp=vjp, module=module, **fields)
    op.fn = op.api = _public_function(op)
    OPS[name] = op
    register_numpy_names(op.numpy, op.fn)
    return op.fn


#: The fields ``defop`` takes by keyword: :class:`OpDef`'s, less those it fills in itself.
DEFOP_FIELDS = frozenset(field.name for field in dataclasses.fields(OpDef) if field.init) - {
    "name",
    "value",
    "jvp",
    "vjp",
    "fn",
    "api",
    "module",
}


def _record_fields(name: str, value: Callable, fields: dict) -> dict:
    """``defop``'s keyword fields in the record's types, with the defaults that depend on
    the op (its label, numpy names and ``into`` hint)."""
    unknown = fields.keys() - DEFOP_FIELDS
    if unknown:
        raise TypeError(
            f"defop({name!r}): unknown field(s) {sorted(unknown)}; "
            f"the fields are OpDef's: {sorted(DEFOP_FIELDS)}"
        )
    hints = _checked_hints(name, fields.get("nargs", 1), fields.get("hints", NO_HINTS))
    if fields.get("elementwise") and hints.into is None:
        hints = dataclasses.replace(hints, into=_ufunc_into(value))
    numpy = fields.get("numpy")
    return {
        **fields,
        "saves": frozenset(fields.get("saves", ("args", "out"))),
        "label": fields.get("label") or name.capitalize(),
        "operators": tuple(fields.get("operators", ())),
        "numpy": default_numpy_names(name) if numpy is None else tuple(numpy),
        "cases": tuple(fields.get("cases", ())),
        "hints": hints,
    }


def _checked_hints(name: str, nargs: int | None, hints: Hints) -> Hints:
    negates = hints.vjp_negates
    if negates is not None and (nargs is None or len(negates) != nargs):
        raise ValueError(f"op {name!r}: vjp_negates needs one bool per argument position")
    vjp_reads = hints.vjp_reads
    if vjp_reads is None:
        return hints
    known = {*ARG_NAMES[: nargs or 0], "out"}
    if len(vjp_reads) != nargs or not all(set(names) <= known for names in vjp_reads):
        raise ValueError(
            f"op {name!r}: vjp_reads needs one tuple per argument position, "
            f"naming only {sorted(known)}"
        )
    return dataclasses.replace(hints, vjp_reads=tuple(tuple(names) for names in vjp_reads))


def _public_function(op: OpDef) -> Callable:
    """The function users call: checks the array count, normalises static parameters."""
    name, nargs, prepare = op.name, op.nargs, op.prepare
    if prepare is None and nargs == 1:  # apply's choice of engine, for one argument

        def fn(*args, **params):
            if len(args) != 1:
                raise TypeError(f"{name}() takes 1 array argument(s), got {len(args)}")
            x = args[0]
            if isinstance(x, Box):
                return x.apply_op(op, x.level, args, params)
            return apply_plain(op, args, params)

    elif prepare is None:

        def fn(*args, **params):
            if nargs is not None and len(args) != nargs:
                raise TypeError(f"{name}() takes {nargs} array argument(s), got {len(args)}")
            return apply(op, args, params)

    elif nargs is None:

        def fn(*args, **params):
            return apply(op, args, prepare(*args, **params))

    else:

        def fn(*args, **params):
            # Positional arguments past the arrays are static parameters (axis, shape, ...).
            return apply(op, args[:nargs], prepare(*args, **params))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _docstring(op)
    fn.op = op
    fn.prepared = _prepared_function(op)
    return fn


def _prepared_function(op: OpDef) -> Callable:
    """``op`` called with its static parameters already in the form ``prepare`` gives.

    Derivative rules pass parameters they computed in that form (a shape as a
    tuple of ints, axes sorted and negative, an index ``prepare`` checked
    already): skipping ``prepare`` spares its checks on every backward sweep.

    >>> from adcompare.ops import reshape
    >>> print(reshape.prepared([1.0, 2.0], shape=(2, 1)))
    [[1.]
     [2.]]
    """

    def prepared(*args, **params):
        return apply(op, args, params)

    prepared.__name__ = prepared.__qualname__ = f"{op.name}.prepared"
    return prepared


def _docstring(op: OpDef) -> str:
    text = op.doc or f"The primitive ``{op.name}``."
    if op.example:
        expr, _, expected = op.example.partition("->")
        text += f"\n\n>>> print({expr.strip()})\n{expected.strip()}\n"
    return text
