"""The sparse sweep's report: colours, passes and time per problem and strategy, crossovers.

Reads the results of :func:`~adcompare.bench.sparse.sweep.run_sparse_sweep`
and writes Markdown beside the figures.
"""

from __future__ import annotations

import json
from pathlib import Path

from adcompare.bench.report.html import write_html
from adcompare.bench.sparse.plots import colours_figure, spy_figure, time_figure
from adcompare.bench.sparse.problems import SPARSE_PROBLEMS
from adcompare.bench.sparse.sweep import vjps

__all__ = ["crossover", "sparse_report", "write_sparse_report"]

DENSE = ("dense-forward", "dense-reverse")
#: asdex's colourings in the colour tables, in this order.
ASDEX_STRATEGIES = ("forward", "reverse", "symmetric star", "star")


def _cells(results: dict, problem: str) -> list[dict]:
    return [c for c in results["cells"] if c["problem"] == problem and "time" in c]


def crossover(results: dict, problem: str, mode: str) -> str:
    """From which n on ``mode`` beats the faster dense mode, at every measured n after.

    >>> cells = [{"problem": "p", "n": n, "mode": m, "time": t} for n, m, t in [
    ...     (4, "dense-forward", 1.0), (4, "sparse-forward", 2.0),
    ...     (16, "dense-forward", 4.0), (16, "sparse-forward", 3.0)]]
    >>> crossover({"cells": cells}, "p", "sparse-forward")
    'n ≥ 16'
    """
    cells = _cells(results, problem)
    sizes = sorted({c["n"] for c in cells if c["mode"] in DENSE})
    wins = []
    for n in sizes:
        dense = min(c["time"] for c in cells if c["n"] == n and c["mode"] in DENSE)
        mine = [c["time"] for c in cells if c["n"] == n and c["mode"] == mode]
        if mine:
            wins.append((n, mine[0] < dense))
    if not wins:
        return "not measured"
    if all(win for _, win in wins):
        return f"always (n ≥ {wins[0][0]})"
    if not wins[-1][1]:
        return f"never up to n = {wins[-1][0]}"
    first = next(n for i, (n, _) in enumerate(wins) if all(w for _, w in wins[i:]))
    return f"n ≥ {first}"


def _colour_table(results: dict, problem: str) -> list[str]:
    rows = [r for r in results["colours"] if r["problem"] == problem]
    strategies = list(rows[0]["counts"])
    head = ["size", "n", "m", "non-zeros", "max per row"]
    head += [f"{s} (best order)" for s in strategies]
    peer = [s for s in ASDEX_STRATEGIES if s in rows[0].get("asdex", {})]
    head += [f"asdex {s}" for s in peer]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        counts = [
            f"{r['counts'][s][r['defaults'][s]]} ({min(r['counts'][s].values())})"
            for s in strategies
        ]
        values = [r["size"], r["n"], r["m"], r["nnz"], r["max_row"], *counts]
        values += [r["asdex"][s] for s in peer]
        lines.append("| " + " | ".join(str(v) for v in values) + " |")
    return lines


def _orders_line(results: dict, problem: str) -> str:
    row = next(r for r in results["colours"] if r["problem"] == problem)
    orders = ", ".join(f"{s} {o}" for s, o in row["defaults"].items())
    return f"Colours with each sparse mode's ordering ({orders}), and the fewest of any ordering:"


def _time_table(results: dict, problem: str) -> list[str]:
    cells = [c for c in results["cells"] if c["problem"] == problem]
    modes = list(dict.fromkeys(c["mode"] for c in cells))
    sizes = list(dict.fromkeys((c["size"], c["n"]) for c in cells))
    head = ["mode", *[f"n = {n}" for _, n in sizes]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode in modes:
        row = [mode]
        for size, _ in sizes:
            found = [c for c in cells if c["mode"] == mode and c["size"] == size]
            if not found or "time" not in found[0]:
                row.append("–")
                continue
            c = found[0]
            row.append(f"{c['seeds']}+{vjps(c)} / {c['time'] * 1e3:.3g} ms")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _asdex_paragraph(results: dict) -> list[str]:
    state = results.get("asdex", "not measured")
    if not state.startswith("measured"):
        return [f"asdex (sparse AD in JAX) is not in these tables: {state}."]
    return [
        f"asdex (sparse AD in JAX; {state.split(': ', 1)[1]}) is measured in the same run with",
        "its own pattern detection (on the jaxpr) and greedy largest-first colouring, of",
        "columns or rows, whichever needs fewer (`asdex forward`, `asdex reverse`), star",
        "colouring for Hessians and for Jacobians declared symmetric; it has no",
        "bidirectional colouring. `asdex` jits its sparse derivative once (XLA, compiled",
        "code) and `asdex+prep` detects, colours and evaluates unjitted in every call;",
        "adcompare's modes run op by op in Python, so compare colours one for one, and",
        "times as compiled against interpreted. asdex's JVP and VJP counts are its",
        "colours, not counted by `adcompare.count()`.",
    ]


def sparse_report(results: dict, figures: dict[str, str]) -> str:
    """The Markdown report of one sparse sweep."""
    lines = [
        "# Sparse Jacobians and Hessians: dense against sparse forward, reverse and both",
        "",
        "Each Jacobian is computed whole: dense by `jacfwd` (n JVPs as lanes) or `jacrev`",
        "(m VJPs); sparse by one JVP per column colour, one VJP per row colour, or both",
        "(star bicolouring). Patterns come from the index-set tracer (`adcompare.sparsity`),",
        "colours from greedy colouring in each mode's default ordering (saturation degree",
        "for columns and rows, largest-first for bicolouring and acyclic, dynamic",
        "largest-first for star), the fewest of any ordering in brackets. `MODE+prep` detects the",
        "pattern and colours it in every call; `MODE` reuses the prepared plan. Every",
        "sparse result equals the dense one to 1e-12 (checked in the sweep where n ≤ 1024).",
        "JVPs run as the lanes of one forward pass, VJPs as the cotangent lanes of one sweep "
        "over one recorded pass.",
        "For the Hessian problem `sparse-forward` is star colouring (direct recovery) and",
        "`sparse-reverse` acyclic colouring (substitution), both with forward-over-reverse",
        "HVPs; the dense modes are `hessian` forward over reverse and reverse over reverse.",
        "`symmetric-star` colours a symmetric Jacobian as a Hessian. Times are medians on a",
        "shared machine: below a millisecond they are noisy, so read crossovers with that in",
        "mind.",
        "",
        f"![colours against n]({figures['colours']})",
        "",
        f"![time against n]({figures['time']})",
        "",
        f"![patterns by colour]({figures['spy']})",
        "",
        *_asdex_paragraph(results),
        "",
    ]
    for problem in dict.fromkeys(r["problem"] for r in results["colours"]):
        known = SPARSE_PROBLEMS.get(problem)
        lines += [f"## {problem}", "", known.description if known else "", ""]
        lines += [_orders_line(results, problem), ""]
        lines += _colour_table(results, problem) + [""]
        lines += ["JVPs+VJPs / seconds per call:", ""]
        lines += _time_table(results, problem) + [""]
        sparse_modes = [
            m for m in dict.fromkeys(c["mode"] for c in _cells(results, problem)) if m not in DENSE
        ]
        lines += ["Crossovers (faster than the faster dense mode):", ""]
        lines += [f"- {mode}: {crossover(results, problem, mode)}" for mode in sparse_modes]
        lines.append("")
    return "\n".join(lines)


def write_sparse_report(results_path: Path, out_dir: Path) -> Path:
    """Draw the figures and write ``sparse.md`` into ``out_dir``; returns its path."""
    results = json.loads(Path(results_path).read_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = {}
    for name, draw in (("colours", colours_figure), ("time", time_figure), ("spy", spy_figure)):
        path = out_dir / f"sparse_{name}.png"
        draw(results).savefig(path, dpi=90)
        figures[name] = path.name
    report = out_dir / "sparse.md"
    report.write_text(sparse_report(results, figures))
    write_html(report)
    return report
