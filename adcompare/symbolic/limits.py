"""How much symbolic work adcompare accepts: the limits and their errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, fields


@dataclass
class SizeLimits:
    """How much symbolic work adcompare accepts before refusing.

    ``max_inputs``
        input elements traced as symbols, over all differentiated arguments;
    ``max_outputs``
        output elements;
    ``max_work``
        element-level op applications during one trace;
    ``max_entries``
        entries of one derivative (a Jacobian has outputs × inputs, a
        Hessian inputs × inputs);
    ``max_seconds``
        time spent on one trace, one derivative, compiling one derivative to
        numpy, or printing one formula: on the main thread (POSIX) a timer
        stops even a single SymPy call that overruns; elsewhere it is checked
        between entries (see :mod:`adcompare.symbolic.deadline`);
    ``max_expression_size``
        the size of one expression, counted as the trace grows: its
        operations written out as a tree (what SymPy's differentiation and
        printing walk), a product of k factors counting k² (the product
        rule builds k products of k factors). A recurrence ``v = sin(v)*v``
        doubles it at each step, although the shared graph grows by three
        nodes;
    ``max_derivative_size``
        the work of one derivative, predicted before it starts: the size of
        each expression times the number of inputs it is differentiated by;
    ``max_printed_size``
        the size of a formula printed as text; larger ones are summarised.

    Exceeding ``max_expression_size``, ``max_derivative_size`` or
    ``max_seconds`` raises :class:`ExpressionTooLargeError`.
    """

    max_inputs: int = 100
    max_outputs: int = 1000
    max_work: int = 100_000
    max_entries: int = 20_000
    max_seconds: float = 120.0
    max_expression_size: int = 50_000
    max_derivative_size: int = 500_000
    max_printed_size: int = 20_000


#: The limits in force; change them with :func:`size_limit` (or by assignment).
LIMITS = SizeLimits()


class SymbolicSizeError(ValueError):
    """A symbolic trace or derivative would exceed :data:`LIMITS`."""

    __module__ = "adcompare.symbolic"  # tracebacks name the public path


class NoSymbolicCounterpartError(TypeError):
    """An op without a SymPy counterpart (``defop(..., sym=None)``) met symbolic mode."""

    __module__ = "adcompare.symbolic"  # tracebacks name the public path


class ExpressionTooLargeError(SymbolicSizeError):
    """An expression or derivative too large (or too deep, or too slow) to differentiate
    exactly: compare against finite differences or the complex step instead."""

    __module__ = "adcompare.symbolic"  # tracebacks name the public path


class SymbolicTimeoutError(ExpressionTooLargeError):
    """Symbolic work stopped by its time limit; ``seconds`` is the limit, ``what`` the work."""

    __module__ = "adcompare.symbolic"  # tracebacks name the public path

    def __init__(self, message: str, seconds: float, what: str):
        super().__init__(message)
        self.seconds = seconds
        self.what = what


@contextlib.contextmanager
def size_limit(**limits) -> Iterator[SizeLimits]:
    """Change :data:`LIMITS` inside a ``with`` block (keyword names as its fields).

    >>> from adcompare import symbolic
    >>> with symbolic.size_limit(max_inputs=2):
    ...     symbolic.trace(lambda x: x, [1.0, 2.0, 3.0])
    Traceback (most recent call last):
    ...
    adcompare.symbolic.SymbolicSizeError: symbolic mode: 3 input elements exceed the limit of 2 ...
    """
    known = {f.name for f in fields(SizeLimits)}
    unknown = set(limits) - known
    if unknown:
        raise TypeError(
            f"size_limit: unknown limit(s) {', '.join(sorted(unknown))}; "
            f"the limits are {', '.join(sorted(known))}"
        )
    saved = {name: getattr(LIMITS, name) for name in limits}
    for name, value in limits.items():
        setattr(LIMITS, name, value)
    try:
        yield LIMITS
    finally:
        for name, value in saved.items():
            setattr(LIMITS, name, value)


_TOO_LARGE = ("max_expression_size", "max_derivative_size")


def _too_large(detail: str) -> ExpressionTooLargeError:
    return ExpressionTooLargeError(
        f"symbolic mode: too large for exact differentiation ({detail}); use "
        "against='fd' or against='complex_step' (finite differences or the complex step) "
        "as the reference instead of SymPy"
    )


def _refuse(what: str, count: float, limit_name: str) -> None:
    limit = getattr(LIMITS, limit_name)
    if limit_name in _TOO_LARGE:
        raise _too_large(
            f"{what}: {count:g}, over the limit of {limit:g}, "
            f"adcompare.symbolic.LIMITS.{limit_name}; raise it with "
            f"`with adcompare.symbolic.size_limit({limit_name}=...)`"
        )
    raise SymbolicSizeError(
        f"symbolic mode: {count:g} {what} exceed the limit of {limit:g} "
        f"(adcompare.symbolic.LIMITS.{limit_name}). Symbolic expressions grow quickly "
        "with size, so adcompare refuses rather than hang: check a smaller instance, "
        f"raise the limit with `with adcompare.symbolic.size_limit({limit_name}=...)`, "
        "or compare against finite differences (against='fd')"
    )
