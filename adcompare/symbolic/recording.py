"""Recording a function on symbols, and the cache of its traces."""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from adcompare.ops.registry import Box, new_level
from adcompare.pytree import argnum_positions
from adcompare.runtime.dtypes import as_float
from adcompare.symbolic.box import Symbolic, _TraceState
from adcompare.symbolic.deadline import deadline
from adcompare.symbolic.expressions import (
    _as_expr_array,
    _symbol_array,
    _unique_bases,
    argument_names,
)
from adcompare.symbolic.limits import LIMITS, _refuse
from adcompare.symbolic.trace import Trace


def _is_traceable(value) -> bool:
    """Whether an argument is traced as symbols by default: real floating numbers."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, float, np.floating)):
        return True
    try:
        kind = np.asarray(value).dtype
    except (TypeError, ValueError):
        return False
    return np.issubdtype(kind, np.floating)


def argument_positions(argnums, args: tuple, name: str = "record") -> tuple[int, ...]:
    """The positions of ``args`` that become symbols: ``argnums`` checked and made
    non-negative (repeats dropped), or, for ``argnums=None``, every real number and
    floating array (booleans and integer arrays stay constants, so they may index).
    ``name`` starts the error.

    >>> import numpy as np
    >>> from adcompare import symbolic
    >>> symbolic.argument_positions(None, (1.0, True, np.arange(3), [0.5, 1.5]))
    (0, 3)
    >>> symbolic.argument_positions((-1, 0, 0), (1.0, 2.0))
    (1, 0)
    >>> symbolic.argument_positions(2, (1.0, 2.0), "grad")
    Traceback (most recent call last):
    ...
    ValueError: grad: argnums=2 does not name a positional argument of a function called ...
    """
    nargs = len(args)
    if argnums is None:
        return tuple(i for i, a in enumerate(args) if _is_traceable(a))
    return tuple(dict.fromkeys(argnum_positions(argnums, nargs, name)))


def _traced_point(value, position: int):
    if isinstance(value, Box):
        raise TypeError(
            f"symbolic mode evaluates at plain numbers, but argument {position} is a "
            f"{type(value).__name__}; call the symbolic transforms outside the other "
            "transforms (nesting a symbolic derivative inside jacfwd or grad is not supported)"
        )
    point = as_float(value)
    if np.issubdtype(point.dtype, np.complexfloating):
        raise TypeError(f"symbolic mode takes real inputs; argument {position} is complex")
    return point


def _record(f: Callable, args: tuple, positions: tuple[int, ...]) -> Trace:
    points = {p: _traced_point(args[p], p) for p in positions}
    total = sum(point.size for point in points.values())
    if total > LIMITS.max_inputs:
        _refuse("input elements", total, "max_inputs")
    names = argument_names(f, len(args))
    bases = _unique_bases(names, {p: point.shape for p, point in points.items()})
    level = new_level()
    state = _TraceState()
    symbols = {}
    call_args = list(args)
    for p, point in points.items():
        symbols[p] = _symbol_array(bases[p], point.shape)
        call_args[p] = Symbolic._make(symbols[p], point, state, level)
    with deadline("tracing"):
        out = f(*call_args)
    if out is None:
        raise TypeError(
            "symbolic mode: the function returned None; did it forget a `return`? Return the "
            "value to differentiate (an output that does not depend on the inputs is fine)"
        )
    if isinstance(out, (tuple, list)):
        output = tuple(_output_exprs(o, level) for o in out)
        size = sum(o.size for o in output)
    else:
        output = _output_exprs(out, level)
        size = output.size
    if size > LIMITS.max_outputs:
        _refuse("output elements", size, "max_outputs")
    name = getattr(f, "__name__", type(f).__name__)
    return Trace(name, positions, symbols, output, state.point_dependent, state.work, state.sizes)


def _output_exprs(out, level: int) -> np.ndarray:
    if isinstance(out, Symbolic) and out.level == level:
        return out.expr
    if isinstance(out, Box):
        raise TypeError(
            f"symbolic mode: the function returned a {type(out).__name__} from another "
            "transform; return values computed from the inputs"
        )
    return _as_expr_array(as_float(out))


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CACHE_SIZE = 32


class _ByPoint(OrderedDict):
    """Traces of a point-dependent function, one per point (least recently used dropped)."""


def _fingerprint(value):
    """A hashable summary of a constant argument, or None if it has none."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return None
        return ("array", value.shape, value.dtype.str, value.tobytes())
    try:
        hash(value)
    except TypeError:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            return None
        return None if array.dtype == object else _fingerprint(array)
    return ("value", type(value).__name__, value)


def _cache_key(args: tuple, positions: tuple[int, ...]):
    parts = []
    for i, a in enumerate(args):
        if i in positions:
            point = np.asarray(a)
            parts.append(("symbols", point.shape, as_float(point).dtype.str))
        else:
            fingerprint = _fingerprint(a)
            if fingerprint is None:
                return None
            parts.append(fingerprint)
    return (positions, tuple(parts))


def _point_key(args: tuple, positions: tuple[int, ...]):
    return tuple(_fingerprint(as_float(args[p])) for p in positions)


def _remember(store: OrderedDict, key, value) -> None:
    store[key] = value
    store.move_to_end(key)
    while len(store) > _CACHE_SIZE:
        store.popitem(last=False)


def _trace_for(f: Callable, args: tuple, positions: tuple[int, ...]) -> Trace:
    """The trace of ``f`` at ``args``: cached per function, shapes and constants."""
    for p in positions:
        _traced_point(args[p], p)  # refuse boxes and complex numbers before anything else
    try:
        entries = _CACHE.get(f)
        if entries is None:
            entries = _CACHE[f] = OrderedDict()
    except TypeError:
        entries = None
    key = _cache_key(args, positions) if entries is not None else None
    if key is not None and key in entries:
        hit = entries[key]
        entries.move_to_end(key)
        if isinstance(hit, Trace):
            return hit
        point_key = _point_key(args, positions)
        if point_key in hit:
            hit.move_to_end(point_key)
            return hit[point_key]
    traced = _record(f, args, positions)
    if key is not None:
        if not traced.point_dependent:
            _remember(entries, key, traced)
        else:
            by_point = entries.get(key)
            if not isinstance(by_point, _ByPoint):
                by_point = _ByPoint()
                _remember(entries, key, by_point)
            _remember(by_point, _point_key(args, positions), traced)
    return traced


def clear_cache(f: Callable | None = None) -> None:
    """Forget the cached traces of ``f`` (of every function if omitted).

    Traces are cached per function object, argument shapes and constant
    arguments; a function whose behaviour changes (it reads a global that
    changed) needs its cache cleared, as with ``jax.jit``.
    """
    if f is None:
        _CACHE.clear()
    else:
        with contextlib.suppress(TypeError):
            _CACHE.pop(f, None)
