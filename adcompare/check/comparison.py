"""``compare``: value, derivative, error, time and op count per mode, side by side."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from adcompare import symbolic, transforms
from adcompare.check.case import _Case, _case
from adcompare.check.derivatives import NUMERIC_REFERENCES
from adcompare.check.reports import (
    _compare_blocks,
    _json_number,
    format_table,
)
from adcompare.check.tolerances import default_tolerance
from adcompare.durations import format_duration
from adcompare.runtime.cost import count
from adcompare.runtime.dtypes import as_float


@dataclass
class ComparisonRow:
    """One mode in :func:`compare`: value, derivative, error, time and op count."""

    mode: str
    value: np.ndarray | None = None
    derivative: list = field(default_factory=list)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    worst: str = ""
    passed: bool | None = None
    seconds: float = math.nan
    first_seconds: float = math.nan
    ops: int | None = None
    error: str | None = None

    def as_dict(self) -> dict:
        """JSON-ready fields (arrays as nested lists)."""
        return {
            "mode": self.mode,
            "value": None if self.value is None else np.asarray(self.value).tolist(),
            "derivative": [np.asarray(b).tolist() for b in self.derivative],
            "max_abs_err": _json_number(self.max_abs_err),
            "max_rel_err": _json_number(self.max_rel_err),
            "worst": self.worst,
            "passed": self.passed,
            "seconds": _json_number(self.seconds),
            "first_seconds": _json_number(self.first_seconds),
            "ops": self.ops,
            "error": self.error,
        }


@dataclass
class Comparison:
    """The result of :func:`compare`: one row per mode, errors against SymPy."""

    function: str
    arguments: list[str]
    names: list[str]
    order: int
    rows: list[ComparisonRow]
    reference_error: str | None = None

    @property
    def passed(self) -> bool:
        """Whether every mode agreed with the symbolic result (False if there was none)."""
        return (
            self.reference_error is None
            and bool(self.rows)
            and all(r.passed is True for r in self.rows)
        )

    def __getitem__(self, mode: str) -> ComparisonRow:
        for r in self.rows:
            if r.mode == mode:
                return r
        raise KeyError(
            f"no mode {mode!r} in this comparison (modes: {[r.mode for r in self.rows]})"
        )

    def __str__(self) -> str:
        what = "gradient" if self.order == 1 else "Hessian"
        head = f"compare {self.function}({', '.join(self.arguments)}): value and {what} per mode"
        rows = []
        for r in self.rows:
            if r.error is not None:
                rows.append([r.mode, "-", "-", "-", "-", "-", f"error: {r.error}"])
                continue
            err = "-" if r.max_rel_err is None else f"{r.max_rel_err:.1e}"
            rows.append(
                [
                    r.mode,
                    _format_array(r.value),
                    "; ".join(_format_array(b) for b in r.derivative),
                    err,
                    format_duration(r.seconds),
                    "-" if r.ops is None else str(r.ops),
                    {True: "ok", False: "MISMATCH", None: "-"}[r.passed],
                ]
            )
        header = ["mode", "value", what, "rel err vs SymPy", "time", "ops", "result"]
        text = f"{head}\n{format_table(header, rows)}"
        if self.reference_error:
            text += f"\nno symbolic reference: {self.reference_error}"
        return text

    __repr__ = __str__

    def as_dict(self) -> dict:
        """JSON-ready summary."""
        return {
            "function": self.function,
            "arguments": self.arguments,
            "order": self.order,
            "passed": self.passed,
            "reference_error": self.reference_error,
            "rows": [r.as_dict() for r in self.rows],
        }


def _format_array(value) -> str:
    if value is None:
        return "-"
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 0:
        return f"{float(value):.10g}"
    if value.size <= 6:
        return "[" + ", ".join(f"{v:.6g}" for v in value.ravel()) + "]"
    return f"<{'x'.join(map(str, value.shape))} array>"


def _mode_value(f, args, positions, mode, value):
    """The value of f as the mode's engine computes it."""
    if mode == "symbolic":
        traced = symbolic.record(f, *args, argnums=positions)
        return traced.evaluate("value", args)
    diff_args = [args[p] for p in positions]

    def partial(*boxes):
        return f(*_replace_at(args, positions, boxes))

    if mode == "forward":
        return np.asarray(
            transforms.jvp(partial, diff_args, [np.zeros_like(as_float(a)) for a in diff_args])[0]
        )
    if mode == "reverse":
        return np.asarray(transforms.vjp(partial, *diff_args)[0])
    return value


def _replace_at(args, positions, values) -> list:
    out = list(args)
    for p, v in zip(positions, values):
        out[p] = v
    return out


#: Seconds a mode's calls may take in :func:`compare` before its repeats stop.
TIMING_BUDGET = 1.0


def compare(
    f: Callable,
    *args,
    modes: Sequence[str] = ("symbolic", "forward", "reverse", "fd"),
    order: int = 1,
    argnums=None,
    rtol: float | None = None,
    atol: float | None = None,
    repeat: int = 3,
) -> Comparison:
    """Value and derivative of ``f`` at ``args`` by each mode, side by side.

    For each mode: the value, the derivative (gradient, Jacobian, or with
    ``order=2`` the Hessian), its error against SymPy's exact result (ρ,
    and whether it is within the tolerance :func:`check_grad` would use),
    the time of one call (best of ``repeat`` after a first call, whose time
    is ``first_seconds``: for ``"symbolic"`` that one traces and
    differentiates; the repeats stop once a mode has taken
    :data:`TIMING_BUDGET` seconds, so a slow mode costs one call) and the op
    applications counted during the first call.

    >>> import adcompare as ad
    >>> result = compare(lambda x, y: 3 * x**2 + x * y + 5 * y**2, 2.0, 3.0)
    >>> [(r.mode, r.derivative[0].item(), r.passed) for r in result.rows][:2]
    [('symbolic', 15.0, True), ('forward', 15.0, True)]
    """
    case = _case(f, args, argnums, order, modes, rtol, atol, "compare")
    symbolic.clear_cache(case.f)
    rows = [_timed_row(case, mode, repeat) for mode in case.modes]
    reference, reference_error = _symbolic_reference(case, rows)
    if reference is not None:
        labels = case.labels()
        for row in rows:
            _judge(row, case, reference, labels)
    return Comparison(
        function=case.function,
        arguments=case.arguments(),
        names=[case.names[p] for p in case.positions],
        order=order,
        rows=rows,
        reference_error=reference_error,
    )


def _timed_row(case: _Case, mode: str, repeat: int) -> ComparisonRow:
    """A mode's derivative with its time, its op count (of the first call) and its value;
    an error is recorded in the row, not raised."""
    row = ComparisonRow(mode)
    try:
        with count() as cost:
            start = time.perf_counter()
            row.derivative = case.derivative(mode)
            row.first_seconds = time.perf_counter() - start
        row.ops = sum(cost.ops.values())
        row.seconds = _best_of_repeats(case, mode, repeat, row.first_seconds)
        row.value = _mode_value(case.f, case.args, case.positions, mode, case.value)
    except Exception as error:
        row.error = f"{type(error).__name__}: {error}"
    return row


def _best_of_repeats(case: _Case, mode: str, repeat: int, first_seconds: float) -> float:
    """The best time of up to ``repeat`` more calls; they stop once the mode has taken
    :data:`TIMING_BUDGET` seconds, so a slow mode is timed by its first call alone."""
    best, spent = math.inf, first_seconds
    for _ in range(max(0, repeat)):
        if spent > TIMING_BUDGET:
            break
        start = time.perf_counter()
        case.derivative(mode)
        elapsed = time.perf_counter() - start
        best, spent = min(best, elapsed), spent + elapsed
    return best if math.isfinite(best) else first_seconds


def _symbolic_reference(case: _Case, rows: list[ComparisonRow]) -> tuple[list | None, str | None]:
    """SymPy's derivative (the symbolic row's, if it ran), or ``None`` and why not."""
    try:
        by_mode = {r.mode: r for r in rows}
        if "symbolic" in by_mode and by_mode["symbolic"].error is None:
            return by_mode["symbolic"].derivative, None
        return case.reference("symbolic"), None
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"


def _judge(row: ComparisonRow, case: _Case, reference: list, labels) -> None:
    """Fill in ``row``'s errors against the reference and whether it passes, at the
    tolerance :func:`check_grad` would use."""
    if row.error is not None:
        row.passed = False
        return
    against = row.mode if row.mode in NUMERIC_REFERENCES else "symbolic"
    rtol = (
        case.rtol if case.rtol is not None else default_tolerance(case.dtype, against, case.order)
    )
    check = _compare_blocks(row.mode, row.derivative, reference, labels, rtol, case.atol or 0.0)
    if check.error is not None:
        row.error, row.passed = check.error, False
        return
    row.max_abs_err, row.max_rel_err = check.max_abs_err, check.max_rel_err
    row.worst, row.passed = check.worst, check.passed
