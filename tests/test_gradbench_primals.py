"""Each GradBench primal computes the same numbers as its formula run on NumPy itself.

``benchmarks/test_gradbench_primals.py`` times the two side by side (issue 32:
no primal may be slowed to improve a ratio); these tests make sure the
comparison is of one formula: bit for bit, and the NumPy twin applies no op
of adcompare's op set while ours does.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import adcompare as ad
from adcompare.gradbench import get_eval
from benchmarks import gradbench_numpy
from benchmarks.gradbench_numpy import PRIMALS, twin_primal


@pytest.mark.parametrize("name", sorted(PRIMALS))
def test_the_numpy_twin_gives_the_primal_bit_for_bit_without_the_op_set(name):
    ev = get_eval(name)
    prepared = ev.prepare(ev.workloads()[0].make())
    with ad.count() as ours_counted:
        ours = ev.functions[ev.primal](prepared, "reverse")
    twin = twin_primal(name)
    with ad.count() as twin_counted:
        theirs = twin(prepared)
    assert sum(ours_counted.ops.values()) > 0 and sum(twin_counted.ops.values()) == 0
    assert np.asarray(ours).shape == np.asarray(theirs).shape
    assert np.array_equal(ours, theirs)


def test_the_twin_module_s_examples_hold():
    # benchmarks/ is outside the doctest run's paths: its examples run here.
    results = doctest.testmod(gradbench_numpy)
    assert results.attempted >= 3 and results.failed == 0
