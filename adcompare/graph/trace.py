"""Evaluation traces: the Wengert list of a function at a point, both modes.

``trace_table(f, x, y)`` runs ``f`` and writes down every intermediate it
computes, one row each: its name (``v1``, ``v2``, ...), the op, what the op
was applied to and the value. Then it differentiates the way the two modes
really do it:

* forward mode runs ``f`` once per input seed on dual numbers; each run
  (sweep) gives one column of tangents, ``dv/dx`` for every row, so ``n``
  inputs take ``n`` sweeps;
* reverse mode runs ``f`` once on tensors, recording the tape, and sweeps it
  backwards once; the sweep gives the adjoint ``df/dv`` of every row,
  inputs included, so one sweep gives the whole gradient.

The rows are recorded by a thin box around the engines' values (the
``_Traced`` class below): it writes down each op application and hands the
op, unchanged, to the engine inside. The numbers in the columns are the
ones the engines computed, not a re-derivation.
"""

from __future__ import annotations

import inspect
import operator
from dataclasses import dataclass, field

import numpy as np

from adcompare.engines.box import ArrayBox
from adcompare.engines.forward import Dual
from adcompare.engines.reverse import Tensor, autograd_grad
from adcompare.ops.registry import OpDef, apply, new_level, raw, shape_of
from adcompare.runtime import cost
from adcompare.runtime.boxes import unbox
from adcompare.runtime.dtypes import as_float

__all__ = ["TraceRow", "TraceTable", "trace_table"]

MODES = ("forward", "reverse", "both")
_INFIX = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "divide": "/",
    "power": "**",
    "matmul": "@",
}


# --- recording ---------------------------------------------------------------------


@dataclass
class _Step:
    """One op application seen while tracing: the op, its arguments, the result."""

    op: OpDef | None  # None for an input
    args: tuple  # row indices (int) or ("const", value)
    params: dict
    out: object  # the engine's value (Dual or Tensor)


class _Tracer:
    def __init__(self):
        self.steps: list[_Step] = []

    def record(self, op, args, params, out) -> int:
        self.steps.append(_Step(op, tuple(args), dict(params), out))
        return len(self.steps) - 1


_INNER = operator.attrgetter("_inner")


class _Traced(ArrayBox):
    """A value whose op applications are written down, then passed on inside."""

    __slots__ = ("_inner", "_row", "_tracer")

    def __init__(self, inner, row: int, tracer: _Tracer, level: int):
        self._inner = inner
        self._row = row
        self._tracer = tracer
        self.level = level

    def raw_value(self):
        return self._inner

    def _carries_derivative(self) -> bool:
        return True

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "converting a traced value to a numpy array would drop its derivative; "
            "write the function with adcompare ops"
        )

    def apply_op(self, op: OpDef, level: int, args: tuple, params: dict):
        inner = unbox(op, "traced value", _Traced, args, level, _INNER)
        refs = [
            a._row if isinstance(a, _Traced) and a.level == level else ("const", a) for a in args
        ]
        out = apply(op, tuple(inner), params)
        row = self._tracer.record(op, refs, params, out)
        return _Traced(out, row, self._tracer, level)


def _run(f, inner_args) -> tuple[_Tracer, int]:
    """Run ``f`` on traced values wrapping ``inner_args``; the steps and the output row."""
    tracer = _Tracer()
    level = new_level()
    traced = []
    for value in inner_args:
        row = tracer.record(None, (), {}, value)
        traced.append(_Traced(value, row, tracer, level))
    out = f(*traced)
    if not (isinstance(out, _Traced) and out.level == level):
        raise ValueError(
            "trace_table: f must return one array computed from its inputs; "
            f"it returned {type(out).__name__}"
        )
    return tracer, out._row


def _signature(tracer: _Tracer) -> list:
    return [
        (s.op.name if s.op else None, tuple(a if isinstance(a, int) else None for a in s.args))
        for s in tracer.steps
    ]


# --- the table -----------------------------------------------------------------------


@dataclass
class TraceRow:
    """One line of the Wengert list.

    ``tangents`` holds one value per forward sweep (``dv/dx_j`` for seed
    ``j``) and ``adjoint`` the reverse sweep's ``df/dv``; either is ``None``
    when that mode was not run.
    """

    name: str
    op: str
    expression: str
    value: np.ndarray
    tangents: tuple | None = None
    adjoint: np.ndarray | None = None
    is_input: bool = False
    is_output: bool = False


@dataclass
class TraceTable:
    """The evaluation trace of ``f`` at a point, with forward and/or reverse columns.

    ``seeds`` names the forward sweeps (one per scalar input); ``gradient``
    is ``df/dx`` per input, from the reverse sweep when it was run, else
    assembled from the forward sweeps (``None`` if ``f`` is not scalar).
    """

    mode: str
    inputs: tuple[str, ...]
    rows: list[TraceRow]
    seeds: tuple[str, ...] = ()
    forward_sweeps: int = 0
    reverse_sweeps: int = 0
    value: np.ndarray | None = None
    forward_gradient: tuple | None = None
    reverse_gradient: tuple | None = None
    point: tuple = field(default_factory=tuple)
    prefix: str = "v"

    @property
    def gradient(self) -> tuple | None:
        """``df/dx`` for each input (from reverse mode when it was run)."""
        return self.reverse_gradient if self.reverse_gradient is not None else self.forward_gradient

    @property
    def output(self) -> TraceRow:
        """The row of ``f``'s result."""
        return next(r for r in self.rows if r.is_output)

    # --- rendering ----------------------------------------------------------------
    def _forward_section(self):
        headers = ["v", "op", "computes", "value"] + [
            f"d{self.prefix}/d{seed} (sweep {i})" for i, seed in enumerate(self.seeds, start=1)
        ]
        body = [
            [r.name, r.op, r.expression, _fmt(r.value)] + [_fmt(t) for t in r.tangents]
            for r in self.rows
        ]
        n = self.forward_sweeps
        title = (
            f"Forward mode: {n} sweep{'s' if n != 1 else ''}, one per {self._per}; each carries "
            "one tangent column down the list"
        )
        return title, headers, body

    def _reverse_section(self):
        out = self.output.name
        headers = ["v", "op", "computes", "value", f"d{out}/d{self.prefix} (adjoint)"]
        body = [
            [r.name, r.op, r.expression, _fmt(r.value), _fmt(r.adjoint)]
            for r in reversed(self.rows)
        ]
        n = self.reverse_sweeps
        title = (
            f"Reverse mode: 1 recorded pass, then {n} backward sweep{'s' if n != 1 else ''} "
            f"up the list from {out} (seed d{out}/d{out} = 1)"
        )
        return title, headers, body

    @property
    def _per(self) -> str:
        return "input" if self.forward_sweeps == len(self.inputs) else "input element"

    def _sections(self):
        sections = []
        if self.mode in ("forward", "both"):
            sections.append(self._forward_section())
        if self.mode in ("reverse", "both"):
            sections.append(self._reverse_section())
        return sections

    def summary_lines(self) -> list[str]:
        """The value, the gradient, and how many sweeps each mode needed."""
        at = ", ".join(f"{name}={_fmt(v)}" for name, v in zip(self.inputs, self.point))
        lines = [f"{self.output.name} = {_fmt(self.value)} at {at}"]
        if self.gradient is not None:
            parts = [
                f"d{self.output.name}/d{n} = {_fmt(g)}" for n, g in zip(self.inputs, self.gradient)
            ]
            lines.append("gradient: " + ", ".join(parts))
        counts = []
        if self.forward_sweeps:
            n = self.forward_sweeps
            counts.append(
                f"forward mode needed {n} sweep{'s' if n != 1 else ''} (one per {self._per})"
            )
        if self.reverse_sweeps:
            n = self.reverse_sweeps
            counts.append(f"reverse mode needed {n} sweep{'s' if n != 1 else ''} (one per output)")
        if counts:
            lines.append("; ".join(counts))
        return lines

    def to_text(self) -> str:
        """Aligned plain-text tables, then the summary."""
        parts = []
        for title, headers, body in self._sections():
            parts.append(title + "\n\n" + _text_table(headers, body))
        parts.append("\n".join(self.summary_lines()))
        return "\n\n".join(parts)

    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown tables, then the summary."""
        parts = []
        for title, headers, body in self._sections():
            parts.append(f"**{title}**\n\n" + _markdown_table(headers, body))
        parts.append("\n".join(f"- {line}" for line in self.summary_lines()))
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.to_text()


def _fmt(value) -> str:
    """A number as ``%.6g``; small arrays in brackets; big ones by shape."""
    if value is None:
        return ""
    array = np.asarray(raw(value), dtype=float)
    if array.size == 1:
        number = float(array.reshape(()))
        return f"{number + 0.0:.6g}"  # + 0.0 turns -0 into 0
    if array.size <= 6:
        return "[" + " ".join(f"{v + 0.0:.4g}" for v in array.ravel()) + "]"
    return f"<{'×'.join(map(str, array.shape))} array>"


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return cell.startswith("[")
    return True


def _text_table(headers, body) -> str:
    widths = [max(len(str(row[i])) for row in [headers, *body]) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) or not row[i] for row in body) for i in range(len(headers))]

    def line(cells):
        out = [
            cell.rjust(w) if num else cell.ljust(w) for cell, w, num in zip(cells, widths, numeric)
        ]
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule] + [line(row) for row in body])


def _markdown_table(headers, body) -> str:
    numeric = [all(_is_number(row[i]) or not row[i] for row in body) for i in range(len(headers))]

    def cell(text, i):
        text = str(text).replace("|", "\\|")
        return f"`{text}`" if i == 2 and text else text

    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in headers) + " |"]
    lines.append("|" + "|".join("---:" if num else ":---" for num in numeric) + "|")
    for row in body:
        lines.append("| " + " | ".join(cell(c, i) for i, c in enumerate(row)) + " |")
    return "\n".join(lines)


# --- building the table ----------------------------------------------------------------


def _names_of(f, n: int, names) -> tuple[str, ...]:
    if names is not None:
        names = tuple(str(v) for v in names)
        if len(names) != n:
            raise ValueError(f"trace_table: {len(names)} name(s) for {n} input(s)")
        return names
    variables = getattr(f, "variables", None)  # an adcompare.cli.expr.Expression
    if variables is not None and len(variables) == n:
        return tuple(variables)
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) >= n:
        return tuple(positional[:n])
    return tuple(f"x{i}" for i in range(1, n + 1))


def _row_names(inputs: tuple[str, ...]) -> tuple[str, str]:
    """A prefix for the intermediates (``v1``, ``v2``, ...) and a name for the output,
    neither clashing with an input's name."""
    taken = set(inputs)

    def clashes(prefix):
        return any(
            n == prefix or (n.startswith(prefix) and n[len(prefix) :].isdigit()) for n in taken
        )

    prefix = next((p for p in ("v", "u", "w", "t", "z", "tmp") if not clashes(p)), "_v")
    out = next(n for n in ("f", "out", "result", "_f") if n not in taken)
    return prefix, out


def _constant_text(value) -> str:
    array = np.asarray(raw(value))
    if array.size == 1:
        text = f"{array.item():.6g}"
        return f"({text})" if text.startswith("-") else text
    return f"<{'×'.join(map(str, array.shape))} constant>"


def _param_text(value) -> str:
    if isinstance(value, tuple) and len(value) == 1:
        return repr(value[0])
    if isinstance(value, tuple) and len(value) > 6:
        return "(...)"
    if isinstance(value, np.ndarray):
        return f"<{'×'.join(map(str, value.shape))} array>"
    return repr(value)


def _expression(step: _Step, row_names: list[str]) -> str:
    if step.op is None:
        return ""
    operands = [row_names[a] if isinstance(a, int) else _constant_text(a[1]) for a in step.args]
    name = step.op.name
    if name in _INFIX and len(operands) == 2 and not step.params:
        return f"{operands[0]} {_INFIX[name]} {operands[1]}"
    if name == "negative" and len(operands) == 1:
        return f"-{operands[0]}"
    params = [
        f"{k}={_param_text(v)}" for k, v in step.params.items() if v is not None and v is not False
    ]
    return f"{name}({', '.join(operands + params)})"


def trace_table(f, *args, mode: str = "both", names=None) -> TraceTable:
    """The evaluation trace (Wengert list) of ``f`` at ``args``, with tangents and adjoints.

    ``mode="forward"`` runs one forward sweep per scalar input (one tangent
    column each), ``mode="reverse"`` one recorded pass and one backward sweep
    (one adjoint column; ``f`` must return one number), ``"both"`` does both.
    ``names`` names the inputs (by default ``f``'s parameter names, or an
    expression's variables).

    >>> t = trace_table(lambda x, y: 3 * x**2 + x * y + 5 * y**2, 2.0, 3.0)
    >>> [row.expression for row in t.rows]
    ['', '', 'x ** 2', '3 * v1', 'x * y', 'v2 + v3', 'y ** 2', '5 * v5', 'v4 + v6']
    >>> t.forward_sweeps, t.reverse_sweeps, t.gradient
    (2, 1, (15.0, 32.0))
    """
    if mode not in MODES:
        raise ValueError(f"trace_table: mode must be one of {', '.join(MODES)}, not {mode!r}")
    if not args:
        raise ValueError("trace_table: give the point, one value per input of f")
    point = tuple(as_float(raw(a)) for a in args)
    input_names = _names_of(f, len(point), names)

    # The primal trace, on plain values: the rows, their names and values.
    tracer, out_row = _run(f, point)
    steps = tracer.steps
    signature = _signature(tracer)
    prefix, out_name = _row_names(input_names)
    row_names, counter = [], 0
    for i, step in enumerate(steps):
        if step.op is None:
            row_names.append(input_names[i])
        elif i == out_row:
            row_names.append(out_name)
        else:
            counter += 1
            row_names.append(f"{prefix}{counter}")
    if out_row < len(input_names):  # f returned an input unchanged
        row_names[out_row] = input_names[out_row]
    rows = [
        TraceRow(
            name=row_names[i],
            op="input" if step.op is None else step.op.name,
            expression=_expression(step, row_names),
            value=np.asarray(raw(step.out)),
            is_input=step.op is None,
            is_output=i == out_row,
        )
        for i, step in enumerate(steps)
    ]
    table = TraceTable(mode=mode, inputs=input_names, rows=rows, point=point, prefix=prefix)
    table.value = rows[out_row].value

    if mode in ("forward", "both"):
        _forward_columns(f, point, input_names, table, signature, out_row)
    if mode in ("reverse", "both"):
        _reverse_column(f, point, table, signature, out_row)
    return table


def _forward_columns(f, point, input_names, table, signature, out_row) -> None:
    """One forward sweep per scalar input: dual numbers seeded with a unit tangent."""
    seeds, columns = [], []
    for which, x in enumerate(point):
        for j in range(int(np.prod(shape_of(x), dtype=np.int64))):
            label = input_names[which] if np.ndim(x) == 0 else f"{input_names[which]}[{j}]"
            duals = []
            level = new_level()
            for k, value in enumerate(point):
                tangent = np.zeros(shape_of(value), dtype=np.result_type(value, np.float32))
                if k == which:
                    tangent.reshape(-1)[j] = 1.0
                duals.append(Dual(value, tangent, level=level))
            cost.record_pass()
            tracer, _ = _run(f, duals)
            if _signature(tracer) != signature:
                raise RuntimeError(
                    "trace_table: f computed different steps in forward sweep "
                    f"{len(seeds) + 1} than in the primal run; it must not depend on "
                    "anything but its inputs"
                )
            seeds.append(label)
            columns.append([np.asarray(raw(s.out.tangent)) for s in tracer.steps])
    for i, row in enumerate(table.rows):
        row.tangents = tuple(column[i] for column in columns)
    table.seeds = tuple(seeds)
    table.forward_sweeps = len(seeds)
    output = table.rows[out_row]
    if output.value.size == 1:
        grads, start = [], 0
        for x in point:
            size = int(np.prod(shape_of(x), dtype=np.int64))
            part = np.array([float(t) for t in output.tangents[start : start + size]])
            grads.append(float(part[0]) if np.ndim(x) == 0 else part.reshape(shape_of(x)))
            start += size
        table.forward_gradient = tuple(grads)


def _reverse_column(f, point, table, signature, out_row) -> None:
    """One recorded pass on tensors, then one backward sweep from the output."""
    output = table.rows[out_row]
    if output.value.size != 1:
        raise ValueError(
            f"trace_table: reverse mode needs f to return one number, not an array of shape "
            f"{output.value.shape}; sum it, or use mode='forward'"
        )
    leaves = [Tensor(np.array(x), requires_grad=True) for x in point]
    tracer, _ = _run(f, leaves)
    if _signature(tracer) != signature:
        raise RuntimeError(
            "trace_table: f computed different steps on tensors than in the primal run; "
            "it must not depend on anything but its inputs"
        )
    tensors = [s.out for s in tracer.steps]
    # One backward sweep from the output that stops to write down the adjoint
    # arriving at every row's record on the way (nothing goes into .grad).
    with cost.count() as counted:
        adjoints = autograd_grad(tensors[out_row], tensors)
    for row, adjoint in zip(table.rows, adjoints):
        row.adjoint = np.asarray(raw(adjoint.data))
    table.reverse_sweeps = counted.sweeps
    table.reverse_gradient = tuple(
        float(g) if np.ndim(x) == 0 else np.asarray(g)
        for g, x in zip((row.adjoint for row in table.rows if row.is_input), point)
    )
