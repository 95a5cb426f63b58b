"""Derivative time ÷ objective time as other tools published it: data, with its sources.

The report sets adcompare's measured ratios beside these. Each entry names
the adcompare problem that is the same instance under the same convention.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PUBLISHED", "SOURCES", "PublishedRatio", "published_for"]

#: The publications, by the short key each entry cites.
SOURCES = {
    "ADBench paper": "Šrajer, Kukelova, Fitzgibbon, “A benchmark of selected algorithmic "
    "differentiation tools on some problems in computer vision and machine learning”, "
    "Optimization Methods & Software 33(4–6), 2018: GMM with 30 parameters (d = 2, K = 5, "
    "1000 points)",
    "GradBench 2026-03-14": "GradBench nightly results of 2026-03-14, workload gmm "
    "d = 2, k = 5, n = 1000",
}


@dataclass(frozen=True)
class PublishedRatio:
    """One tool's published gradient time ÷ objective time on one problem.

    ``approximate`` marks a number the source gives only roughly (“~31”).
    """

    problem: str
    tool: str
    ratio: float
    source: str
    approximate: bool = False


PUBLISHED = (
    PublishedRatio("adbench-gmm-1k", "hand-written", 1.88, "ADBench paper"),
    PublishedRatio("adbench-gmm-1k", "Tapenade", 3.74, "ADBench paper"),
    PublishedRatio("adbench-gmm-1k", "Theano", 6.20, "ADBench paper"),
    PublishedRatio("adbench-gmm-1k", "autograd", 22.2, "ADBench paper"),
    PublishedRatio("adbench-gmm-1k", "finite differences", 31.0, "ADBench paper", True),
    PublishedRatio("gradbench-gmm-1k", "hand-written", 1.77, "GradBench 2026-03-14"),
    PublishedRatio("gradbench-gmm-1k", "PyTorch", 1.76, "GradBench 2026-03-14"),
    PublishedRatio("gradbench-gmm-1k", "JAX", 2.25, "GradBench 2026-03-14"),
    PublishedRatio("gradbench-gmm-1k", "Tapenade", 3.75, "GradBench 2026-03-14"),
    PublishedRatio("gradbench-gmm-1k", "finite differences", 60.0, "GradBench 2026-03-14"),
)


def published_for(problem: str) -> list[PublishedRatio]:
    """The published ratios of ``problem``, smallest first.

    >>> [p.tool for p in published_for("gradbench-gmm-1k")][:2]
    ['PyTorch', 'hand-written']
    """
    return sorted((p for p in PUBLISHED if p.problem == problem), key=lambda p: p.ratio)
