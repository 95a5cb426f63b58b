"""Composite ops (built from primitives, no rules of their own) and the op set's public
functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adcompare.ops.registry.numpy_names import default_numpy_names, register_numpy_names
from adcompare.ops.registry.records import OPS


@dataclass(frozen=True)
class Composite:
    """A composite op, where users reach it and how the tests call it.

    ``method``, ``numpy`` and ``cli`` mean what :class:`OpDef`'s fields of
    those names do. ``cases`` lists ``(arg_shapes, params)`` examples and
    ``domain`` the interval arguments are drawn from: the registry's tests
    check each case's value against numpy's function of the op's first numpy
    name and its derivatives against finite differences in both modes.
    ``listed`` says the arrays are passed as one list (``vstack([a, b])``).
    """

    fn: Callable
    method: str | None = None
    numpy: tuple[str, ...] = ()
    cli: bool = False
    cases: tuple = ()
    domain: tuple[float, float] = (-2.0, 2.0)
    listed: bool = False


COMPOSITES: dict[str, Composite] = {}


def composite(
    method: str | None = None,
    numpy: tuple[str, ...] | None = None,
    cli: bool = False,
    cases: tuple = (),
    domain: tuple[float, float] = (-2.0, 2.0),
    listed: bool = False,
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
        COMPOSITES[fn.__name__] = Composite(
            fn, method, tuple(names), cli, tuple(cases), domain, listed
        )
        register_numpy_names(names, fn)
        return fn

    return register


def public_functions() -> dict[str, Callable]:
    """Every public function of the op set by name: primitives' and composites'.

    >>> funcs = public_functions()
    >>> funcs["sin"] is OPS["sin"].fn, "softmax" in funcs
    (True, True)
    """
    funcs = {name: op.api for name, op in OPS.items() if not name.startswith("_")}
    funcs.update((name, composite.fn) for name, composite in COMPOSITES.items())
    return funcs
