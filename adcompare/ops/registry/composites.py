"""Composite ops (built from primitives, no rules of their own) and the op set's public
functions."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from adcompare.ops.registry.numpy_names import default_numpy_names, register_numpy_names
from adcompare.ops.registry.records import DECISION_KINDS, OPS, Decision
from adcompare.runtime.hooks import DECISION_HOOKS


@dataclass(frozen=True)
class Composite:
    r"""A composite op, where users reach it and how the tests call it.

    ``method``, ``numpy`` and ``cli`` mean what :class:`OpDef`'s fields of
    those names do. ``cases`` lists ``(arg_shapes, params)`` examples and
    ``domain`` the interval arguments are drawn from: the registry's tests
    check each case's value against numpy's function of the op's first numpy
    name and its derivatives against finite differences in both modes.
    ``listed`` says the arrays are passed as one list (``vstack([a, b])``).
    ``decided_by_values`` lists the :class:`~adcompare.ops.registry.records.Decision`\ s
    its arguments' values take (``sort``'s permutation): while a recorder runs,
    the function is called through its decision hook (see
    :mod:`adcompare.runtime.hooks`).
    """

    fn: Callable
    method: str | None = None
    numpy: tuple[str, ...] = ()
    cli: bool = False
    cases: tuple = ()
    domain: tuple[float, float] = (-2.0, 2.0)
    listed: bool = False
    decided_by_values: tuple = ()


COMPOSITES: dict[str, Composite] = {}


def composite(
    method: str | None = None,
    numpy: tuple[str, ...] | None = None,
    cli: bool = False,
    cases: tuple = (),
    domain: tuple[float, float] = (-2.0, 2.0),
    listed: bool = False,
    decided_by_values: tuple = (),
):
    """Register a composite op (the fields are :class:`Composite`'s).

    ``numpy`` defaults to its own name where numpy has a function of that
    name; ``method`` makes it a method of boxes; ``cli`` lets command-line
    formulas call it (functions of one array only).
    """

    def register(fn: Callable) -> Callable:
        names = default_numpy_names(fn.__name__) if numpy is None else numpy
        if fn.__name__ in COMPOSITES:
            raise ValueError(f"composite {fn.__name__!r} is registered twice")
        parameters = inspect.signature(fn).parameters
        decisions = checked_decisions(fn.__name__, decided_by_values, parameters)
        if decisions:
            fn = _deciding(fn, decisions)
        COMPOSITES[fn.__name__] = Composite(
            fn, method, tuple(names), cli, tuple(cases), domain, listed, decisions
        )
        register_numpy_names(names, fn)
        return fn

    return register


def checked_decisions(name: str, decisions, parameters) -> tuple:
    """``decisions`` as a tuple of :class:`Decision`, each checked (its kind known, its
    ``decide`` callable, its source one of the op's ``parameters``).

    >>> try:
    ...     checked_decisions("f", [Decision("order", "x", abs)], ("x",))
    ... except ValueError as error:
    ...     print(str(error)[:60])
    op 'f': decided_by_values holds Decision('order', 'x'); give
    """
    decisions = tuple(decisions)
    for decision in decisions:
        if not (
            isinstance(decision, Decision)
            and decision.kind in DECISION_KINDS
            and callable(decision.decide)
            and decision.source in parameters
        ):
            shown = (
                f"Decision({decision.kind!r}, {decision.source!r})"
                if isinstance(decision, Decision)
                else repr(decision)
            )
            raise ValueError(
                f"op {name!r}: decided_by_values holds {shown}; give Decision(kind, source, "
                f"decide) with kind one of {DECISION_KINDS}, source a parameter name and "
                "decide callable"
            )
    return decisions


def _deciding(fn: Callable, decisions: tuple) -> Callable:
    """``fn``, called through the innermost decision hook while one is installed."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def deciding(*args, **kwargs):
        if not DECISION_HOOKS:
            return fn(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return DECISION_HOOKS[-1](decisions, bound.arguments, lambda: fn(*args, **kwargs))

    return deciding


def public_functions() -> dict[str, Callable]:
    """Every public function of the op set by name: primitives' and composites'.

    >>> funcs = public_functions()
    >>> funcs["sin"] is OPS["sin"].fn, "softmax" in funcs
    (True, True)
    """
    funcs = {name: op.api for name, op in OPS.items() if not name.startswith("_")}
    funcs.update((name, composite.fn) for name, composite in COMPOSITES.items())
    return funcs
