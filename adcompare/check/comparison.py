"""``compare``: value, derivative, error, time and op count per mode, side by side."""

from __future__ import annotations

import contextlib
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
    """The result of :func:`compare`: one row per mode, errors against the reference.

    ``reference`` names the reference used (``None`` when there was none, and
    ``reference_error`` says why); ``note`` says why a reference asked for
    before it was skipped ("symbolic reference skipped: gave up after 10 s; ...").
    """

    function: str
    arguments: list[str]
    names: list[str]
    order: int
    rows: list[ComparisonRow]
    reference_error: str | None = None
    reference: str | None = "symbolic"
    note: str = ""
    #: The references tried, when none worked.
    tried: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether every mode agreed with the reference (False if there was none); a
        symbolic row that gave way to another reference is skipped, not failed."""
        return (
            self.reference_error is None
            and any(r.passed for r in self.rows)
            and all(r.passed is not False for r in self.rows)
        )

    def __getitem__(self, mode: str) -> ComparisonRow:
        for r in self.rows:
            if r.mode == mode:
                return r
        raise KeyError(
            f"no mode {mode!r} in this comparison (modes: {[r.mode for r in self.rows]})"
        )

    def __str__(self) -> str:
        vector = any(np.size(r.value) > 1 for r in self.rows if r.value is not None)
        what = "Hessian" if self.order == 2 else "Jacobian" if vector else "gradient"
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
        against = {"symbolic": "SymPy", None: "-"}.get(self.reference, self.reference)
        header = ["mode", "value", what, f"rel err vs {against}", "time", "ops", "result"]
        text = f"{head}\n{format_table(header, rows)}"
        if self.note:
            text += f"\n{self.note}"
        if self.reference_error:
            names = " or ".join(self.tried) or "symbolic"
            text += f"\nno {names} reference: {self.reference_error}"
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
            "reference": self.reference,
            "note": self.note,
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
#: Seconds :func:`compare` gives SymPy (tracing, differentiating, compiling, evaluating) before
#: it gives up on the symbolic reference; ``symbolic_seconds=`` changes it.
SYMBOLIC_SECONDS = 10.0
#: The modes :func:`compare` measures by default, besides SymPy's where it is a reference.
DEFAULT_MODES = ("forward", "reverse", "fd")
#: The references ``against=`` may name.
REFERENCES = ("symbolic", *NUMERIC_REFERENCES)


def compare(
    f: Callable,
    *args,
    modes: Sequence[str] | None = None,
    against: str | Sequence[str] | None = None,
    order: int = 1,
    argnums=None,
    rtol: float | None = None,
    atol: float | None = None,
    repeat: int = 3,
    symbolic_seconds: float = SYMBOLIC_SECONDS,
) -> Comparison:
    """Value and derivative of ``f`` at ``args`` by each mode, side by side.

    For each mode: the value, the derivative (gradient, Jacobian, or with
    ``order=2`` the Hessian), its error against the reference (ρ, and
    whether it is within the tolerance :func:`check_grad` would use), the
    time of one call (best of ``repeat`` after a first call, whose time is
    ``first_seconds``: for ``"symbolic"`` that one traces and
    differentiates; the repeats stop once a mode has taken
    :data:`TIMING_BUDGET` seconds, so a slow mode costs one call) and the op
    applications counted during the first call.

    ``against``: ``"symbolic"`` (SymPy's exact derivative), ``"fd"``,
    ``"complex_step"``, or a tuple of them tried in turn; by default SymPy's,
    falling back as :func:`check_grad` does. Without ``"symbolic"`` no SymPy
    runs, and the default ``modes`` (symbolic, forward, reverse, fd) leave it
    out. SymPy gets ``symbolic_seconds`` in all, then gives up, saying so in
    :attr:`Comparison.note`.

    >>> import adcompare as ad
    >>> result = compare(lambda x, y: 3 * x**2 + x * y + 5 * y**2, 2.0, 3.0)
    >>> [(r.mode, r.derivative[0].item(), r.passed) for r in result.rows][:2]
    [('symbolic', 15.0, True), ('forward', 15.0, True)]
    >>> result = compare(lambda x: ad.sum(ad.sin(x)), [0.0, 1.0], against="fd")
    >>> [r.mode for r in result.rows], result.reference, result.passed
    (['forward', 'reverse', 'fd'], 'fd', True)
    """
    chain, fallback = _reference_chain(against)
    modes = ("symbolic",) * ("symbolic" in chain) + DEFAULT_MODES if modes is None else modes
    case = _case(f, args, argnums, order, modes, rtol, atol, "compare")
    symbolic.clear_cache(case.f)
    timed = {mode: _timed_row(case, mode, repeat, symbolic_seconds) for mode in case.modes}
    rows, failures = [row for row, _ in timed.values()], {m: e for m, (_, e) in timed.items()}
    reference, used, notes = _reference(case, rows, failures, chain, fallback, symbolic_seconds)
    if reference is not None:
        _judge_all(rows, case, reference, used, skipped=notes)
    return Comparison(
        function=case.function,
        arguments=case.arguments(),
        names=[case.names[p] for p in case.positions],
        order=order,
        rows=rows,
        reference_error=None if reference is not None else "; ".join(notes.values()),
        reference=used if reference is not None else None,
        note="; ".join(f"{name} reference skipped: {why}" for name, why in notes.items())
        if reference is not None
        else "",
        tried=tuple(notes) if reference is None else (),
    )


def _reference_chain(against) -> tuple[tuple[str, ...], bool]:
    """The references ``against`` names, in order, and whether SymPy falls back as in
    :func:`check_grad` (``against=None``); a name may have a hyphen (``complex-step``)."""
    if against is None:
        return ("symbolic",), True
    names = (against,) if isinstance(against, str) else tuple(against)
    names = tuple(str(name).replace("-", "_") for name in names)
    unknown = [name for name in names if name not in REFERENCES]
    if unknown or not names:
        raise ValueError(
            f"compare: unknown reference {', '.join(map(repr, unknown)) or '(none given)'} in "
            f"against=; use one of {', '.join(map(repr, REFERENCES))}, or a tuple of them"
        )
    return names, False


def _timed_row(
    case: _Case, mode: str, repeat: int, symbolic_seconds: float
) -> tuple[ComparisonRow, Exception | None]:
    """A mode's derivative with its time, its op count (of the first call) and its value,
    and the exception that stopped it (recorded in the row too, not raised)."""
    row = ComparisonRow(mode)
    budget = (
        symbolic.time_budget(symbolic_seconds, "the symbolic reference")
        if mode == "symbolic"
        else contextlib.nullcontext()
    )
    try:
        with budget, count() as cost:
            start = time.perf_counter()
            row.derivative = case.derivative(mode)
            row.first_seconds = time.perf_counter() - start
            row.ops = sum(cost.ops.values())
            row.seconds = _best_of_repeats(case, mode, repeat, row.first_seconds)
            row.value = _mode_value(case.f, case.args, case.positions, mode, case.value)
    except Exception as error:
        row.error = f"{type(error).__name__}: {error}"
        return row, error
    return row, None


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


def _reference(case, rows, failures, chain, fallback: bool, symbolic_seconds: float):
    """The first reference of ``chain`` that works, its name, and a note for each that
    did not (with ``fallback``, SymPy gives way as in check_grad). A mode's own row is
    reused; ``(None, None, notes)`` when none works."""
    done = {row.mode: row for row in rows if row.error is None}
    notes, todo = {}, list(chain)
    while todo:
        name = todo.pop(0)
        if name in done:
            return done[name].derivative, name, notes
        error = failures.get(name)
        if error is None:
            try:
                budget = symbolic.time_budget(symbolic_seconds, "the symbolic reference")
                with budget if name == "symbolic" else contextlib.nullcontext():
                    return case.reference(name), name, notes
            except Exception as raised:
                error = raised
        notes[name] = _skipped(error)
        if fallback and name == "symbolic":
            todo += _fallbacks(error)
    return None, None, notes


def _fallbacks(error: Exception) -> list[str]:
    """Where the default symbolic reference gives way, as :func:`check_grad` does."""
    if isinstance(error, symbolic.ExpressionTooLargeError):
        return ["fd"]
    if isinstance(error, symbolic.NoSymbolicCounterpartError):
        return list(NUMERIC_REFERENCES[::-1])
    return []


def _skipped(error: Exception) -> str:
    """Why a reference was skipped, saying what to do."""
    if isinstance(error, symbolic.SymbolicTimeoutError):
        return (
            f"gave up after {error.seconds:g} s; pass symbolic_seconds="
            f"{max(60, 6 * error.seconds):g} to raise it, or against='fd' to skip SymPy"
        )
    return f"{type(error).__name__}: {error}"


def _judge_all(rows, case: _Case, reference: list, used: str, skipped) -> None:
    """Judge every row against the reference ``used``; a symbolic row whose reference
    was ``skipped`` (it gave way to another) is skipped, not failed."""
    labels = case.labels()
    for row in rows:
        _judge(row, case, reference, labels, used)
        if row.mode == "symbolic" and "symbolic" in skipped:
            row.passed = None


def _judge(row: ComparisonRow, case: _Case, reference: list, labels, used: str) -> None:
    """Fill in ``row``'s errors against the reference ``used`` and whether it passes, at
    the tolerance :func:`check_grad` would use (the looser of the mode's and the
    reference's accuracy)."""
    if row.error is not None:
        row.passed = False
        return
    kinds = {used, row.mode} & set(REFERENCES)
    rtol = (
        case.rtol
        if case.rtol is not None
        else max(default_tolerance(case.dtype, kind, case.order) for kind in kinds)
    )
    check = _compare_blocks(row.mode, row.derivative, reference, labels, rtol, case.atol or 0.0)
    if check.error is not None:
        row.error, row.passed = check.error, False
        return
    row.max_abs_err, row.max_rel_err = check.max_abs_err, check.max_rel_err
    row.worst, row.passed = check.worst, check.passed
