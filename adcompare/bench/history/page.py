"""A history comparison as text and as one self-contained HTML page, flagged cells first.

The page opens with a figure of every compared cell's ratio (regressions,
improvements and the rest told apart by marker shape and fill as well as by
shade, so it reads in grey), then the table of cells, regressions first,
sortable by any column, then the crossovers that moved.
"""

from __future__ import annotations

import html
import io
from pathlib import Path

from matplotlib.figure import Figure

from adcompare.bench.history.compare import VERDICTS, Change, Comparison
from adcompare.bench.report.html import image, page, table
from adcompare.bench.report.plot_style import rc
from adcompare.durations import format_duration

__all__ = ["comparison_lines", "run_label", "write_comparison_page"]

#: How each verdict is drawn: marker, face and edge colour (distinct in grey too).
MARKS = {
    "slower": ("^", "#000000", "#000000"),
    "faster": ("v", "#ffffff", "#000000"),
    "unclear": ("D", "#999999", "#333333"),
    "untested": ("s", "#cccccc", "#666666"),
    "same": ("o", "#bbbbbb", "#bbbbbb"),
}


def run_label(run: dict) -> str:
    """One line naming a run: its number, command, machine, version and commit.

    >>> run_label({"id": 3, "command": "run", "machine": "vm", "version": "0.1.0",
    ...            "git_commit": "8869afe1234", "started": "2025-01-01T12:00:00+00:00"})
    'run 3 (run on vm, adcompare 0.1.0 at 8869afe123, started 2025-01-01T12:00:00+00:00)'
    """
    commit = f" at {run['git_commit'][:10]}" if run.get("git_commit") else ""
    return (
        f"run {run['id']} ({run['command']} on {run.get('machine') or 'an unrecorded machine'}, "
        f"adcompare {run.get('version') or 'of unrecorded version'}{commit}, "
        f"started {run.get('started') or 'at an unrecorded time'})"
    )


def _size(change: Change) -> str:
    return ", ".join(f"{name} = {value}" for name, value in change.size.items()) or "-"


def _value(change: Change, value: float, same_machine: bool) -> str:
    return format_duration(value) if same_machine else f"{value:.3g}× f"


def _p(change: Change) -> str:
    return "-" if change.p is None else f"{change.p:.3g}"


def _counts(comparison: Comparison) -> str:
    found = [f"{len(comparison.flagged(v))} {v}" for v in VERDICTS if comparison.flagged(v)]
    return ", ".join(found) or "no cell in common"


def comparison_lines(comparison: Comparison, before: dict, after: dict) -> list[str]:
    """What ``adcompare history compare`` prints: the runs, the flagged cells, the counts,
    and the crossovers that moved."""
    how = (
        "the same machine: medians compared by time"
        if comparison.same_machine
        else "different machines: never compared by time; each cell's ratio to plain f "
        "within its run is compared instead"
    )
    lines = [f"before: {run_label(before)}", f"after:  {run_label(after)}", how]
    lines.append(
        f"{len(comparison.changes)} cells in common ({comparison.only_before} only before, "
        f"{comparison.only_after} only after): {_counts(comparison)}"
    )
    for change in comparison.ordered():
        if change.verdict in ("slower", "faster"):
            lines.append(
                f"  {change.verdict:<7} {change.ratio:6.2f}×  p = {_p(change)}  "
                f"{change.problem} {change.mode} {_size(change)}"
            )
    moved = comparison.crossovers_moved
    lines.append(
        f"crossovers: {comparison.crossovers_agreed} agree, {len(moved)} moved"
        + (
            f", {len(comparison.crossovers_noise)} within the timing noise"
            if comparison.crossovers_noise
            else ""
        )
    )
    lines += [f"  {line}" for line in moved]
    return lines


def _figure(comparison: Comparison) -> bytes:
    with rc():
        figure = Figure(figsize=(9, 3.6))
        ax = figure.subplots()
        ordered = sorted(comparison.changes, key=lambda c: c.ratio)
        for verdict, (marker, face, edge) in MARKS.items():
            points = [(i, c.ratio) for i, c in enumerate(ordered) if c.verdict == verdict]
            if points:
                x, y = zip(*points, strict=True)
                ax.scatter(
                    x,
                    y,
                    marker=marker,
                    facecolor=face,
                    edgecolor=edge,
                    s=36,
                    label=f"{verdict} ({len(points)})",
                    zorder=3,
                )
        ax.set_yscale("log")
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_xlabel("cells, ordered by ratio")
        ax.set_ylabel("after ÷ before")
        ax.set_title("Each cell's median after ÷ before (above 1: slower)")
        ax.grid(True, alpha=0.3)
        if ordered:
            ax.legend(loc="upper left", frameon=True)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    return buffer.getvalue()


def _alt(comparison: Comparison) -> str:
    return (
        f"Scatter of the {len(comparison.changes)} compared cells' ratios after ÷ before on a "
        f"log scale, ordered by ratio: {_counts(comparison)}; regressions are filled "
        "triangles pointing up, improvements hollow triangles pointing down."
    )


def write_comparison_page(
    comparison: Comparison, before: dict, after: dict, path: str | Path
) -> Path:
    """Write the comparison as a self-contained HTML page at ``path``; returns it."""
    path = Path(path)
    same = comparison.same_machine
    rows = [
        (
            [
                change.verdict,
                (f"{change.ratio:.3f}×", change.ratio),
                change.problem,
                change.mode,
                _size(change),
                (_value(change, change.before, same), change.before),
                (_value(change, change.after, same), change.after),
                (_p(change), change.p if change.p is not None else 2),
                change.test,
            ],
            change.verdict if change.verdict in ("slower", "faster") else "",
        )
        for change in comparison.ordered()
    ]
    lines = comparison_lines(comparison, before, after)
    moved = comparison.crossovers_moved
    body = [
        f"<h1>History comparison: run {before['id']} → run {after['id']}</h1>",
        image(_figure(comparison), _alt(comparison)),
        *(f"<p>{html.escape(line)}</p>" for line in lines[:4]),
        "<h2>Cells, regressions first</h2>",
        "<p>Rows of regressions are dark and bold, of improvements grey and italic; the first "
        "column says which in words. Click a header to sort.</p>",
        table(
            ["verdict", "ratio", "problem", "mode", "size", "before", "after", "p", "test"],
            rows,
        ),
        "<h2>Crossovers</h2>",
        f"<p>{html.escape(lines[-1 - len(moved)])}</p>",
        "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in moved) + "</ul>",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        page(f"adcompare history: run {before['id']} → run {after['id']}", "\n".join(body)),
        encoding="utf-8",
    )
    return path
