"""Time every performance target with pytest-benchmark, grouped by target.

The same cases as ``adcompare targets`` (:func:`~adcompare.bench.targets.measure.target_cases`):
adcompare's modes, hand-written numpy, plain numpy f for the ratio targets,
and each peer that is importable (the others skip). Every result is checked
against adcompare's derivative before it is timed. ``--targets-small`` runs
the tiny sizes instead of the issue's.
"""

from __future__ import annotations

import pytest

from adcompare.bench.harness.measure import check_derivative
from adcompare.bench.harness.modes import MODES
from adcompare.bench.targets.measure import SMALL, TargetSizes, target_cases

RATIO_TARGETS = ("b", "d")


def pytest_generate_tests(metafunc):
    if "target_entry" not in metafunc.fixturenames:
        return
    sizes = SMALL if metafunc.config.getoption("--targets-small") else TargetSizes()
    entries, ids = [], []
    for target, case in target_cases(sizes).items():
        choices = case.choices + ([("numpy", MODES["f"])] if target in RATIO_TARGETS else [])
        for library, mode in choices:
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
