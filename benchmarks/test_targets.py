"""Time every performance target with pytest-benchmark, grouped by target.

The same cases as ``adcompare targets`` (:func:`~adcompare.bench.targets.cases.target_cases`):
adcompare's modes, hand-written numpy, plain numpy f for the ratio targets,
and each peer that is importable (the others skip). Every result is checked
against adcompare's derivative before it is timed. ``--targets-small`` runs
the tiny sizes instead of the full ones.
"""

from __future__ import annotations

import pytest

from adcompare.bench.harness.measure import check_derivative
from adcompare.bench.targets.cases import SMALL, TargetSizes, target_cases


def pytest_generate_tests(metafunc):
    if "target_entry" not in metafunc.fixturenames:
        return
    sizes = SMALL if metafunc.config.getoption("--targets-small") else TargetSizes()
    entries, ids = [], []
    for target, case in target_cases(sizes).items():
        for library, mode in case.choices:
            entries.append((target, case.instance, library, mode))
            ids.append(f"{target}-{mode.name}")
    metafunc.parametrize("target_entry", entries, ids=ids)


def test_target(benchmark, target_entry):
    target, instance, library, mode = target_entry
    reason = mode.unavailable(instance)
    if reason:
        pytest.skip(reason)
    work = mode.prepare(instance)
    check = check_derivative(instance, mode, work())
    assert check is None or check["ok"], f"{mode.name} disagrees with adcompare: {check}"
    benchmark.group = f"target {target}: {instance.problem} " + " ".join(
        f"{k}={v}" for k, v in instance.size.items()
    )
    benchmark.extra_info.update(target=target, library=library, mode=mode.name, check=check)
    benchmark(work)
