"""The contract every GradBench eval fulfils, and the registry that finds them.

An eval is one module of this package, ``adcompare.gradbench.<name>``, that
defines ``EVAL``, an :class:`Eval`. The protocol server, the conformance
tests, the harness problems and the report all reach an eval through
:func:`get_eval` and nothing else, so adding an eval is adding a module.

How an evaluate message is answered (GradBench's timing protocol):

1. ``prepared = eval.prepare(input)`` turns the message's JSON input into
   arrays, outside the timing, and raises :class:`InputError` for input it
   cannot take (a wrong shape, a missing field, NaN);
2. ``result = eval.functions[function](prepared, mode)`` is the timed call,
   repeated until both ``min_runs`` and ``min_seconds`` are met;
3. ``eval.encode(function, result)`` turns the last result into the JSON
   output, outside the timing.

>>> sorted(MODES)
['auto', 'forward', 'replay', 'reverse']
>>> "lse" in EVAL_NAMES and len(EVAL_NAMES)
12
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EVAL_NAMES", "MODES", "Eval", "InputError", "Workload", "get_eval", "implemented"]

#: GradBench's twelve evals, in its order.
EVAL_NAMES = (
    "hello",
    "gmm",
    "ba",
    "lstm",
    "ht",
    "ode",
    "kmeans",
    "lse",
    "llsq",
    "det",
    "particle",
    "saddle",
)

#: The engines a derivative function can be answered by. ``auto`` is the
#: eval's own choice (``Eval.auto``); a nested eval's function names its modes.
MODES = ("auto", "reverse", "forward", "replay")


class InputError(ValueError):
    """An evaluate message's input an eval cannot take, said in one sentence."""


@dataclass(frozen=True)
class Workload:
    """One input GradBench's eval sends: its description and a builder of the
    evaluate message's ``input`` (built on demand: the large ones are large)."""

    description: str
    make: Callable[[], Any]


@dataclass(frozen=True)
class Eval:
    """One GradBench eval written against the op set.

    ``functions`` maps GradBench's function names to ``run(prepared, mode)``;
    ``primal`` and ``derivative`` name the classic pair (both ``None`` for the
    nested evals, whose functions are their four variants and ignore ``mode``).
    ``modes`` lists the modes the derivative answers in, ``auto`` the one
    ``"auto"`` stands for (or a function choosing it per prepared input).
    ``workloads()`` gives GradBench's default workload list, in its order, with
    inputs the package generates itself.

    ``objective`` (optional) makes the eval a harness problem:
    ``objective(prepared)`` returns ``(f, args)``, the function the derivative
    differentiates and the tuple of its arguments at this input. ``f(*args)``
    returns a float scalar or 1-D array and is written against the op set; the
    float leaves of ``args`` (arrays, or pytrees of them) are what it is
    differentiated with respect to, other leaves (ints) stay fixed.
    """

    name: str
    prepare: Callable[[Any], Any]
    functions: Mapping[str, Callable[[Any, str], Any]]
    encode: Callable[[str, Any], Any]
    primal: str | None = None
    derivative: str | None = None
    modes: tuple[str, ...] = ("reverse", "forward", "replay")
    auto: str | Callable[[Any], str] = "reverse"
    workloads: Callable[[], tuple[Workload, ...]] = field(default=lambda: ())
    objective: Callable[[Any], tuple[Callable, tuple]] | None = None

    def resolve(self, mode: str, prepared: Any = None) -> str:
        """The concrete mode ``mode`` stands for in this eval (``auto`` → ``self.auto``).

        ``auto`` may be a function of the prepared input, the eval's choice per
        input (the mode that is fastest at its size); without an input it stays
        ``"auto"``.

        >>> Eval("x", None, {}, None).resolve("auto")
        'reverse'
        >>> by_size = Eval("x", None, {}, None, auto=lambda n: "replay" if n < 10 else "reverse")
        >>> by_size.resolve("auto"), by_size.resolve("auto", 3), by_size.resolve("forward", 3)
        ('auto', 'replay', 'forward')
        """
        if mode not in MODES:
            raise ValueError(f"no mode {mode!r}; use one of {', '.join(MODES)}")
        if mode != "auto":
            return mode
        if callable(self.auto):
            return "auto" if prepared is None else self.auto(prepared)
        return self.auto


def get_eval(name: str) -> Eval:
    """The eval called ``name``, imported on first use.

    >>> get_eval("hello").derivative
    'double'
    """
    if name not in EVAL_NAMES:
        raise KeyError(f"GradBench has no eval {name!r}; its evals are {', '.join(EVAL_NAMES)}")
    return importlib.import_module(f"adcompare.gradbench.{name}").EVAL


def implemented() -> tuple[str, ...]:
    """The evals whose module exists, in GradBench's order.

    >>> set(implemented()) <= set(EVAL_NAMES)
    True
    """
    return tuple(
        name
        for name in EVAL_NAMES
        if importlib.util.find_spec(f"adcompare.gradbench.{name}") is not None
    )
