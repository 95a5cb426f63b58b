"""Benchmarks: how forward and reverse mode cost grows with inputs and outputs.

Results flow one way: :mod:`~adcompare.bench.problems` →
:mod:`~adcompare.bench.sweep` (measuring cells with
:mod:`~adcompare.bench.measure`) → a results file
(:mod:`~adcompare.bench.results`) → :mod:`~adcompare.bench.plots` and
:mod:`~adcompare.bench.report`, which only read results.

>>> from adcompare.bench import PROBLEMS, MODES
>>> "rosenbrock" in PROBLEMS and "reverse" in MODES
True
"""

from adcompare.bench.modes import MODES, Mode, get_mode
from adcompare.bench.problems import PROBLEMS, Instance, Problem, get_problem
from adcompare.bench.results import Results, ResultsError, load_any, load_results
from adcompare.bench.sweep import SweepConfig, preset, run_sweep

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
