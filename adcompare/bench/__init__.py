"""Benchmarks: how forward and reverse mode cost grows with inputs and outputs.

Results flow one way: :mod:`~adcompare.bench.problems` →
:mod:`~adcompare.bench.harness.sweep` (measuring cells with
:mod:`~adcompare.bench.harness.measure`) → a results file
(:mod:`~adcompare.bench.harness.results`) → :mod:`~adcompare.bench.report.plots` and
:mod:`~adcompare.bench.report.markdown`, which only read results.

>>> from adcompare.bench import PROBLEMS, MODES
>>> "rosenbrock" in PROBLEMS and "reverse" in MODES
True
"""

from adcompare.bench.harness.modes import MODES, Mode, get_mode
from adcompare.bench.harness.results import Results, ResultsError, load_any, load_results
from adcompare.bench.harness.sweep import SweepConfig, preset, run_sweep
from adcompare.bench.problems import PROBLEMS, Instance, Problem, get_problem

__all__ = [
    "MODES",
    "PROBLEMS",
    "Instance",
    "Mode",
    "Problem",
    "Results",
    "ResultsError",
    "SweepConfig",
    "get_mode",
    "get_problem",
    "load_any",
    "load_results",
    "preset",
    "run_sweep",
]
