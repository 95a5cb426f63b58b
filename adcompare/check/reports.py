"""What a check found: per-mode errors, the worst entry, and text tables."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from adcompare.check.tolerances import _difference


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
