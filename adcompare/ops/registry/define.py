"""``defop``: register a primitive and make the function users call."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from adcompare.ops.registry.composites import checked_decisions
from adcompare.ops.registry.derive import DERIVING, derived_rules, vjp_reads
from adcompare.ops.registry.dispatch import apply, apply_plain
from adcompare.ops.registry.numpy_names import default_numpy_names, register_numpy_names
from adcompare.ops.registry.records import (
    ARG_NAMES,
    ARRAY_ONLY,
    COMPLEX_RULES,
    LEADING_AXIS,
    NO_HINTS,
    OPS,
    SELECTS,
    Hints,
    OpDef,
)
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


def defop(name: str, value: Callable, *, jvp=None, vjp=None, **fields: Any) -> Callable:
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
    derive theirs. ``saves`` defaults to what the VJP rules read (``defop``
    reads their code); given, it must match it, and so must ``Hints.vjp_reads``.

    Rules derived from structure replace ``jvp`` and ``vjp`` (see
    :mod:`~adcompare.ops.registry.derive`): ``linear=transpose`` for an op
    linear in its array, ``bilinear=(transpose_x, transpose_y)``, and
    ``slope=`` or ``reciprocal_slope=`` for an elementwise op (one slope per
    argument).
    A user's op is registered the same way:

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
    deriving = {key: fields.pop(key) for key in DERIVING.keys() & fields.keys()}
    fields = _record_fields(name, value, fields)
    derived = ""
    if deriving:
        _check_deriving(name, deriving, jvp, vjp)
        jvp, vjp, derived = derived_rules(name, deriving, fields.get("nargs", 1), lambda: op)
    elif jvp is None or vjp is None:
        raise TypeError(
            f"defop({name!r}): give both jvp= and vjp=, or derive them with linear=, "
            "bilinear=, slope= or reciprocal_slope="
        )
    if fields.get("nargs", 1) is not None:
        jvp, vjp = _tuple_rule(jvp), _tuple_rule(vjp)
    fields = _checked_reads(name, vjp, fields)
    module = sys._getframe(1).f_globals.get("__name__", "")
    op = OpDef(name=name, value=value, jvp=jvp, vjp=vjp, module=module, derived=derived, **fields)
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
    "derived",
}


def _check_deriving(name: str, deriving: dict, jvp, vjp) -> None:
    if len(deriving) > 1 or jvp is not None or vjp is not None:
        given = sorted(deriving) + [key for key, rule in (("jvp", jvp), ("vjp", vjp)) if rule]
        raise TypeError(
            f"defop({name!r}): {', '.join(given)} all give rules; give one of linear=, "
            "bilinear=, slope=, reciprocal_slope= (it derives both rules), or jvp= and vjp="
        )


_SAVES_ALL = frozenset({"args", "out"})


def _checked_reads(name: str, vjp, fields: dict) -> dict:
    """``fields`` with ``saves`` filled in from the values the VJP rules read, or checked
    against them, with ``Hints.vjp_reads``; unchanged where the rules' reads are unknown.

    A rule that reads only a shape (``shape_of(x)``) needs nothing saved: the tape
    hands it a placeholder that knows the shape.
    """
    nargs, given = fields.get("nargs", 1), fields["saves"]
    reads = nargs and [{} if rule is None else vjp_reads(rule, nargs) for rule in vjp]
    if not reads or None in reads:  # variadic, or a rule that is not a plain function
        return {**fields, "saves": _SAVES_ALL if given is None else given}
    values = [frozenset(n for n, value in read.items() if value) for read in reads]
    read = frozenset().union(*values)
    saves = frozenset(
        word for word, kept in (("args", read - {"out"}), ("out", "out" in read)) if kept
    )
    if given is not None and given != saves:
        raise ValueError(
            f"op {name!r}: saves={tuple(sorted(given))}, but its VJP rules read the values "
            f"of {sorted(read) or 'nothing'}; set saves={tuple(sorted(saves))} or leave it out"
        )
    hinted = fields["hints"].vjp_reads
    if hinted is not None and [frozenset(names) for names in hinted] != values:
        raise ValueError(
            f"op {name!r}: Hints.vjp_reads={hinted}, but its VJP rules read the values of "
            f"{tuple(tuple(sorted(names)) for names in values)}; make them the same"
        )
    return {**fields, "saves": saves}


def _record_fields(name: str, value: Callable, fields: dict) -> dict:
    """``defop``'s keyword fields in the record's types, with the defaults that depend on
    the op (its label, numpy names and ``into`` hint)."""
    unknown = fields.keys() - DEFOP_FIELDS
    if unknown:
        raise TypeError(
            f"defop({name!r}): unknown field(s) {sorted(unknown)}; "
            f"the fields are OpDef's: {sorted(DEFOP_FIELDS)}"
        )
    _check_kinds(name, fields)
    unknown_saves = set(fields.get("saves") or ()) - _SAVES_ALL
    if unknown_saves or isinstance(fields.get("saves"), str):
        raise ValueError(
            f"op {name!r}: saves={fields['saves']!r}; name what the VJP rules read from the "
            "forward pass with the words 'args' (the inputs) and 'out', as a tuple"
        )
    hints = _checked_hints(name, fields.get("nargs", 1), fields.get("hints", NO_HINTS))
    if fields.get("elementwise") and hints.into is None:
        hints = dataclasses.replace(hints, into=_ufunc_into(value))
    numpy = fields.get("numpy")
    return {
        **fields,
        "saves": None if fields.get("saves") is None else frozenset(fields["saves"]),
        "label": fields.get("label") or name.capitalize(),
        "operators": tuple(fields.get("operators", ())),
        "numpy": default_numpy_names(name) if numpy is None else tuple(numpy),
        "cases": tuple(fields.get("cases", ())),
        "hints": hints,
        "decided_by_values": checked_decisions(
            name, fields.get("decided_by_values", ()), _parameter_names(fields)
        ),
        **_checked_test_fields(name, fields),
    }


def _parameter_names(fields: dict) -> set[str]:
    """The names an op's arguments and static parameters go by: the vocabulary's array
    names, and ``prepare``'s parameters."""
    prepare, nargs = fields.get("prepare"), fields.get("nargs", 1)
    names = set(ARG_NAMES[: nargs or len(ARG_NAMES)])
    return names | (set(inspect.signature(prepare).parameters) if prepare else set())


#: Fields that hold a rule or one of the status words: ``(field, words, what to give)``.
_RULE_OR_WORD = (
    ("replay", (ARRAY_ONLY,), "a scalar kernel or ARRAY_ONLY"),
    ("sparsity", (SELECTS,), "a rule sparsity(out, *args, local, **params) or SELECTS"),
    ("batch", (LEADING_AXIS,), "a rule batch(args, batched, **params) or LEADING_AXIS"),
)


def _check_kinds(name: str, fields: dict) -> None:
    """Each field that holds a rule or a status word holds one; ``complex`` is a sentence;
    ``nargs`` a positive count or ``None``; each domain interval has ``low < high``."""
    for field, words, expected in _RULE_OR_WORD:
        given = fields.get(field)
        if given is not None and not callable(given) and given not in words:
            raise ValueError(f"op {name!r}: {field}={given!r}; give {expected}")
    if not isinstance(fields.get("complex", ""), (str, type(None))):
        raise ValueError(
            f"op {name!r}: complex={fields['complex']!r}; give HOLOMORPHIC, WIRTINGER or a "
            "sentence saying why complex input is refused"
        )
    nargs = fields.get("nargs", 1)
    if nargs is not None and not (isinstance(nargs, int) and 1 <= nargs <= len(ARG_NAMES)):
        raise ValueError(f"op {name!r}: nargs={nargs!r}; give 1 to {len(ARG_NAMES)} or None")
    domain = fields.get("domain", ())
    intervals = () if callable(domain) else domain
    if intervals and isinstance(intervals[0], (int, float)):
        intervals = [intervals]
    if any(not callable(pair) and not (len(pair) == 2 and pair[0] < pair[1]) for pair in intervals):
        raise ValueError(
            f"op {name!r}: domain={domain!r}; give (low, high) with low < high, one for all "
            "arguments or one per argument, or an input maker"
        )


#: The dtypes a record may ask its tests to check.
TEST_DTYPES = ("float32", "float64", "complex128")
#: The relative error a dtype's derivatives may have, unless the record says otherwise.
DEFAULT_TOLERANCE = {"float32": 1e-3, "float64": 1e-7, "complex128": 1e-7}


def _checked_test_fields(name: str, fields: dict) -> dict:
    """The record's ``dtypes``, ``tolerance``, ``special`` and ``kinks``, defaults filled
    in, each checked."""
    complex_rules = fields.get("complex") in COMPLEX_RULES
    dtypes = tuple(fields.get("dtypes") or TEST_DTYPES[: 2 + complex_rules])
    if not {"float32", "float64"} <= set(dtypes) <= set(TEST_DTYPES):
        raise ValueError(
            f"op {name!r}: dtypes={dtypes}; list float32 and float64, and only {TEST_DTYPES}"
        )
    if "complex128" in dtypes and not complex_rules:
        raise ValueError(
            f"op {name!r}: dtypes lists complex128 but complex={fields.get('complex')!r}; "
            "declare complex=HOLOMORPHIC or WIRTINGER, or drop complex128"
        )
    tolerance = fields.get("tolerance", {})
    if not set(tolerance) <= set(dtypes) or not all(t > 0 for t in tolerance.values()):
        raise ValueError(
            f"op {name!r}: tolerance={tolerance}; give a positive number per dtype of {dtypes}"
        )
    special, kinks = tuple(fields.get("special", ())), tuple(fields.get("kinks", ()))
    nargs = fields.get("nargs", 1)
    if (special or kinks) and not (fields.get("elementwise") and nargs):
        raise ValueError(
            f"op {name!r}: special points and kinks are for elementwise ops of fixed arity; "
            "give other ops cases"
        )
    arity = 1 if nargs == 1 else nargs
    points = [*special, *(point for point, _ in kinks)]
    values = [*points, *(grads for _, grads in kinks)]
    if any(len(_point_numbers(v)) != arity for v in values):
        raise ValueError(
            f"op {name!r}: a special point, a kink or its derivatives has not {arity} "
            "number(s); give one per argument"
        )
    return {
        "dtypes": dtypes,
        "tolerance": {d: tolerance.get(d, DEFAULT_TOLERANCE[d]) for d in dtypes},
        "special": special,
        "kinks": kinks,
    }


def _point_numbers(point) -> tuple:
    return tuple(point) if isinstance(point, (tuple, list)) else (point,)


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
