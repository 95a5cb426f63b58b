"""The GradBench report: adcompare's derivative ÷ primal beside the published tools'.

Our figures are the records ``adcompare gradbench --run`` wrote (one per
eval, workload and mode, :mod:`~adcompare.gradbench.runner`); the published
ones come from GradBench's nightly file (:mod:`~adcompare.gradbench.published`).
Each eval's figure is the geometric mean of derivative ÷ primal over the
workloads we measured, and each tool's the same mean over the same workloads
where it published both times: a ratio divides two times taken on one
machine, so ratios from different machines can stand side by side where raw
times cannot.

>>> geometric_mean([2.0, 8.0])
4.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from adcompare.durations import format_duration
from adcompare.gradbench.published import (
    NESTED_TOOLS,
    PYTHON_TOOLS,
    TOOLS,
    published_ratios,
    published_times,
    source_text,
)

__all__ = ["geometric_mean", "report_markdown", "workload_lines"]


def geometric_mean(values: Iterable[float]) -> float:
    """The geometric mean of positive numbers (NaN for none).

    >>> math.isnan(geometric_mean([]))
    True
    """
    values = list(values)
    if not values:
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _bytes(count: int | None) -> str:
    if count is None:
        return "–"
    return f"{count / 2**20:.0f} MiB" if count < 2**30 else f"{count / 2**30:.2f} GiB"


def _spread(record: dict) -> float | None:
    """The larger of a record's functions' spreads (IQR ÷ median of their calls)."""
    spreads = [s for s in record.get("spread", {}).values() if s is not None]
    return max(spreads) if spreads else None


def _percent(spread: float | None) -> str:
    return "–" if spread is None else f"{100 * spread:.0f} %"


def workload_lines(records: list[dict]) -> list[str]:
    """Every record as a row of one Markdown table: times, ratio, the calls' spread, peak
    memory, status.

    >>> print(workload_lines([{"eval": "lse", "mode": "reverse", "workload": "n=2500",
    ...     "status": "ok", "seconds": {"primal": 1e-5, "gradient": 3e-5}, "ratio": 3.0,
    ...     "spread": {"primal": 0.02, "gradient": 0.05}, "peak_bytes": 2**27}])[2])
    | lse | reverse | n=2500 | primal 10 µs | gradient 30 µs | 3.00 | 5 % | 128 MiB | – | ok |
    """
    lines = [
        "| eval | mode | workload | first function | second function | ratio | spread "
        "| peak memory | before the input | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    several = any(r.get("repeat", 0) for r in records)  # name each row's run (--repeat)
    for r in records:
        workload = f"{r['workload']} (run {r.get('repeat', 0) + 1})" if several else r["workload"]
        times = [f"{name} {format_duration(s)}" for name, s in r.get("seconds", {}).items()]
        times = (times + ["–", "–"])[:2] if len(times) <= 2 else [", ".join(times), "–"]
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else "–"
        status = r["status"] + (f": {r['error']}" if r.get("error") else "")
        lines.append(
            f"| {r['eval']} | {r['mode']} | {workload} | {times[0]} | {times[1]} | {ratio} "
            f"| {_percent(_spread(r))} | {_bytes(r.get('peak_bytes'))} "
            f"| {_bytes(r.get('baseline_bytes'))} | {status.replace('|', '/')} |"
        )
    return lines


def _published_cell(entry: dict | None, tool: str, workloads: list[str]) -> str:
    """A tool's geometric-mean ratio over ``workloads``, saying how many it published."""
    if entry is None:
        return "n/a"
    ratios = published_ratios(entry, tool)
    shared = [ratios[w] for w in workloads if w in ratios]
    outcome = entry.get("tools", {}).get(tool, {}).get("outcome", "absent")
    if not shared:
        return "–" if outcome == "success" else outcome
    figure = f"{geometric_mean(shared):.2f}"
    return figure if len(shared) == len(workloads) else f"{figure} ({len(shared)}/{len(workloads)})"


def _classic_groups(records: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """The measured classic records by eval and mode, one a workload: of a workload
    measured in several runs (``--repeat``), the run of the median ratio (the lower of
    the middle two), with ``across`` its ratios' range ÷ that median."""
    runs: dict[tuple, list[dict]] = {}
    for r in records:
        if r["status"] == "ok" and "ratio" in r:
            runs.setdefault((r["eval"], r["mode"], r.get("index"), r["workload"]), []).append(r)
    groups: dict[tuple[str, str], list[dict]] = {}
    for (name, mode, _, _), measured in runs.items():
        measured.sort(key=lambda r: r["ratio"])
        median = measured[(len(measured) - 1) // 2]
        ratios = [r["ratio"] for r in measured]
        across = (ratios[-1] - ratios[0]) / median["ratio"] if len(ratios) > 1 else None
        groups.setdefault((name, mode), []).append({**median, "across": across})
    return groups


def _classic_lines(records: list[dict], published: dict | None) -> list[str]:
    lines = [
        "| eval | adcompare mode | workloads | adcompare | its primal | largest spread "
        "| across runs | " + " | ".join(TOOLS) + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(TOOLS),
    ]
    for (name, mode), group in _classic_groups(records).items():
        workloads = [r["workload"] for r in group]
        entry = None if published is None else published["evals"].get(name)
        cells = [_published_cell(entry, tool, workloads) for tool in TOOLS]
        ours = geometric_mean(r["ratio"] for r in group)
        primal = format_duration(geometric_mean(_seconds(r)[0] for r in group))
        spreads = [s for s in map(_spread, group) if s is not None]
        spread = _percent(max(spreads) if spreads else None)
        ranges = [r["across"] for r in group if r["across"] is not None]
        across = f"{_percent(max(ranges))} ({_runs(records, name, mode)} runs)" if ranges else "–"
        lines.append(
            f"| {name} | {mode} | {len(workloads)} | **{ours:.2f}** | {primal} | {spread} "
            f"| {across} | " + " | ".join(cells) + " |"
        )
    return lines


def _runs(records: list[dict], name: str, mode: str) -> int:
    """How many runs measured the eval in this mode (``--repeat``)."""
    return len({r.get("repeat", 0) for r in records if (r["eval"], r["mode"]) == (name, mode)})


def _standing_lines(records: list[dict], published: dict | None) -> list[str]:
    """Each eval beside the hand-written C++ tool and each Python tool that ran it: their
    ratio and adcompare's best mode over the workloads both measured, and how many times
    our time each of their two times took (each on its own machine)."""
    lines = [
        "| eval | beside | workloads both ran | their ratio | adcompare's best mode "
        "| adcompare | ahead | their derivative ÷ ours | their primal ÷ ours |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    if published is None:
        return lines
    modes: dict[str, dict[str, dict[str, dict]]] = {}
    for (name, mode), group in _classic_groups(records).items():
        modes.setdefault(name, {})[mode] = {r["workload"]: r for r in group}
    for name, by_mode in modes.items():
        entry = published["evals"].get(name, {})
        for tool in ("manual", *PYTHON_TOOLS):
            times = published_times(entry, tool)
            best = None
            for mode, ours in by_mode.items():
                shared = [w for w in ours if w in times]
                if shared:
                    mean = geometric_mean(ours[w]["ratio"] for w in shared)
                    best = min(best or (mean, mode, shared), (mean, mode, shared))
            if best is None:
                continue
            mean, mode, shared = best
            them = geometric_mean(times[w][1] / times[w][0] for w in shared)
            ahead = "yes" if mean < them else f"no: {mean / them:.2f}× theirs"
            ours = by_mode[mode]
            slower = [
                _times(geometric_mean(times[w][k] / _seconds(ours[w])[k] for w in shared))
                for k in (1, 0)
            ]
            lines.append(
                f"| {name} | {tool} | {len(shared)} | {them:.2f} | {mode} | **{mean:.2f}** "
                f"| {ahead} | {slower[0]} | {slower[1]} |"
            )
    return lines


def _seconds(record: dict) -> tuple[float, float]:
    """A classic workload's (primal, derivative) times, in the runner's order."""
    first, second = list(record["seconds"].values())[:2]
    return first, second


def _times(factor: float) -> str:
    """How many times longer, to three figures or in whole numbers from 100.

    >>> _times(0.5), _times(12.34), _times(4309.6)
    ('0.5×', '12.3×', '4,310×')
    """
    return f"{factor:,.0f}×" if factor >= 100 else f"{factor:.3g}×"


def _nested_lines(records: list[dict], published: dict | None) -> list[str]:
    lines = ["| eval | variant | adcompare | " + " | ".join(NESTED_TOOLS) + " | ÷ haskell |"]
    lines.append("|---|---|---|" + "---|" * (len(NESTED_TOOLS) + 1))
    for r in records:
        if r["status"] != "ok" or "ratio" in r:
            continue
        entry = {} if published is None else published["evals"].get(r["eval"], {})
        for variant, seconds in r["seconds"].items():
            theirs = [
                entry.get("tools", {}).get(tool, {}).get("variants", {}).get(variant)
                for tool in NESTED_TOOLS
            ]
            cells = [
                format_duration(t) if t else ("n/a" if published is None else "–") for t in theirs
            ]
            slower = f"{seconds / theirs[-1]:.2f}" if theirs[-1] else "–"
            lines.append(
                f"| {r['eval']} | {variant} | {format_duration(seconds)} | "
                + " | ".join(cells)
                + f" | {slower} |"
            )
    return lines


def report_markdown(records: list[dict], published: dict | None, unavailable: str = "") -> str:
    """The report as Markdown; ``published`` None leaves the tools' columns ``n/a`` and
    says why (``unavailable``: where the file was looked for).

    >>> text = report_markdown([], None, "not at /x")
    >>> "published figures are unavailable: not at /x" in text
    True
    """
    source = (
        f"Published figures: {source_text(published)}, mean seconds per call as GradBench's "
        "nightly CI measured them."
        if published is not None
        else f"The published figures are unavailable: {unavailable}."
    )
    lines = [
        "# GradBench: derivative ÷ primal, adcompare beside the published tools",
        "",
        source,
        "",
        "Each figure is the geometric mean, over the workloads adcompare measured, of the "
        "derivative's mean time ÷ the primal's mean time, each on its own machine. A tool's "
        "figure uses the same workloads where it published both times; `(k/n)` says it "
        "published only k of them, and a word in place of a figure is the outcome GradBench "
        "recorded for a tool that published none of them. The adcompare mode column says "
        "which of our engines answered the derivative, and `its primal` the geometric mean of "
        "our primal's time over the same workloads; `spread` is the interquartile range of "
        "one function's calls ÷ their median, the largest over its workloads; where each "
        "workload was measured in several runs (`--repeat`), its figure is the run of the "
        "median ratio and `across runs` the largest range of a workload's ratios ÷ that "
        "median. adcompare's "
        "server ran with one BLAS "
        "thread and glibc's allocator thresholds fixed (`runner.MEASURING`).",
        "",
        *_section("Classic evals", _classic_lines(records, published)),
        *_section(
            "Standing: beside the hand-written C++ tool and each Python tool, over the "
            "workloads both ran (the last two columns divide times taken on different "
            "machines: an order of magnitude, not a measurement)",
            _standing_lines(records, published),
        ),
        *_section(
            "Nested evals: mean seconds per call, each on its own machine (compare with care)",
            _nested_lines(records, published),
        ),
        *_section("Every workload measured", workload_lines(records)),
    ]
    return "\n".join(lines)


def _section(title: str, table: list[str]) -> list[str]:
    """A heading and its table, or nothing when the table has no rows."""
    return ["## " + title, "", *table, ""] if len(table) > 2 else []
