"""GradBench's ``hello`` eval: ``square(x) = x²`` and its derivative ``double(x) = 2x``.

The smallest eval, and the pattern every other one follows: ``prepare``
checks and converts the input, each function takes the prepared input and a
mode, ``encode`` writes the JSON output.

>>> EVAL.functions["double"](EVAL.prepare(3.0), "reverse")
6.0
>>> [EVAL.functions["double"](3.0, mode) for mode in ("forward", "replay")]
[6.0, 6.0]
"""

from __future__ import annotations

import math

import adcompare as ad
from adcompare.gradbench.evals import Eval, InputError, Workload

__all__ = ["EVAL", "square"]


def square(x):
    """x², on a number or a traced value.

    >>> square(1.5)
    2.25
    """
    return x * x


def _prepare(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"hello takes one number, not {type(value).__name__}; send e.g. 2.0")
    if not math.isfinite(value):
        raise InputError(f"hello takes a finite number, not {value}")
    return float(value)


_COMPILED = {}


def _double(x: float, mode: str) -> float:
    if mode == "forward":
        return float(ad.jvp(square, (x,), (1.0,))[1])
    if mode == "replay":
        if "square" not in _COMPILED:
            _COMPILED["square"] = ad.compile(square, x)
        return float(_COMPILED["square"].grad(x))
    return float(ad.grad(square)(x))


def _workloads() -> tuple[Workload, ...]:
    # GradBench's chain: each input is the previous answer.
    values = (1.0, 1.0, 2.0, 4.0, 8.0, 64.0, 128.0, 16384.0)
    return tuple(Workload(str(v), lambda v=v: v) for v in values)


EVAL = Eval(
    name="hello",
    prepare=_prepare,
    functions={"square": lambda x, mode: square(x), "double": _double},
    encode=lambda function, result: result,
    primal="square",
    derivative="double",
    workloads=_workloads,
    objective=lambda x: (square, (x,)),
)
