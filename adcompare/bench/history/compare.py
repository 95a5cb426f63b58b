"""Two runs of the history compared cell by cell, as asv's ``compare`` does.

For each cell both runs measured (same problem, mode and size), the ratio
of medians ``after ÷ before`` and a significance test on the two runs'
timing samples: the Mann-Whitney U test (two-sided, scipy's
``mannwhitneyu``), asv's test too. A cell is flagged *slower* (a regression)
when its ratio is at least ``threshold`` and the samples differ
significantly (p < ``alpha``), *faster* when its ratio is at most
``1 / threshold`` and they differ; otherwise *same*. With too few samples
for the test to reach ``alpha`` at all (three against three cannot go
below p = 0.1), the samples differ only when their ranges do not overlap;
a cell without samples (sparse.json, targets.json) is never flagged, only
its ratio shown (*untested*).

Runs from different machines are never compared by time: each cell's time
is divided by plain f's on the same problem and size within its own run,
and those ratios are compared (*across machines*, untested).

The crossovers of each run (where one mode overtakes another as n or m
grows) are compared too, by :func:`~adcompare.bench.report.compare.compare_conclusions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import mannwhitneyu

from adcompare.bench.harness.results import SCHEMA, SCHEMA_VERSION, Results
from adcompare.bench.history.store import size_text
from adcompare.bench.report.compare import compare_conclusions

__all__ = ["ALPHA", "THRESHOLD", "Change", "Comparison", "compare_cells"]

#: A cell's median must move by this factor to be flagged (asv's default factor).
THRESHOLD = 1.1
#: The significance level of the Mann-Whitney U test.
ALPHA = 0.05
#: The verdicts, in the order a comparison lists them: regressions first.
VERDICTS = ("slower", "faster", "unclear", "untested", "same")


@dataclass
class Change:
    """One cell both runs measured: its medians (times, or ratios to f across
    machines), their ratio ``after ÷ before``, the test's p-value and the verdict."""

    problem: str
    mode: str
    size: dict
    before: float
    after: float
    p: float | None
    test: str
    verdict: str = "same"

    @property
    def ratio(self) -> float:
        """``after ÷ before``: above 1 the after run is slower."""
        return self.after / self.before


@dataclass
class Comparison:
    """What :func:`compare_cells` found."""

    changes: list[Change]
    same_machine: bool
    only_before: int = 0
    only_after: int = 0
    crossovers_agreed: int = 0
    crossovers_moved: list[str] = field(default_factory=list)
    crossovers_noise: list[str] = field(default_factory=list)

    def flagged(self, verdict: str) -> list[Change]:
        """The changes with ``verdict`` (``slower``: the regressions)."""
        return [change for change in self.changes if change.verdict == verdict]

    def ordered(self) -> list[Change]:
        """Every change, regressions first, then improvements, each by ratio."""
        return sorted(
            self.changes,
            key=lambda c: (VERDICTS.index(c.verdict), -abs(math.log(c.ratio))),
        )


def _key(cell: dict) -> tuple:
    return cell["problem"], cell["mode"], size_text(cell["size"])


def _measured(cells: list[dict]) -> dict:
    return {
        _key(c): c
        for c in cells
        if c.get("status") == "ok" and (c.get("time") or {}).get("median", 0) > 0
    }


def _relative_to_f(cells: dict) -> dict:
    """Each cell's median ÷ plain f's on the same problem and size (cells without f go)."""
    f = {(p, s): c["time"]["median"] for (p, mode, s), c in cells.items() if mode == "f"}
    return {
        key: c["time"]["median"] / f[(key[0], key[2])]
        for key, c in cells.items()
        if (key[0], key[2]) in f and key[1] != "f"
    }


def _least_p(a: int, b: int) -> float:
    """The smallest two-sided p-value the exact U test can give for samples of a and b."""
    return min(1.0, 2 / math.comb(a + b, a))


def _tests(pairs: list[tuple[list, list]], alpha: float) -> list[tuple[float | None, str, bool]]:
    """``(p, test, differ)`` for each pair of samples; one scipy call per pair of sizes."""
    found: list = [(None, "untested", False)] * len(pairs)
    groups: dict = {}
    for i, (a, b) in enumerate(pairs):
        if len(a) >= 2 and len(b) >= 2:
            groups.setdefault((len(a), len(b)), []).append(i)
    for (na, nb), members in groups.items():
        first = np.array([pairs[i][0] for i in members])
        second = np.array([pairs[i][1] for i in members])
        p_values = mannwhitneyu(first, second, alternative="two-sided", axis=1).pvalue
        enough = _least_p(na, nb) < alpha
        for i, p in zip(members, np.atleast_1d(p_values), strict=True):
            a, b = pairs[i]
            if enough:
                found[i] = (float(p), "Mann-Whitney U", bool(p < alpha))
            else:
                apart = max(a) < min(b) or max(b) < min(a)
                found[i] = (float(p), "ranges (too few samples for U)", apart)
    return found


def _verdict(ratio: float, differ: bool, test: str, threshold: float) -> str:
    beyond = ratio >= threshold or ratio <= 1 / threshold
    if not beyond:
        return "same"
    if test in ("untested", "across machines"):
        return "untested"
    if not differ:
        return "unclear"
    return "slower" if ratio > 1 else "faster"


def _as_results(cells: list[dict]) -> Results:
    return Results(
        {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "runs": [],
            "environments": {},
            "cells": cells,
        }
    )


def _crossovers(before: list[dict], after: list[dict]) -> tuple[int, list[str], list[str]]:
    """:func:`compare_conclusions` problem by problem (each reads only its own cells)."""
    by_problem: dict = {}
    for run, cells in enumerate((before, after)):
        for cell in cells:
            by_problem.setdefault(cell["problem"], ([], []))[run].append(cell)
    agreed, moved, noise = 0, [], []
    for earlier, later in by_problem.values():
        found = compare_conclusions(_as_results(later), _as_results(earlier))
        agreed, moved, noise = agreed + found[0], moved + found[1], noise + found[2]
    return agreed, moved, noise


def compare_cells(
    before: list[dict],
    after: list[dict],
    *,
    same_machine: bool = True,
    threshold: float = THRESHOLD,
    alpha: float = ALPHA,
) -> Comparison:
    """Compare two runs' cells (as :func:`~adcompare.bench.history.store.run_cells`
    gives them): see the module's description.

    >>> def cell(mode, samples):
    ...     return {"problem": "p", "mode": mode, "size": {"n": 4}, "status": "ok",
    ...             "time": {"median": sorted(samples)[2], "samples": samples}}
    >>> fast, slow = [1.0, 1.1, 1.0, 0.9, 1.05], [2.0, 2.1, 1.9, 2.2, 2.05]
    >>> found = compare_cells([cell("reverse", fast)], [cell("reverse", slow)])
    >>> [(c.mode, round(c.ratio, 2), c.test, c.verdict) for c in found.changes]
    [('reverse', 2.05, 'Mann-Whitney U', 'slower')]
    """
    mine, theirs = _measured(after), _measured(before)
    if same_machine:
        common = [key for key in mine if key in theirs]
        pairs = [
            (theirs[k]["time"].get("samples") or [], mine[k]["time"].get("samples") or [])
            for k in common
        ]
        tests = _tests(pairs, alpha)
        values = [(theirs[k]["time"]["median"], mine[k]["time"]["median"]) for k in common]
    else:
        relative_after, relative_before = _relative_to_f(mine), _relative_to_f(theirs)
        common = [key for key in relative_after if key in relative_before]
        tests = [(None, "across machines", False)] * len(common)
        values = [(relative_before[k], relative_after[k]) for k in common]
    changes = []
    for key, (old, new), (p, test, differ) in zip(common, values, tests, strict=True):
        change = Change(key[0], key[1], mine[key]["size"], old, new, p, test)
        change.verdict = _verdict(change.ratio, differ, test, threshold)
        changes.append(change)
    agreed, moved, noise = _crossovers(before, after)
    return Comparison(
        changes,
        same_machine,
        only_before=len(set(theirs) - set(mine)),
        only_after=len(set(mine) - set(theirs)),
        crossovers_agreed=agreed,
        crossovers_moved=moved,
        crossovers_noise=noise,
    )
