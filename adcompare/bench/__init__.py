"""Benchmarks: how forward and reverse mode cost grows with inputs and outputs.

Measure your own function in two calls: :func:`problem` turns it into a
problem (``f(x)``, or ``f(*args)`` with pytrees; how to build its inputs at a
size; which sizes it sweeps), and :func:`measure` runs the sweep and writes
``results.json``, the figures and ``report.md``.

>>> import numpy as np
>>> import adcompare.bench as bench
>>> p = bench.problem(lambda x: np.tanh(np.cumsum(x))[-2:], name="mymodel")
>>> results = bench.measure(p, modes=["f", "forward", "reverse"], sizes=[4, 16], out=None,
...                         repeats=1, memory=False)
>>> sorted({(cell["mode"], cell["n"], cell["status"]) for cell in results})[:3]
[('f', 4, 'ok'), ('f', 16, 'ok'), ('forward', 4, 'ok')]

Results flow one way: :mod:`~adcompare.bench.problems` →
:mod:`~adcompare.bench.harness.sweep` (measuring cells with
:mod:`~adcompare.bench.harness.measure`) → a results file
(:mod:`~adcompare.bench.harness.results`) → :mod:`~adcompare.bench.report.plots` and
:mod:`~adcompare.bench.report.markdown`, which only read results.

The parts, each importing only those before it:

- ``problems/``: every problem, defined by :func:`problem` (the built-in
  ones, the studies', a user's), in one registry that entry points extend;
- ``peers/``: JAX, PyTorch and autograd running the same problems;
- ``harness/``: the modes, measuring a cell, the sweep, the results file;
- ``report/``: the figures and ``report.md``, read from results;
- ``targets/``: the performance targets, cells measured by the harness and a
  table read off them; ``memory/`` and ``sparse/``: the memory and sparse
  sweeps, timed with the harness's measures.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from adcompare.bench.harness.modes import MODES, Mode, get_mode
from adcompare.bench.harness.progress import Progress
from adcompare.bench.harness.results import (
    Results,
    ResultsError,
    load_any,
    load_results,
    open_for_writing,
)
from adcompare.bench.harness.sweep import SweepConfig, plan, preset, run_sweep
from adcompare.bench.peers import available_peer_modes
from adcompare.bench.problems import (
    PROBLEMS,
    Instance,
    Problem,
    ProblemError,
    available_problems,
    get_problem,
    problem,
    ravel,
)
from adcompare.bench.report.markdown import write_report

__all__ = [
    "LATEST",
    "MODES",
    "PROBLEMS",
    "Instance",
    "Mode",
    "Problem",
    "ProblemError",
    "Results",
    "ResultsError",
    "SweepConfig",
    "available_problems",
    "get_mode",
    "get_problem",
    "load_any",
    "load_results",
    "measure",
    "preset",
    "problem",
    "ravel",
    "run_sweep",
]

#: Where :func:`measure` writes by default, one folder per problem: git-ignored.
LATEST = Path("reports") / "latest"
_DEFAULT = object()


def _results_in(folder, *, resume: bool) -> Results:
    """The results to measure into: in memory, or ``folder/results.json`` (locked)."""
    if folder is None:
        return Results()
    Path(folder).mkdir(parents=True, exist_ok=True)
    return open_for_writing(Path(folder) / "results.json", resume=resume, overwrite=True)


def measure(
    problems: Problem | str | Iterable[Problem | str],
    *,
    modes: list[str] | None = None,
    sizes: list[int] | None = None,
    out=_DEFAULT,
    peers: bool = False,
    repeats: int = 3,
    budget: float = 1.0,
    memory: bool = True,
    resume: bool = False,
    quiet: bool = True,
    report: bool = True,
    client=None,
) -> Results:
    """Sweep ``problems`` (problems or registered names) by ``modes`` at ``sizes``.

    Every cell gets what the built-in problems get: time (interleaved with
    the other modes at its size, flagged when taken under load), op counts
    and element work, peak memory, and a check of its derivative. ``modes``
    default to every default mode (the Hessian compositions apply to scalar
    f), plus the installed peers' with ``peers``; ``sizes`` to each problem's
    own, else the quick preset's. The cells go to ``out/results.json`` as
    each finishes (``out`` defaults to ``reports/latest/<name>``; ``None``
    keeps them in memory), then ``report`` draws the figures and writes
    ``report.md`` beside it. ``resume`` continues an existing results file.
    A Dask ``client`` measures each size on one of its workers.

    A function that cannot be measured (it raises, returns the wrong shape or
    a non-float, or its derivative is NaN or inf) raises :class:`ProblemError`,
    one sentence naming it; the cells measured before are in the results file.
    """
    chosen = [problems] if isinstance(problems, (str, Problem)) else list(problems)
    chosen = [p if isinstance(p, Problem) else get_problem(p) for p in chosen]
    folder = LATEST / chosen[0].name if out is _DEFAULT else out
    if peers:
        modes = [*(modes or [n for n, m in MODES.items() if m.by_default])]
        modes += available_peer_modes()[0]
    results = _results_in(folder, resume=resume)
    try:
        for each in chosen:
            own = sizes or each.sizes
            config = preset(
                "quick",
                problems=[each],
                modes=modes,
                sizes=own,
                grid=own,
                second_order_sizes=own,
                repeats=repeats,
                budget=budget,
                memory=memory,
            )
            progress = Progress(len(plan(config)), quiet=quiet)
            run_sweep(config, results, progress=progress, client=client)
    finally:
        results.close()
    if folder is not None and report:
        write_report(results, folder)
    return results
