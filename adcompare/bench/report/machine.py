"""The report's machine section: each environment that measured cells, and the load.

>>> from adcompare.bench.harness.results import Results
>>> machine_section(Results())
['## Machine', '']
"""

from __future__ import annotations

from collections import Counter

from adcompare.bench.harness.env import allocator_text
from adcompare.bench.harness.results import Results

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


def machine_section(results: Results) -> list[str]:
    used = Counter(c.get("env") for c in results.cells if c["status"] == "ok")
    lines = ["## Machine", ""]
    for key, description in results.data["environments"].items():
        if key not in used:
            continue
        facts = "; ".join(line.removeprefix("- ") for line in machine_lines(description))
        lines += [f"`{key}` ({used[key]} measured cells): {facts}.", ""]
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
