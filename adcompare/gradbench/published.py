"""GradBench's published nightly timings, read from the shared data folder beside the checkout.

The file is data from outside the project and never part of the package:
:func:`shared_data` finds the folder (``ADCOMPARE_SHARED_DATA``, else
``../shared/data`` beside the checkout), :func:`load_published` reads
``gradbench/published.json`` there, or says where it looked.

>>> published_ratios({"tools": {"jax": {"workloads": {"a": {"primal": 1.0, "derivative": 3.0},
...                                                  "b": {"primal": 2.0}}}}}, "jax")
{'a': 3.0}
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = [
    "NESTED_TOOLS",
    "PYTHON_TOOLS",
    "TOOLS",
    "PublishedUnavailableError",
    "load_published",
    "published_path",
    "published_ratios",
    "published_times",
    "shared_data",
    "source_text",
]

#: The published tools the report sets beside adcompare, in its column order.
TOOLS = ("manual", "enzyme", "tapenade", "pytorch", "jax", "tensorflow", "futhark")
#: The tools GradBench runs in Python, the ones adcompare's users would otherwise pick.
PYTHON_TOOLS = ("pytorch", "jax", "tensorflow")
#: The nested evals' columns: the classic ones, and Haskell's ``ad``, the only
#: operator-overloading tool that publishes them.
NESTED_TOOLS = (*TOOLS, "haskell")


class PublishedUnavailableError(FileNotFoundError):
    """The published timings are not where they were looked for."""


def shared_data() -> Path:
    """``ADCOMPARE_SHARED_DATA`` if set, else ``shared/data`` beside the repository's folder.

    >>> shared_data().parts[-2:]
    ('shared', 'data')
    """
    configured = os.environ.get("ADCOMPARE_SHARED_DATA")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def published_path() -> Path:
    """Where ``published.json`` is looked for.

    >>> published_path().name
    'published.json'
    """
    return shared_data() / "gradbench" / "published.json"


def load_published() -> dict:
    """The published nightly timings, or :class:`PublishedUnavailableError` saying where."""
    path = published_path()
    if not path.is_file():
        raise PublishedUnavailableError(
            f"GradBench's published timings are not at {path}; set ADCOMPARE_SHARED_DATA to "
            "the folder holding gradbench/published.json"
        )
    return json.loads(path.read_text())


def published_times(eval_entry: dict, tool: str) -> dict[str, tuple[float, float]]:
    """``(primal, derivative)`` mean seconds per workload that ``tool`` published both for.

    >>> published_times({"tools": {"jax": {"workloads": {"n=1": {"primal": 2.0,
    ...     "derivative": 3.0}, "n=2": {"primal": 1.0}}}}}, "jax")
    {'n=1': (2.0, 3.0)}
    """
    workloads = eval_entry.get("tools", {}).get(tool, {}).get("workloads", {})
    return {
        name: (times["primal"], times["derivative"])
        for name, times in workloads.items()
        if times.get("primal") and times.get("derivative")
    }


def published_ratios(eval_entry: dict, tool: str) -> dict[str, float]:
    """Derivative ÷ primal mean time per workload that ``tool`` published both for."""
    times = published_times(eval_entry, tool)
    return {name: derivative / primal for name, (primal, derivative) in times.items()}


def source_text(published: dict) -> str:
    """Which nightly run the figures come from, in one line.

    >>> source_text({"source": {"nightly_date": "2026-03-14", "branch_commit": "c8a22ed25406",
    ...     "benchmarked_commit": "f26651a7bcc1", "repository": "https://x"}})
    'GradBench nightly of 2026-03-14 (https://x, branch commit c8a22ed2, benchmarking f26651a7)'
    """
    source = published.get("source", {})
    return (
        f"GradBench nightly of {source.get('nightly_date', '?')} "
        f"({source.get('repository', '?')}, branch commit {source.get('branch_commit', '?')[:8]}, "
        f"benchmarking {source.get('benchmarked_commit', '?')[:8]})"
    )
