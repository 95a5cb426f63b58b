"""The deterministic counts show the textbook scaling, whatever the machine.

Element work is compared with plain f's at the same size: forward mode does
one pass per input (work ∝ n·f), reverse mode one recorded pass and one
sweep per output (work ∝ m·f). Counts, not time: these hold on any machine.
"""

from __future__ import annotations

import numpy as np
import pytest

from adcompare.bench.harness.measure import count_work
from adcompare.bench.harness.modes import get_mode
from adcompare.bench.problems import PROBLEMS
from adcompare.bench.report.analysis import fit_slope, work

MANY_INPUTS = [p for p in PROBLEMS.values() if p.family == "many-inputs"]
ONE_INPUT = [p for p in PROBLEMS.values() if p.family == "one-input"]
SIZES = [8, 32, 128, 512]


def element_work(instance, mode_name):
    mode = get_mode(mode_name)
    return work({"counts": count_work(instance, mode, mode.prepare(instance))})


def work_ratios(problem, mode_name, sizes, key):
    counts, ratios = [], []
    for size in sizes:
        instance = problem.build(**{key: size})
        counts.append(getattr(instance, key))
        ratios.append(element_work(instance, mode_name) / element_work(instance, "f"))
    return np.array(counts), np.array(ratios)


@pytest.mark.parametrize("problem", MANY_INPUTS, ids=lambda p: p.name)
def test_forward_work_grows_linearly_in_n(problem):
    n, ratio = work_ratios(problem, "forward1", SIZES, "n")
    slope = fit_slope(n, ratio, upper=False).slope
    assert 0.9 <= slope <= 1.1, f"{problem.name}: forward work ÷ f's has slope {slope:.3f} in n"


@pytest.mark.parametrize("problem", MANY_INPUTS, ids=lambda p: p.name)
def test_reverse_work_stays_a_constant_multiple_of_f(problem):
    n, ratio = work_ratios(problem, "reverse", SIZES, "n")
    assert ratio.max() <= 5, f"{problem.name}: reverse work is up to {ratio.max():.1f}× f's"
    assert ratio.max() / ratio.min() <= 1.3, f"{problem.name}: reverse ÷ f varies: {ratio}"
    assert abs(fit_slope(n, ratio, upper=False).slope) <= 0.1


@pytest.mark.parametrize("problem", ONE_INPUT, ids=lambda p: p.name)
def test_forward_wins_on_one_input_problems(problem):
    for m in (8, 64, 512):
        instance = problem.build(m=m)
        forward, reverse = element_work(instance, "forward"), element_work(instance, "reverse")
        assert forward < reverse, f"{problem.name} at m={m}: forward {forward}, reverse {reverse}"
    m, ratio = work_ratios(problem, "reverse", [8, 64, 512], "m")
    assert fit_slope(m, ratio, upper=False).slope >= 0.8, "reverse work should grow like m·f"


def test_passes_and_sweeps_count_inputs_and_outputs():
    problem = PROBLEMS["tanh_map"]
    instance = problem.build(n=5, m=3)
    forward1, reverse1 = get_mode("forward1"), get_mode("reverse1")
    assert count_work(instance, forward1, forward1.prepare(instance))["passes"] == 5
    assert count_work(instance, reverse1, reverse1.prepare(instance))["sweeps"] == 3
    forward, reverse = get_mode("forward"), get_mode("reverse")
    assert count_work(instance, forward, forward.prepare(instance))["seeds"] == 5
    counted = count_work(instance, reverse, reverse.prepare(instance))
    assert (counted["sweeps"], counted["cotangent_seeds"]) == (1, 3)


def test_the_cheaper_mode_flips_across_the_diagonal():
    problem = PROBLEMS["tanh_map"]
    tall, wide = problem.build(n=4, m=64), problem.build(n=64, m=4)
    assert element_work(tall, "forward1") < element_work(tall, "reverse")
    assert element_work(wide, "reverse") < element_work(wide, "forward1")
