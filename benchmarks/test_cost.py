"""Time every problem by every mode at every size, with the counts in extra_info.

One benchmark per (problem, size, mode), grouped by problem and size so
pytest-benchmark's table compares the modes side by side. Each is measured
as the pytest plugin measures a user's function
(:func:`~adcompare.bench.harness.pytest_cells.measure`): the derivative
checked against the other engine before timing, and ``extra_info`` carrying
what ``adcompare report`` needs (problem, family, mode, size, n, m, counts,
peak memory from an untimed traced call, and the check), so its JSON gives
the same plots as ``adcompare bench``. A mode that cannot take a size
(symbolic beyond its limits) is skipped with the reason, as the sweep skips it.
"""

from __future__ import annotations

import pytest

from adcompare.bench.harness.modes import MODES, expand_modes, get_mode
from adcompare.bench.harness.pytest_cells import measure
from adcompare.bench.problems import PROBLEMS, default_problems


def _sizes_of(problem, sizes):
    if not problem.sweeps:
        return [{}]
    if len(problem.sweeps) == 1:
        return [{problem.sweeps[0]: s} for s in sizes]
    return [{"n": n, "m": m} for n in sizes for m in sizes]


def _modes(option: str) -> list:
    """The modes ``--bench-modes`` names; ``default`` stands for the sweep's default modes."""
    names = []
    for name in (n.strip() for n in option.split(",") if n.strip()):
        names += [m.name for m in MODES.values() if m.by_default] if name == "default" else [name]
    return [get_mode(name) for name in expand_modes(names)]


def pytest_generate_tests(metafunc):
    if "case" not in metafunc.fixturenames:
        return
    sizes = [int(s) for s in metafunc.config.getoption("--bench-sizes").split(",") if s]
    modes = _modes(metafunc.config.getoption("--bench-modes"))
    cases, ids = [], []
    for problem in map(PROBLEMS.get, default_problems()):
        for size in _sizes_of(problem, sizes):
            for mode in modes:
                cases.append((problem, size, mode))
                label = "-".join(f"{k}{v}" for k, v in size.items())
                ids.append(f"{problem.name}-{label}-{mode.name}")
    metafunc.parametrize("case", cases, ids=ids)


def test_cost(benchmark, case):
    problem, size, mode = case
    reason = problem.too_large(size) or measure(benchmark, problem.build(**size), mode)
    if reason:
        pytest.skip(reason)
