"""Time every problem by every mode at every size, with the counts in extra_info.

One benchmark per (problem, size, mode), grouped by problem and size so
pytest-benchmark's table compares the modes side by side. ``extra_info``
carries what ``adcompare report`` needs (problem, family, mode, size, n, m,
counts, peak memory from an untimed traced call, and the derivative
check), so its JSON gives the same plots as ``adcompare bench``.
"""

from __future__ import annotations

import pytest

from adcompare.bench.harness.measure import check_derivative, count_work, peak_memory
from adcompare.bench.harness.modes import MODES
from adcompare.bench.problems import PROBLEMS, default_problems


def _sizes_of(problem, sizes):
    if not problem.sweeps:
        return [{}]
    if len(problem.sweeps) == 1:
        return [{problem.sweeps[0]: s} for s in sizes]
    return [{"n": n, "m": m} for n in sizes for m in sizes]


def pytest_generate_tests(metafunc):
    if "case" not in metafunc.fixturenames:
        return
    sizes = [int(s) for s in metafunc.config.getoption("--bench-sizes").split(",") if s]
    cases, ids = [], []
    for problem in map(PROBLEMS.get, default_problems()):
        for size in _sizes_of(problem, sizes):
            for mode in MODES.values():
                cases.append((problem, size, mode))
                label = "-".join(f"{k}{v}" for k, v in size.items())
                ids.append(f"{problem.name}-{label}-{mode.name}")
    metafunc.parametrize("case", cases, ids=ids)


def test_cost(benchmark, case):
    problem, size, mode = case
    reason = problem.too_large(size)
    if reason:
        pytest.skip(reason)
    instance = problem.build(**size)
    reason = mode.unavailable(instance)
    if reason:
        pytest.skip(reason)
    work = mode.prepare(instance)
    benchmark.group = f"{problem.name} " + " ".join(f"{k}={v}" for k, v in size.items())
    benchmark.extra_info.update(
        problem=problem.name,
        family=problem.family,
        mode=mode.name,
        size=size,
        n=instance.n,
        m=instance.m,
        counts=count_work(instance, mode, work),
        peak_bytes=peak_memory(work),
    )
    result = benchmark(work)
    check = check_derivative(instance, mode, result)
    benchmark.extra_info["check"] = check
    assert check is None or check["ok"], f"{mode.name} disagrees with the other engine: {check}"
