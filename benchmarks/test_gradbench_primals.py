"""Each GradBench primal beside the same formula run on NumPy itself, grouped per workload.

Issue 32 asks that no primal be slowed to improve its ratio, and that each
primal be compared with NumPy written by hand for the same formula: the NumPy
side is :func:`benchmarks.gradbench_numpy.twin_primal` (the eval's own
functions with ``ad`` bound to numpy). Each pair is checked bit for bit before
it is timed. Workloads: each eval's first and last (for ht, its sixth, 1,600
points: the last ones build hands of 100,000 points), one BLAS thread::

    pytest benchmarks/test_gradbench_primals.py --benchmark-enable
"""

from __future__ import annotations

import numpy as np
import pytest

from adcompare.gradbench import get_eval
from benchmarks.gradbench_numpy import PRIMALS, twin_primal

#: Which of an eval's workloads to time, by position.
POSITIONS = {"ht": (0, 5)}


def _cases():
    for name in sorted(PRIMALS):
        for position in POSITIONS.get(name, (0, -1)):
            for side in ("adcompare", "numpy"):
                yield pytest.param(name, position, side, id=f"{name}-{position}-{side}")


@pytest.mark.parametrize(("name", "position", "side"), list(_cases()))
def test_primal(benchmark, name, position, side):
    ev = get_eval(name)
    workload = ev.workloads()[position]
    prepared = ev.prepare(workload.make())
    ours = lambda: ev.functions[ev.primal](prepared, "reverse")
    twin = twin_primal(name)
    numpy_side = lambda: twin(prepared)
    assert np.array_equal(ours(), numpy_side())
    benchmark.group = f"gradbench primal {name} {workload.description}"
    benchmark.extra_info.update(eval=name, workload=workload.description, side=side)
    benchmark(ours if side == "adcompare" else numpy_side)
