"""The memory study's report: tables, where each mode stops fitting the memory
budget, and revolve's time against what its recompute count predicts.
Reads results only; measures nothing.
"""

from __future__ import annotations

import math
from pathlib import Path

from adcompare.bench.memory import analysis
from adcompare.bench.memory.peers import ALL_MEMORY_MODES, PEER_MEMORY_MODES
from adcompare.bench.memory.plots import save_memory_figures
from adcompare.bench.report.html import write_html
from adcompare.durations import format_duration

__all__ = ["format_bytes", "memory_report", "parse_bytes", "write_memory_report"]

_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_bytes(text: str) -> int:
    """A memory size such as ``1GiB``, ``512MiB``, ``2e9`` or ``800MB`` in bytes.

    >>> parse_bytes("1GiB"), parse_bytes("512 MiB"), parse_bytes("2e9")
    (1073741824, 536870912, 2000000000)
    """
    cleaned = text.strip().lower().replace(" ", "")
    number = cleaned.rstrip("kmgib")
    unit = cleaned[len(number) :]
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise ValueError(
            f"cannot read the memory size {text!r}; write a number of bytes with an "
            "optional unit: 1GiB, 512MiB, 800MB, 2e9"
        ) from None
    if not 0 < value < 2**63:  # NaN, 0, and sizes no machine has (1e400GiB reads as inf)
        raise ValueError(f"a memory size must be positive and below 8 EiB, not {text!r}")
    return int(value)


def format_bytes(value: float | None) -> str:
    """Bytes in binary units.

    >>> format_bytes(1536), format_bytes(3 * 2**30), format_bytes(None)
    ('1.5 KiB', '3 GiB', '–')
    """
    if value is None:
        return "–"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def _steps_text(steps: float | None) -> str:
    if steps is None:
        return "–"
    if math.isinf(steps):
        return "never: its memory does not grow with T"
    if steps <= 0:
        return "at every T: already over the budget"
    return f"T ≈ {steps:.2g}"


def _table(cells: list[dict], problem: str) -> list[str]:
    steps = sorted({c["steps"] for c in cells if c["problem"] == problem})
    modes = [m for m in ALL_MEMORY_MODES if any(c["mode"] == m for c in cells)]
    lines = [
        "| mode | " + " | ".join(f"T = {t:,}" for t in steps) + " |",
        "|---|" + "---|" * len(steps),
    ]
    for mode in modes:
        row = []
        for t in steps:
            cell = next(
                (
                    c
                    for c in cells
                    if c["problem"] == problem and c["mode"] == mode and c["steps"] == t
                ),
                None,
            )
            if cell is None or cell["status"] != "ok":
                row.append(
                    {None: "–", "error": "✗ not timed"}.get(cell and cell["status"], "skipped")
                )
                continue
            bad = " ✗" if cell.get("check") and not cell["check"]["ok"] else ""
            peak = format_bytes(cell["memory"]["peak_bytes"])
            if cell["memory"]["peak_bytes"] is None and "peak_tape_bytes" in cell["counts"]:
                peak = f"tape {format_bytes(cell['counts']['peak_tape_bytes'])}"  # not traced
            row.append(f"{format_duration(cell['time']['median'])}, {peak}{bad}")
        lines.append(f"| {ALL_MEMORY_MODES[mode].label} | " + " | ".join(row) + " |")
    return lines


def _budget_lines(cells: list[dict], problem: str, budget: float) -> list[str]:
    lines = [
        "| mode | theory | fitted peak memory | stops fitting the budget at |",
        "|---|---|---|---|",
    ]
    for mode, definition in ALL_MEMORY_MODES.items():
        line = analysis.ok_cells(cells, problem, mode)
        if not line or not definition.derivative:
            continue
        fit = analysis.fit_memory(line, mode)
        if fit is None:
            continue
        c, slope = fit
        law = {0.0: "O(1)", 0.5: "O(√T)", 1.0: "O(T)"}[slope]
        if definition.growth == "S":
            law = f"O(s), s = {definition.snapshots(0)}"
        shape = f"{format_bytes(c)}" + ("" if slope == 0 else f" · T^{slope:g}")
        crossing = _steps_text(analysis.budget_crossing(fit, budget))
        lines.append(f"| {definition.label} | {law} | {shape} | {crossing} |")
    return lines


def _rss_lines(cells: list[dict], problem: str) -> list[str]:
    lines = []
    for mode, definition in PEER_MEMORY_MODES.items():
        line = [c for c in analysis.ok_cells(cells, problem, mode) if c["memory"]["peak_bytes"]]
        if line:
            memory = line[-1]["memory"]
            lines.append(
                f"| {definition.label} | {line[-1]['steps']:,} | "
                f"{format_bytes(memory['peak_bytes'])} | "
                f"{format_bytes(memory.get('rss_peak_bytes'))} |"
            )
    if not lines:
        return []
    return ["| peer mode | T | own tool | resident set rise |", "|---|---|---|---|", *lines]


def _revolve_lines(cells: list[dict], problem: str) -> list[str]:
    lines = []
    for mode in ("revolve:4", "revolve:16", "revolve:64", "revolve:sqrt"):
        line = analysis.ok_cells(cells, problem, mode)
        if not line:
            continue
        cell = line[-1]
        t = cell["steps"]
        find = {
            m: next(iter(c for c in analysis.ok_cells(cells, problem, m) if c["steps"] == t), None)
            for m in ("f", "reverse")
        }
        predicted = analysis.predicted_seconds(cell, find["f"], find["reverse"])
        counts = cell["counts"]
        ratio = (
            f"{cell['time']['median'] / predicted:.2f}" if predicted else "– (needs f and reverse)"
        )
        lines.append(
            f"| {mode} | {t:,} | {counts['peak_snapshots']} + 1 | "
            f"{counts['recomputed_steps']:,} | {format_duration(cell['time']['median'])} | "
            f"{format_duration(predicted) if predicted else '–'} | {ratio} |"
        )
    if not lines:
        return []
    return [
        "| mode | T | states held (snapshots + current) | recomputed steps | measured | "
        "predicted | measured ÷ predicted |",
        "|---|---|---|---|---|---|---|",
        *lines,
    ]


def _peer_lines(cells: list[dict]) -> list[str]:
    """What the report says about the peers: their tools, or that none were measured."""
    peers = [m for m in PEER_MEMORY_MODES if any(c["mode"] == m for c in cells)]
    if not peers:
        return [
            "Peers (`torch.utils.checkpoint`, `jax.checkpoint` with `jax.lax.scan`) are not "
            "measured here: `adcompare memory --peers` adds them where they are installed.",
            "",
        ]
    out = [
        "Peers, each gradient checked against adcompare's at the same T before it is timed. "
        "tracemalloc does not see their arrays, so their peak memory is read by their own "
        "tools, which count the library's array buffers only, while tracemalloc counts every "
        "Python allocation adcompare makes (the tape's records as well as its arrays):",
        "",
        "| peer mode | what it does | peak memory read by |",
        "|---|---|---|",
    ]
    for mode in peers:
        definition = PEER_MEMORY_MODES[mode]
        out.append(f"| `{mode}` | {definition.label} | {definition.tool} |")
    return out + [""]


def memory_report(cells: list[dict], budget: float, figures: dict[str, str]) -> str:
    """The report's markdown text."""
    out = [
        "# Memory against time: checkpointing long loops",
        "",
        "Each loop is differentiated with respect to its parameters by forward mode (a lane "
        "per parameter), by reverse mode with the whole loop on the tape, with "
        "`adcompare.checkpoint` around each block of ⌈√T⌉ steps, and with "
        "`adcompare.checkpoint.scan` on Griewank and Walther's binomial schedule (revolve) "
        "at s = 4, 16, 64 and ⌈√T⌉ snapshots. Peak memory is traced by tracemalloc in its "
        "own call; time is the median of timed calls (one call once a call takes a second). "
        f"The memory budget is {format_bytes(budget)} (`--memory-budget`).",
        "",
        *_peer_lines(cells),
    ]
    for problem in dict.fromkeys(c["problem"] for c in cells):
        what = (
            "each mode's peak memory and time against the number of steps T, and memory "
            "against time at one T with the Pareto front"
        )
        out += [f"## {problem}", "", f"![{problem}: {what}]({figures.get(problem, '')})", ""]
        out += [
            "Time per gradient and peak memory (✗: the gradient check failed; *tape*: not "
            "traced, the peak live tape bytes `adcompare.count()` counted):",
            "",
        ]
        out += _table(cells, problem) + [""]
        out += [
            "Where each mode stops fitting the budget, from its theory line fitted to the "
            "measured peaks:",
            "",
        ]
        out += _budget_lines(cells, problem, budget) + [""]
        rss = _rss_lines(cells, problem)
        if rss:
            out += [
                "The peers at the largest T measured: the peak by their own tool beside the "
                "rise of the process's resident set (Linux's high-water mark, reset before the "
                "call): whole pages of everything the process touched, blind to pages it "
                "reused:",
                "",
                *rss,
                "",
            ]
        revolve = _revolve_lines(cells, problem)
        if revolve:
            out += [
                "Revolve at the largest T measured: the states it held, and its time against "
                "the time its recompute count predicts (every untaped step at plain f's cost "
                "per step, each of the T taped steps with its sweep at the full tape's):",
                "",
                *revolve,
                "",
            ]
    return "\n".join(out)


def write_memory_report(cells: list[dict], out: Path, budget: float) -> Path:
    """Figures and ``report.md`` into ``out``; returns the report's path."""
    paths = save_memory_figures(cells, out, budget)
    figures = {path.stem.removeprefix("memory-"): path.name for path in paths}
    report = out / "report.md"
    report.write_text(memory_report(cells, budget, figures) + "\n", encoding="utf-8")
    write_html(report)
    return report
