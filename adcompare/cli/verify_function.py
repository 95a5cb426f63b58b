"""``adcompare verify --function SPEC``: a user's Python function's derivatives in every
mode, checked against SymPy (finite differences where SymPy gives up), at a point.

The point is ``--at`` (``x=1,y=2`` for the function's parameters by name, each
a number; or ``1,2,3``, one vector for ``f(x)``) or ``--inputs SPEC``, a
function of the size n returning the arguments (an array, or a tuple of
pytrees), as for ``adcompare bench``.
"""

from __future__ import annotations

import inspect
import json

import numpy as np

from adcompare.check import Comparison, compare
from adcompare.cli.expr import parse_number
from adcompare.cli.userfunction import load_function

#: The references tried in turn: SymPy's exact derivative, then central differences.
AGAINST = ("symbolic", "fd")


class FunctionPointError(ValueError):
    """A point or function that cannot be checked; the message says why and what to do."""


def parse_arguments(f, at: str | None, inputs: str | None, size: int) -> tuple:
    """The arguments to check ``f`` at: from ``--at`` or from the ``--inputs`` builder.

    >>> parse_arguments(lambda x, y: x * y, "y=2, x=1", None, 4)
    (1.0, 2.0)
    >>> parse_arguments(lambda x: x, "1, 2.5", None, 4)
    (array([1. , 2.5]),)
    """
    if (at is None) == (inputs is None):
        raise FunctionPointError("give the point as --at (e.g. --at 1,2,3) or --inputs SPEC")
    if inputs is not None:
        built = load_function(inputs, "--inputs")(size)
        return built if isinstance(built, tuple) else (built,)
    words = [w.strip() for w in at.split(",") if w.strip()]
    if words and all("=" not in w for w in words):
        return (np.array([parse_number(w, "--at ", FunctionPointError) for w in words]),)
    named = dict(w.partition("=")[::2] for w in words)
    parameters = [
        p.name
        for p in inspect.signature(f).parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    names = {name.strip() for name in named}
    if names != set(parameters):
        raise FunctionPointError(
            f"--at {at}: give one value for each of the function's parameters "
            f"({', '.join(parameters)}), e.g. --at {','.join(f'{p}=1' for p in parameters)}, "
            "or numbers alone (--at 1,2,3) for one vector argument"
        )
    values = {
        name.strip(): parse_number(value, f"--at {name.strip()}=", FunctionPointError)
        for name, value in named.items()
    }
    return tuple(values[p] for p in parameters)


def verify_function(
    f,
    name: str,
    args: tuple,
    *,
    order: int,
    modes: tuple[str, ...],
    rtol: float | None,
    atol: float | None,
    repeat: int,
    symbolic_seconds: float,
) -> Comparison:
    """Compare the modes of the function ``f`` (called ``name``) at ``args`` against SymPy
    (or finite differences where SymPy gives up); a function that fails or is not finite
    or differentiable there is a :class:`FunctionPointError` naming it."""
    with np.errstate(all="ignore"):
        try:
            value = np.asarray(f(*args), dtype=np.float64)
        except Exception as error:
            raise FunctionPointError(
                f"{name} raised {type(error).__name__} at the point: {error}; make it run "
                "there, or choose another point"
            ) from None
        if not np.all(np.isfinite(value)):
            raise FunctionPointError(
                f"{name} is not finite at the point (NaN or inf); choose a point inside its domain"
            )
        result = compare(
            f, *args, modes=modes, against=AGAINST, order=order, rtol=rtol, atol=atol,
            repeat=repeat, symbolic_seconds=symbolic_seconds,
        )  # fmt: skip
    if any(_not_finite(row.derivative) for row in result.rows if row.error is None):
        raise FunctionPointError(
            f"the derivative of {name} is NaN or inf at the point, where {name} itself is "
            "finite: it is not differentiable there; choose a point away from the kink or "
            "singularity"
        )
    return result


def _not_finite(blocks) -> bool:
    return any(not np.all(np.isfinite(np.asarray(block, dtype=np.float64))) for block in blocks)


def report_text(result: Comparison) -> str:
    """The comparison's table and one line saying whether every mode agrees."""
    against = {"symbolic": "SymPy", "fd": "finite differences"}.get(result.reference, "")
    if result.passed:
        verdict = f"All modes agree with {against}."
    else:
        failed = [row.mode for row in result.rows if row.passed is False]
        verdict = f"MISMATCH: {', '.join(failed) or 'no reference'} against {against or '-'}."
    return f"{result}\n{verdict}"


def report_json(result: Comparison) -> str:
    """The comparison as JSON, with its status."""
    document = result.as_dict() | {"status": "passed" if result.passed else "failed"}
    return json.dumps(document, indent=2, ensure_ascii=False)


__all__ = [
    "AGAINST",
    "FunctionPointError",
    "parse_arguments",
    "report_json",
    "report_text",
    "verify_function",
]
