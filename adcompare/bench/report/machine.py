"""The report's machine section: each environment that measured cells, and the load.

>>> from adcompare.bench.harness.results import Results
>>> machine_section(Results())
['## Machine', '']
"""

from __future__ import annotations

from collections import Counter

from adcompare.bench.harness.env import allocator_text
from adcompare.bench.harness.results import Results
from adcompare.bench.report.analysis import home_machine, machine_of, problems_in

__all__ = ["machine_lines", "machine_section"]


def _known(value) -> str:
    return "unknown" if value in (None, "", [], {}) else str(value)


def machine_lines(description: dict) -> list[str]:
    """One environment as bullet points; what was not recorded reads "unknown".

    >>> print("\\n".join(machine_lines({"python": "3.11.7", "cpus_total": 2})))
    - machine: unknown, unknown
    - CPU: unknown, 2 cores (how many were available: unknown)
    - Python 3.11.7; library versions unknown
    - BLAS: unknown; threads: unknown
    - dtype: float64
    - allocator: not recorded
    """
    versions = {k: v for k, v in (description.get("versions") or {}).items() if v}
    pools = (description.get("threads") or {}).get("blas_pools") or []
    available, total = description.get("cpus_available"), description.get("cpus_total")
    if available is not None and total is not None:
        cores = f"{available} of {total} cores available"
    elif total is not None:
        cores = f"{total} cores (how many were available: unknown)"
    else:
        cores = "cores unknown"
    return [
        f"- machine: {_known(description.get('machine'))}, {_known(description.get('platform'))}",
        f"- CPU: {_known(description.get('cpu'))}, {cores}",
        f"- Python {_known(description.get('python'))}; "
        + (", ".join(f"{k} {v}" for k, v in versions.items()) or "library versions unknown"),
        f"- BLAS: {_known(description.get('blas'))}; threads: "
        + (", ".join(f"{p['library']} {p['threads']}" for p in pools) or "unknown"),
        f"- dtype: {description.get('dtype', 'float64')}",
        f"- allocator: {allocator_text(description.get('allocator'))}",
    ]


def _several_machines(results: Results) -> list[str]:
    """What the numbers mean when more than one machine measured them (none: ``[]``).

    >>> results = Results({"schema": "", "schema_version": 1, "runs": [], "cells": [],
    ...                    "environments": {"env-a": {"machine": "a"}, "env-b": {"machine": "b"}}})
    >>> for env in ("env-a", "env-a", "env-b"):
    ...     results.cells.append({"problem": "mlp", "mode": "f", "size": {"n": len(results)},
    ...                           "status": "ok", "env": env, "time": {"median": 1.0}})
    >>> print(_several_machines(results)[0])  # doctest: +ELLIPSIS
    2 machines (a, b) measured these cells. ... mlp: a (also b).
    """
    ok = [c for c in results.cells if c["status"] == "ok" and c.get("time")]
    machines = sorted({str(machine_of(results, c)) for c in ok})
    if len(machines) < 2:
        return []
    spread = []
    for problem in problems_in(results):
        here = {str(machine_of(results, c)) for c in ok if c["problem"] == problem}
        if len(here) > 1:
            home = str(home_machine(results, problem))
            spread.append(f"{problem}: {home} (also {', '.join(sorted(here - {home}))})")
    text = (
        f"{len(machines)} machines ({', '.join(machines)}) measured these cells. A ratio to f "
        "is taken on one machine (f and the mode at a size are timed in turn on one worker), "
        "so ratios, slopes of ratios and crossovers compare across machines; absolute times "
        "are per machine, and each problem's absolute times are read from the machine that "
        "timed most of its cells"
    )
    text += "; problems timed on several: " + "; ".join(spread) + "." if spread else "."
    return [text, ""]


def machine_section(results: Results) -> list[str]:
    used = Counter(c.get("env") for c in results.cells if c["status"] == "ok")
    lines = ["## Machine", ""]
    for key, description in results.data["environments"].items():
        if key not in used:
            continue
        facts = "; ".join(line.removeprefix("- ") for line in machine_lines(description))
        lines += [f"`{key}` ({used[key]} measured cells): {facts}.", ""]
    lines += _several_machines(results)
    loads = [c["load"] for c in results.cells if c.get("load") is not None]
    cores = [
        d.get("cpus_available") or d.get("cpus_total")
        for key, d in results.data["environments"].items()
        if key in used and (d.get("cpus_available") or d.get("cpus_total"))
    ]
    if loads:
        text = (
            f"Load average (one minute) while cells finished: {min(loads):.1f} to {max(loads):.1f}"
        )
        if cores and max(loads) > min(cores):
            text += (
                f", above the {min(cores)} cores: other processes competed for the CPU, so "
                "times are noisy; medians and IQRs are reported, and the counts are the "
                "deterministic check."
            )
        else:
            text += "."
        lines += [text, ""]
    return lines
