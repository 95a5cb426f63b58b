"""The report's peer comparison: JAX, PyTorch and autograd beside adcompare's modes.

Each peer mode is compared with the adcompare mode doing the same job (its
``counterpart``: reverse for gradients and ``jacrev``, chunked forward for
``jacfwd`` and the ``make_jvp`` loop) at the largest size both measured.
A peer's first call is reported beside its median: for a jitted mode the
difference is mostly compilation. Nothing is measured here.
"""

from __future__ import annotations

from adcompare.bench.harness.modes import mode_label
from adcompare.bench.harness.results import Results
from adcompare.bench.peers import PEER_MODES
from adcompare.bench.report import analysis
from adcompare.bench.report.text import format_ratio, format_time

__all__ = ["peer_comparisons", "peer_conclusions", "peer_section"]


def _size_key(cell: dict) -> tuple:
    return tuple(sorted(cell["size"].items()))


def _size_text(cell: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in cell["size"].items())


def peer_comparisons(results: Results) -> list[dict]:
    """One row per (problem, peer mode): the peer's cell and its counterpart's, at the
    largest size (by n·m) where both were measured.

    >>> peer_comparisons(Results())
    []
    """
    measured = {
        (c["problem"], c["mode"], _size_key(c)): c
        for c in results.cells
        if c["status"] == "ok" and c.get("time")
    }
    rows = []
    for problem in analysis.problems_in(results):
        for name, peer in PEER_MODES.items():
            pairs = [
                (cell, measured[problem, peer.counterpart, size])
                for (p, mode, size), cell in measured.items()
                if p == problem and mode == name and (problem, peer.counterpart, size) in measured
            ]
            if pairs:
                cell, counterpart = max(pairs, key=lambda pair: pair[0]["n"] * pair[0]["m"])
                rows.append({"problem": problem, "peer": cell, "counterpart": counterpart})
    return rows


def _ratio(row: dict) -> float:
    """The peer's median time ÷ its adcompare counterpart's."""
    return row["peer"]["time"]["median"] / row["counterpart"]["time"]["median"]


def _row(row: dict) -> str:
    peer, ours = row["peer"], row["counterpart"]
    median, first = peer["time"]["median"], peer["time"].get("warmup")
    ratio = _ratio(row)
    first_text = format_time(first) if first is not None else "–"
    if first is not None and PEER_MODES[peer["mode"]].jit:
        first_text += f" (compile ≈ {format_time(max(0.0, first - median))})"
    return (
        f"| {row['problem']} | {_size_text(peer)} | {mode_label(peer['mode'])} | "
        f"{format_time(median)} | {first_text} | {mode_label(ours['mode'])} "
        f"{format_time(ours['time']['median'])} | {format_ratio(ratio)} |"
    )


def peer_section(results: Results) -> list[str]:
    """The report's "Peers" section: how to read them, and the comparison table."""
    rows = peer_comparisons(results)
    if not rows:
        return []
    return [
        "## Peers: JAX, PyTorch and HIPS autograd",
        "",
        "The same problem definitions, differentiated by the peer libraries in float64 on "
        "one thread, each result checked against adcompare's derivative like adcompare's own "
        "modes. In the figures peers are dashed (dotted when jitted) with hollow markers, one "
        "colour per library, in the top row only: adcompare's counters do not see their work, "
        "and tracemalloc sees only autograd's (numpy) memory.",
        "",
        "Each peer mode beside the adcompare mode doing the same job, at the largest size "
        "both measured; the first call includes JAX's compilation (jit) or tracing caches:",
        "",
        "| problem | size | peer | median | first call | adcompare | peer ÷ adcompare |",
        "|---|---|---|---:|---:|---:|---:|",
        *map(_row, rows),
        "",
    ]


def peer_conclusions(results: Results) -> list[str]:
    """One sentence per problem: how many peer modes beat their adcompare counterpart."""
    lines = []
    by_problem: dict[str, list[dict]] = {}
    for row in peer_comparisons(results):
        by_problem.setdefault(row["problem"], []).append(row)
    for problem, rows in by_problem.items():
        ratios = {row["peer"]["mode"]: _ratio(row) for row in rows}
        fastest = min(ratios, key=ratios.get)
        faster = sum(r < 1 for r in ratios.values())
        lines.append(
            f"**{problem}**, peers: {faster} of {len(ratios)} peer modes were faster than "
            f"adcompare's counterpart at the largest common size; the fastest relative to it "
            f"was {mode_label(fastest)}, {format_ratio(ratios[fastest])} adcompare's time."
        )
    return lines
