"""Gradient checking: numeric references, ``check_grad`` and ``compare``.

References a derivative can be checked against:

``"symbolic"``
    SymPy's exact derivative (:mod:`adcompare.symbolic`), the default;
``"fd"``
    central finite differences with a step scaled to each input;
``"complex_step"``
    the complex step ``Im f(x + ih) / h``, exact to rounding for functions
    that are complex-safe (analytic, no ``abs``/``maximum``/comparisons);
any mode
    ``"forward"``, ``"reverse"``, or (with ``order=2``) a composition such as
    ``"fwd-over-rev"``.

The error measure is ADBench's: ρ = |a − b| / max(1, |a| + |b|), relative
for large entries and absolute for small ones. An entry passes when
``|a − b| <= atol + rtol * max(1, |a| + |b|)``. Default tolerances follow the
dtype of the differentiated inputs (float32 is judged at float32 precision)
and the reference (finite differences are less accurate than SymPy).

>>> import adcompare as ad
>>> report = ad.check_grad(lambda x, y: 3 * x**2 + x * y + 5 * y**2, 2.0, 3.0)
>>> report.passed
True
>>> print(report)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from adcompare import symbolic, transforms
from adcompare.engines.forward import as_float
from adcompare.ops.registry import HOLOMORPHIC, OPS, Box, ComplexNotSupportedError
from adcompare.pytree import flat_call
from adcompare.runtime.cost import count

__all__ = [
    "CheckReport",
    "Comparison",
    "ComparisonRow",
    "ModeCheck",
    "NotComplexSafeError",
    "check_grad",
    "checked_tolerance",
    "compare",
    "complex_step",
    "default_tolerance",
    "finite_differences",
    "relative_error",
]

#: Second-order modes: (outer Jacobian, inner gradient mode).
SECOND_ORDER_MODES = {
    "fwd-over-rev": ("forward", "reverse"),
    "rev-over-rev": ("reverse", "reverse"),
    "fwd-over-fwd": ("forward", "forward"),
    "rev-over-fwd": ("reverse", "forward"),
}
# With order=2, the plain mode names mean the pure compositions.
_PURE = {"forward": "fwd-over-fwd", "reverse": "rev-over-rev"}

NUMERIC_REFERENCES = ("fd", "complex_step")

_EPS = np.finfo(np.float64).eps


# --- flat views of the differentiated arguments -----------------------------------------


def _flatten(args: Sequence, positions: Sequence[int]) -> np.ndarray:
    parts = [np.asarray(args[p], dtype=np.float64).ravel() for p in positions]
    return np.concatenate(parts) if parts else np.zeros(0)


def _unflatten(z, args: Sequence, positions: Sequence[int]) -> list:
    """``args`` with the differentiated positions replaced from the flat vector ``z``."""
    out = list(args)
    start = 0
    for p in positions:
        shape = np.shape(args[p])
        size = math.prod(shape)
        out[p] = z[start : start + size].reshape(shape)
        start += size
    return out


def _split_columns(matrix: np.ndarray, lead: tuple, args, positions) -> list:
    """Split the last axis of ``matrix`` (flat inputs) into one block per position."""
    blocks, start = [], 0
    for p in positions:
        shape = np.shape(args[p])
        size = math.prod(shape)
        blocks.append(matrix[..., start : start + size].reshape(lead + shape))
        start += size
    return blocks


def _argnums(argnums, args: tuple, name: str) -> tuple[int, ...]:
    positions = symbolic._positions(argnums, args, name)
    if not positions:
        raise ValueError(
            f"{name}: no argument to differentiate (by default every real floating argument "
            "is); pass argnums= to choose"
        )
    return positions


def _pack(blocks: list, argnums, order: int):
    """Blocks in the shape the transforms return: one, a tuple, or a tuple of tuples."""
    many = isinstance(argnums, (tuple, list))
    if order == 1:
        return tuple(blocks) if many else blocks[0]
    n = math.isqrt(len(blocks))
    rows = tuple(tuple(blocks[i * n : (i + 1) * n]) for i in range(n))
    return rows if many else rows[0][0]


def _value(f, args) -> np.ndarray:
    out = f(*args)
    if out is None:
        raise TypeError(
            "the function returned None: did it forget a `return`? Return the value "
            "to differentiate (a number or an array)"
        )
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(
            f"the function returned a {type(out).__name__}; return a single array "
            "(stack or concatenate the outputs)"
        )
    if isinstance(out, Box):
        raise TypeError("the function returned a boxed value for plain inputs")
    out = np.asarray(out)
    if not np.issubdtype(out.dtype, np.number) and out.dtype != np.bool_:
        raise TypeError(
            f"the function returned a {out.dtype} value ({_short_repr(out)}); return a "
            "number or a numeric array"
        )
    return out


def _short_repr(value) -> str:
    text = repr(value.item() if value.ndim == 0 else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_scalar(shape, what: str) -> None:
    if math.prod(shape) != 1:
        raise ValueError(
            f"{what} needs a function with a scalar output, but this one returned shape "
            f"{tuple(shape)}; reduce the output (e.g. with sum) first"
        )


# --- finite differences -------------------------------------------------------------------


def _fd_steps(z: np.ndarray, relative: float) -> np.ndarray:
    h = relative * np.maximum(1.0, np.abs(z))
    # A step that is exactly representable: (z + h) - z == h.
    return (z + h) - z


def finite_differences(
    f: Callable, argnums=0, order: int = 1, step: float | None = None
) -> Callable:
    """Derivatives by central differences, computed in float64.

    ``order=1`` gives the Jacobian (shaped ``out.shape + x.shape``, the
    gradient for a scalar ``f``) from ``2n`` evaluations, with step
    ``h = step * max(1, |x|)``, ``step`` defaulting to eps^(1/3) ≈ 6e-6.
    ``order=2`` gives the Hessian of a scalar ``f`` by the four-point
    formula, with ``step`` defaulting to eps^(1/4) ≈ 1.2e-4. Expect about
    ``1e-8`` relative accuracy for first and ``1e-5`` for second
    derivatives of well-scaled functions.

    >>> import adcompare as ad
    >>> print(finite_differences(lambda x: ad.sum(x**3))([1.0, 2.0]).round(6))
    [ 3. 12.]
    """
    if order not in (1, 2):
        raise ValueError(f"finite_differences: order must be 1 or 2, not {order!r}")

    def numeric_derivative(*args):
        positions = _argnums(argnums, args, "finite_differences")
        z = _flatten(args, positions)
        call = lambda z: _value(f, _unflatten(z, args, positions)).astype(np.float64)
        with np.errstate(all="ignore"):
            if order == 1:
                steps = _fd_steps(z, step or _EPS ** (1 / 3))
                columns = []
                for i, h in enumerate(steps):
                    e = np.zeros_like(z)
                    e[i] = h
                    columns.append((call(z + e) - call(z - e)) / (2 * h))
                # Exactly 2n evaluations: the output's shape comes from the columns.
                out_shape = np.shape(columns[0]) if columns else np.shape(call(z))
                matrix = np.stack(columns, axis=-1) if columns else np.zeros(out_shape + (0,))
                blocks = _split_columns(matrix, out_shape, args, positions)
            else:
                blocks = _hessian_blocks(_fd_hessian(call, z, step), args, positions)
        return _pack(blocks, argnums, order)

    return numeric_derivative


def _fd_hessian(call, z: np.ndarray, step: float | None) -> np.ndarray:
    _check_scalar(np.shape(call(z)), "a second-order finite difference")
    steps = _fd_steps(z, step or _EPS ** (1 / 4))
    n = z.size
    hess = np.zeros((n, n))
    f0 = call(z).reshape(())
    for i in range(n):
        for j in range(i, n):
            ei = np.zeros(n)
            ei[i] = steps[i]
            ej = np.zeros(n)
            ej[j] = steps[j]
            if i == j:
                value = (call(z + 2 * ei) - 2 * f0 + call(z - 2 * ei)) / (4 * steps[i] ** 2)
            else:
                value = (
                    call(z + ei + ej) - call(z + ei - ej) - call(z - ei + ej) + call(z - ei - ej)
                ) / (4 * steps[i] * steps[j])
            hess[i, j] = hess[j, i] = np.reshape(value, ())
    return hess


def _hessian_blocks(hess: np.ndarray, args, positions) -> list:
    """Cut a flat Hessian into blocks ``H[p][q]`` shaped ``x_p.shape + x_q.shape``, row order."""
    shapes = [np.shape(args[p]) for p in positions]
    offsets = np.cumsum([0] + [math.prod(s) for s in shapes])
    return [
        hess[offsets[i] : offsets[i + 1], offsets[j] : offsets[j + 1]].reshape(
            shapes[i] + shapes[j]
        )
        for i in range(len(shapes))
        for j in range(len(shapes))
    ]


# --- the complex step --------------------------------------------------------------------------


class NotComplexSafeError(ValueError):
    """The complex step cannot be used: the function is not complex-safe."""


def _complex_reason(op) -> str:
    if op.complex is None:
        return (
            f"{op.name} declares no complex support (defop(..., complex=HOLOMORPHIC) "
            "if it is analytic)"
        )
    return f"{op.name} {op.complex}"


def _complex_call(f, args, positions):
    def call(z):
        refuse = "check against='symbolic' or against='fd' instead"
        try:
            with count() as seen:
                out = f(*_unflatten(z, args, positions))
        except ComplexNotSupportedError as error:
            raise NotComplexSafeError(
                f"complex step: the function is not complex-safe ({error}); {refuse}"
            ) from None
        unsafe = sorted(
            {
                name
                for engine, name in seen.by_op
                if engine == "numpy" and name in OPS and OPS[name].complex != HOLOMORPHIC
            }
        )
        if unsafe:
            reasons = "; ".join(_complex_reason(OPS[name]) for name in unsafe)
            raise NotComplexSafeError(
                f"complex step: the function is not complex-safe ({reasons}); {refuse}"
            )
        out = np.asarray(out)
        if not np.iscomplexobj(out):
            raise NotComplexSafeError(
                "complex step: the function returned real values for a complex input, so the "
                f"perturbation was dropped; {refuse}"
            )
        return out

    return call


def complex_step(f: Callable, argnums=0, order: int = 1, step: float = 1e-20) -> Callable:
    """Derivatives by the complex step, for complex-safe (analytic) functions.

    ``order=1``: ``J[..., i] = Im f(x + i·h·e_i) / h`` has no subtraction,
    so it is exact to rounding. ``order=2`` takes central differences of
    that gradient (about ``1e-10`` relative accuracy). A function that uses
    ops which are not complex-safe (``abs``, ``maximum``, ``clip``, ``max``,
    ...) is refused with :class:`NotComplexSafeError`.

    >>> import adcompare as ad
    >>> print(complex_step(lambda x: ad.sum(ad.sin(x)))([0.0, 0.0]))
    [1. 1.]
    """
    if order not in (1, 2):
        raise ValueError(f"complex_step: order must be 1 or 2, not {order!r}")

    def gradient_matrix(call, z):
        columns = []
        for i in range(z.size):
            h = step * max(1.0, abs(z[i].real))
            e = np.zeros(z.size, dtype=complex)
            e[i] = 1j * h
            columns.append(call(z + e).imag / h)
        return columns

    def complex_derivative(*args):
        positions = _argnums(argnums, args, "complex_step")
        z = _flatten(args, positions).astype(complex)
        call = _complex_call(f, args, positions)
        with np.errstate(all="ignore"):
            out_shape = np.shape(call(z))
            if order == 1:
                columns = gradient_matrix(call, z)
                matrix = np.stack(columns, axis=-1) if columns else np.zeros(out_shape + (0,))
                return _pack(_split_columns(matrix, out_shape, args, positions), argnums, 1)
            _check_scalar(out_shape, "a second-order complex step")
            steps = _fd_steps(z.real, _EPS ** (1 / 3))
            hess = np.zeros((z.size, z.size))
            for j, h in enumerate(steps):
                e = np.zeros(z.size)
                e[j] = h
                plus = np.reshape(gradient_matrix(call, z + e), -1)
                minus = np.reshape(gradient_matrix(call, z - e), -1)
                hess[:, j] = (plus - minus) / (2 * h)
            hess = (hess + hess.T) / 2
            return _pack(_hessian_blocks(hess, args, positions), argnums, 2)

    return complex_derivative


# --- derivatives by name ----------------------------------------------------------------------


def _mode_name(mode: str, order: int) -> str:
    if order == 2:
        return _PURE.get(mode, mode)
    if mode in SECOND_ORDER_MODES:
        raise ValueError(f"{mode!r} is a second-order mode; use it with order=2")
    return mode


def derivative_blocks(f: Callable, args: tuple, positions, mode: str, order: int, out_shape):
    """The derivative of ``f`` by ``mode`` as a flat list of blocks.

    Order 1: one Jacobian block per position, shaped ``out.shape + x.shape``.
    Order 2: blocks ``H[p][q]`` in row order, shaped ``x_p.shape + x_q.shape``.
    """
    argnums = tuple(positions)
    mode = _mode_name(mode, order)
    if order == 1:
        if mode == "fd":
            blocks = finite_differences(f, argnums)(*args)
        elif mode == "complex_step":
            blocks = complex_step(f, argnums)(*args)
        elif math.prod(out_shape) == 1:
            blocks = transforms.grad(f, argnums, mode=mode)(*args)
        else:
            blocks = transforms.jacobian(f, argnums, mode=mode)(*args)
        return [
            np.asarray(b).reshape(tuple(out_shape) + np.shape(args[p]))
            for b, p in zip(blocks, positions)
        ]
    _check_scalar(out_shape, "order=2")
    if mode == "fd":
        rows = finite_differences(f, argnums, order=2)(*args)
    elif mode == "complex_step":
        rows = complex_step(f, argnums, order=2)(*args)
    elif mode == "symbolic":
        rows = symbolic.hessian(f, argnums)(*args)
    elif mode in SECOND_ORDER_MODES:
        outer, inner = SECOND_ORDER_MODES[mode]
        jac = transforms.jacfwd if outer == "forward" else transforms.jacrev
        # Row p: the Jacobian (outer mode) of the gradient (inner mode) for argument p.
        rows = [jac(transforms.grad(f, p, mode=inner), argnums)(*args) for p in positions]
    else:
        known = ", ".join(repr(m) for m in ["forward", "reverse", *SECOND_ORDER_MODES, "symbolic"])
        raise ValueError(
            f"unknown second-order mode {mode!r}; use one of {known}, 'fd' or 'complex_step'"
        )
    return [
        np.asarray(block).reshape(np.shape(args[p]) + np.shape(args[q]))
        for p, row in zip(positions, rows)
        for q, block in zip(positions, row)
    ]


# --- tolerances and errors ---------------------------------------------------------------------

# Relative tolerance by the dtype of the differentiated inputs (and the order).
_DTYPE_RTOL = {
    np.dtype(np.float64): {1: 1e-8, 2: 1e-8},
    np.dtype(np.float32): {1: 1e-4, 2: 1e-3},
    np.dtype(np.float16): {1: 1e-2, 2: 3e-2},
}
# How accurate the numeric references are (order 1 and 2) in float64.
_REFERENCE_RTOL = {"fd": {1: 1e-6, 2: 1e-4}, "complex_step": {1: 1e-8, 2: 1e-6}}


def default_tolerance(dtype, against: str = "symbolic", order: int = 1) -> float:
    """The default ``rtol`` for inputs of ``dtype`` checked against ``against``.

    >>> default_tolerance("float64"), default_tolerance("float32")
    (1e-08, 0.0001)
    >>> default_tolerance("float64", against="fd")
    1e-06
    """
    dtype = np.dtype(dtype)
    by_order = _DTYPE_RTOL.get(dtype, _DTYPE_RTOL[np.dtype(np.float64)])
    rtol = by_order[order]
    if against in _REFERENCE_RTOL:
        rtol = max(rtol, _REFERENCE_RTOL[against][order])
    return rtol


def relative_error(a, b) -> np.ndarray:
    """ADBench's ρ = |a − b| / max(1, |a| + |b|), elementwise; 0 where a and b are equal.

    Two infinities of the same sign, or two NaNs, count as equal; any other
    non-finite entry gives ρ = inf.

    >>> relative_error([1.0, 100.0], [1.5, 101.0]).round(5).tolist()
    [0.2, 0.00498]
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    diff, scale = _difference(a, b)
    return diff / scale


def _difference(a: np.ndarray, b: np.ndarray):
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(all="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
        scale = np.maximum(1.0, np.abs(a) + np.abs(b))
    bad = ~same & ~(np.isfinite(a) & np.isfinite(b))
    diff = np.where(bad, np.inf, diff)
    scale = np.where(np.isfinite(scale), scale, 1.0)
    return diff, scale


# --- reports ------------------------------------------------------------------------------------


@dataclass
class ModeCheck:
    """One mode's derivative against the reference."""

    mode: str
    passed: bool
    max_abs_err: float = math.nan
    max_rel_err: float = math.nan
    worst: str = ""
    worst_index: tuple = ()
    got: float = math.nan
    expected: float = math.nan
    seconds: float = math.nan
    error: str | None = None
    derivative: list = field(default_factory=list, repr=False)
    rtol: float = math.nan

    def as_dict(self) -> dict:
        """JSON-ready fields."""
        return {
            "mode": self.mode,
            "passed": self.passed,
            "rtol": _json_number(self.rtol),
            "max_abs_err": _json_number(self.max_abs_err),
            "max_rel_err": _json_number(self.max_rel_err),
            "worst": self.worst,
            "got": _json_number(self.got),
            "expected": _json_number(self.expected),
            "seconds": _json_number(self.seconds),
            "error": self.error,
        }


def _json_number(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else str(x)


def _compare_blocks(mode, got_blocks, want_blocks, labels, rtol, atol) -> ModeCheck:
    worst = (-1.0, 0, ())
    max_abs = 0.0
    max_rel = 0.0
    failed = False
    for b, (got, want) in enumerate(zip(got_blocks, want_blocks)):
        got = np.asarray(got, dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        if got.shape != want.shape:
            return ModeCheck(
                mode,
                False,
                error=f"shape {got.shape} but the reference has shape {want.shape}",
                derivative=list(got_blocks),
                rtol=rtol,
            )
        if got.size == 0:
            continue
        diff, scale = _difference(got, want)
        rho = diff / scale
        failed |= bool(np.any(diff > atol + rtol * scale))
        max_abs = max(max_abs, float(np.max(diff)))
        index = np.unravel_index(int(np.argmax(rho)), rho.shape)
        if rho[index] > worst[0]:
            worst = (float(rho[index]), b, tuple(int(i) for i in index))
        max_rel = max(max_rel, float(np.max(rho)))
    rho, b, index = worst
    if rho < 0:  # a comparison of nothing proves nothing
        return ModeCheck(
            mode,
            False,
            error="no entry was compared (the derivative has no elements)",
            derivative=list(got_blocks),
            rtol=rtol,
        )
    return ModeCheck(
        mode,
        not failed,
        max_abs,
        max_rel,
        rtol=rtol,
        worst=labels(b, index),
        worst_index=(b, *index),
        got=float(np.asarray(got_blocks[b], dtype=np.float64)[index]),
        expected=float(np.asarray(want_blocks[b], dtype=np.float64)[index]),
        derivative=list(got_blocks),
    )


def _index_text(name: str, index: tuple) -> str:
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def _labeller(names, positions, args, out_shape, order):
    """A function (block, index) -> 'x[2]' / 'out[0], x[1]' / 'x[0], y'."""
    n = len(positions)

    def label(block: int, index: tuple) -> str:
        if order == 1:
            p = positions[block]
            k = len(out_shape)
            inner = _index_text(names[p], index[k:])
            if math.prod(out_shape) == 1:
                return inner
            return f"{_index_text('out', index[:k])}, {inner}"
        p, q = positions[block // n], positions[block % n]
        k = np.ndim(args[p])
        return f"{_index_text(names[p], index[:k])}, {_index_text(names[q], index[k:])}"

    return label


def _describe(value) -> str:
    value = np.asarray(value)
    shape = "scalar" if value.ndim == 0 else "x".join(map(str, value.shape))
    return f"{value.dtype} {shape}"


def format_seconds(seconds: float) -> str:
    """A duration for a table: ``12 us``, ``3.40 ms``, ``1.20 s``."""
    if not math.isfinite(seconds):
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    """Left-aligned text columns under a header and a rule."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


@dataclass
class CheckReport:
    """What :func:`check_grad` found: per mode, the errors against the reference.

    Truthy when every mode passed; prints as a table.
    """

    function: str
    arguments: list[str]
    against: str
    order: int
    rtol: float
    atol: float
    dtype: str
    results: list[ModeCheck]
    reference: list = field(default_factory=list, repr=False)
    note: str = ""

    @property
    def passed(self) -> bool:
        """Whether every mode agreed with the reference within tolerance (False if none ran)."""
        return bool(self.results) and all(r.passed for r in self.results)

    def __bool__(self) -> bool:
        return self.passed

    def __getitem__(self, mode: str) -> ModeCheck:
        for r in self.results:
            if r.mode == mode:
                return r
        raise KeyError(f"no mode {mode!r} in this report (modes: {[r.mode for r in self.results]})")

    @property
    def failures(self) -> list[ModeCheck]:
        """The modes that failed."""
        return [r for r in self.results if not r.passed]

    def __str__(self) -> str:
        what = "first derivatives" if self.order == 1 else "second derivatives"
        verdict = "passed" if self.passed else f"FAILED ({len(self.failures)} mode(s))"
        head = (
            f"check_grad {self.function}({', '.join(self.arguments)}): {verdict}\n"
            f"{what} against {self.against}; an entry passes if |a-b| <= atol + rtol * "
            f"max(1, |a|+|b|), atol={self.atol:g}; rel err = |a-b| / max(1, |a|+|b|)"
            + (f"\nnote: {self.note}" if self.note else "")
        )
        rows = []
        for r in self.results:
            if r.error is not None:
                rows.append([r.mode, "-", "-", "-", "-", "-", "-", f"FAIL: {r.error}"])
                continue
            rows.append(
                [
                    r.mode,
                    f"{r.max_abs_err:.2e}",
                    f"{r.max_rel_err:.2e}",
                    r.worst or "-",
                    f"{r.got:.10g}" if r.worst else "-",
                    f"{r.expected:.10g}" if r.worst else "-",
                    f"{r.rtol:g}",
                    "pass" if r.passed else "FAIL",
                ]
            )
        header = [
            "mode",
            "max abs err",
            "max rel err",
            "worst entry",
            "got",
            "expected",
            "rtol",
            "result",
        ]
        return f"{head}\n{format_table(header, rows)}"

    __repr__ = __str__

    def as_dict(self) -> dict:
        """JSON-ready summary."""
        return {
            "function": self.function,
            "arguments": self.arguments,
            "against": self.against,
            "order": self.order,
            "rtol": self.rtol,
            "atol": self.atol,
            "dtype": self.dtype,
            "passed": self.passed,
            "note": self.note,
            "results": [r.as_dict() for r in self.results],
        }

    def to_json(self) -> str:
        """The summary as a JSON string."""
        return json.dumps(self.as_dict(), indent=2)


def checked_tolerance(value, name: str) -> float | None:
    """``value`` as a float (``None``, the default, passes); refuses NaN, inf and negatives.

    With a NaN tolerance no entry fails, with inf every entry passes, and
    with a negative one none can: each would report a check that was not made.

    >>> checked_tolerance(1e-6, "rtol")
    1e-06
    >>> checked_tolerance(float("nan"), "rtol")
    Traceback (most recent call last):
    ...
    ValueError: rtol must be a finite number >= 0, not nan (NaN or inf would pass ...
    """
    if value is None:
        return None
    if not (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    ):
        raise ValueError(
            f"{name} must be a finite number >= 0, not {value!r} (NaN or inf would pass "
            "every entry, a negative one none); leave it out for the default, set by the "
            "dtype and the reference"
        )
    return float(value)


def _checked_tolerances(rtol, atol, what: str) -> tuple[float | None, float | None]:
    return checked_tolerance(rtol, f"{what}: rtol"), checked_tolerance(atol, f"{what}: atol")


def _setup(f, args, argnums, order, modes, what):
    if order not in (1, 2):
        raise ValueError(f"{what}: order must be 1 or 2, not {order!r}")
    if not modes:
        raise ValueError(f"{what}: no modes to check; pass modes=('forward', 'reverse') or others")
    positions = _argnums(argnums, args, what)
    args = tuple(as_float(a) if i in positions else a for i, a in enumerate(args))
    try:
        value = _value(f, args)
    except TypeError as error:
        raise TypeError(f"{what}: {error}") from None
    if order == 2:
        _check_scalar(value.shape, f"{what}(order=2)")
    if value.size == 0 or all(np.size(args[p]) == 0 for p in positions):
        empty = "output" if value.size == 0 else "differentiated argument(s)"
        raise ValueError(
            f"{what}: no derivative entry to compare: the {empty} of the function have no "
            "elements; check it at a point where they have some"
        )
    dtype = np.result_type(*[as_float(args[p]) for p in positions])
    if not np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float64)
    names = symbolic._argument_names(f, len(args))
    return args, positions, value, dtype, names


def _float64(args, positions) -> tuple:
    """The arguments with the differentiated ones in float64 (references are computed so)."""
    return tuple(
        as_float(a).astype(np.float64) if i in positions else a for i, a in enumerate(args)
    )


def _reference(f, args, positions, against, order, shape):
    exact = against in ("symbolic", *NUMERIC_REFERENCES)
    reference_args = _float64(args, positions) if exact else args
    return derivative_blocks(f, reference_args, positions, against, order, shape)


def _reference_or_fallback(f, args, positions, against, order, shape):
    """The reference, and a note when the default symbolic one had to give way.

    The default reference (``against=None``) is SymPy's; a function using an
    op with no SymPy counterpart is checked against the complex step instead,
    or finite differences when the op takes no complex input; one too large
    for exact differentiation against finite differences.
    """
    if against is not None:
        return _reference(f, args, positions, against, order, shape), against, ""
    try:
        return _reference(f, args, positions, "symbolic", order, shape), "symbolic", ""
    except symbolic.ExpressionTooLargeError as error:
        reference = _reference(f, args, positions, "fd", order, shape)
        return reference, "fd", f"checked against fd instead of SymPy: {error}"
    except symbolic.NoSymbolicCounterpartError as missing:
        reason = str(missing).split(", so ")[0]
    for fallback in NUMERIC_REFERENCES[::-1]:
        try:
            reference = _reference(f, args, positions, fallback, order, shape)
        except (TypeError, ValueError):
            continue
        return reference, fallback, f"{reason}: checked against {fallback} instead"
    raise ValueError(f"{reason}, and no numeric reference could evaluate it")


def check_grad(
    f: Callable,
    *args,
    modes: Sequence[str] = ("forward", "reverse"),
    against: str | None = None,
    order: int = 1,
    argnums=None,
    rtol: float | None = None,
    atol: float | None = None,
) -> CheckReport:
    """Check derivatives of ``f`` at ``args`` by each of ``modes`` against a reference.

    ``against`` is ``"symbolic"`` (SymPy's exact derivative), ``"fd"``,
    ``"complex_step"`` or another mode; by default SymPy's, or, when ``f``
    uses an op with no SymPy counterpart, the complex step (finite
    differences if the op takes no complex input), and, where the expression
    is too large for exact differentiation
    (:class:`~adcompare.symbolic.ExpressionTooLargeError`), finite
    differences, with a note in the report saying so. ``order=1`` checks the
    gradient (the Jacobian for array outputs); ``order=2`` checks the
    Hessian, where ``"forward"`` means forward-over-forward and ``"reverse"``
    reverse-over-reverse, and ``"fwd-over-rev"`` and ``"rev-over-fwd"`` name
    the mixed compositions. ``argnums`` defaults to every real floating
    argument. ``rtol`` defaults by dtype and reference (see
    :func:`default_tolerance`); ``atol`` to 0.

    Returns a :class:`CheckReport`; for an assertion use
    :func:`adcompare.testing.assert_grad_close`.

    >>> import adcompare as ad
    >>> f = lambda x: ad.sum(ad.tanh(x) * x)
    >>> report = check_grad(f, [0.5, -1.0], modes=("forward", "reverse"), order=2)
    >>> [r.mode for r in report.results], report.passed
    (['forward', 'reverse'], True)
    """
    rtol, atol = _checked_tolerances(rtol, atol, "check_grad")
    f, args, argnums = flat_call(f, args, argnums)  # pytrees: one entry per leaf
    if isinstance(modes, str):
        modes = (modes,)
    args, positions, value, dtype, names = _setup(f, args, argnums, order, modes, "check_grad")
    reference, against, note = _reference_or_fallback(
        f, args, positions, against, order, value.shape
    )
    base_rtol = default_tolerance(dtype, against, order) if rtol is None else rtol
    atol = 0.0 if atol is None else float(atol)

    def mode_rtol(mode: str) -> float:
        # A numeric mode checked against SymPy is judged at its own accuracy.
        if rtol is not None:
            return rtol
        return max(base_rtol, default_tolerance(dtype, mode, order))

    labels = _labeller(names, positions, args, value.shape, order)
    results = []
    for mode in modes:
        start = time.perf_counter()
        try:
            blocks = derivative_blocks(f, args, positions, mode, order, value.shape)
        except Exception as error:  # a mode that fails is a finding, not a crash
            results.append(ModeCheck(mode, False, error=f"{type(error).__name__}: {error}"))
            continue
        seconds = time.perf_counter() - start
        result = _compare_blocks(mode, blocks, reference, labels, mode_rtol(mode), atol)
        result.seconds = seconds
        results.append(result)
    return CheckReport(
        function=getattr(f, "__name__", type(f).__name__),
        arguments=[f"{names[p]}: {_describe(as_float(args[p]))}" for p in positions],
        against=against,
        order=order,
        rtol=base_rtol,
        atol=atol,
        dtype=str(dtype),
        results=results,
        reference=reference,
        note=note,
    )


# --- compare --------------------------------------------------------------------------------------


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
                    format_seconds(r.seconds),
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
        traced = symbolic._trace_for(f, args, positions)
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
    rtol, atol = _checked_tolerances(rtol, atol, "compare")
    f, args, argnums = flat_call(f, args, argnums)  # pytrees: one entry per leaf
    if isinstance(modes, str):
        modes = (modes,)
    args, positions, value, dtype, names = _setup(f, args, argnums, order, modes, "compare")
    symbolic.clear_cache(f)
    rows = []
    for mode in modes:
        row = ComparisonRow(mode)
        try:
            with count() as cost:
                start = time.perf_counter()
                row.derivative = derivative_blocks(f, args, positions, mode, order, value.shape)
                row.first_seconds = time.perf_counter() - start
            row.ops = sum(cost.ops.values())
            best, spent = math.inf, row.first_seconds
            for _ in range(max(0, repeat)):
                if spent > TIMING_BUDGET:  # a slow mode is timed by its first call alone
                    break
                start = time.perf_counter()
                derivative_blocks(f, args, positions, mode, order, value.shape)
                elapsed = time.perf_counter() - start
                best, spent = min(best, elapsed), spent + elapsed
            row.seconds = best if math.isfinite(best) else row.first_seconds
            row.value = _mode_value(f, args, positions, mode, value)
        except Exception as error:
            row.error = f"{type(error).__name__}: {error}"
        rows.append(row)
    reference_error = None
    try:
        by_mode = {r.mode: r for r in rows}
        if "symbolic" in by_mode and by_mode["symbolic"].error is None:
            reference = by_mode["symbolic"].derivative
        else:
            reference = _reference(f, args, positions, "symbolic", order, value.shape)
    except Exception as error:
        reference, reference_error = None, f"{type(error).__name__}: {error}"
    labels = _labeller(names, positions, args, value.shape, order)
    if reference is not None:
        for row in rows:
            if row.error is not None:
                row.passed = False
                continue
            against = row.mode if row.mode in NUMERIC_REFERENCES else "symbolic"
            tolerance = rtol if rtol is not None else default_tolerance(dtype, against, order)
            check = _compare_blocks(
                row.mode, row.derivative, reference, labels, tolerance, atol or 0.0
            )
            if check.error is not None:
                row.error, row.passed = check.error, False
                continue
            row.max_abs_err, row.max_rel_err = check.max_abs_err, check.max_rel_err
            row.worst, row.passed = check.worst, check.passed
    return Comparison(
        function=getattr(f, "__name__", type(f).__name__),
        arguments=[f"{names[p]}: {_describe(as_float(args[p]))}" for p in positions],
        names=[names[p] for p in positions],
        order=order,
        rows=rows,
        reference_error=reference_error,
    )
