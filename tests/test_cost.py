"""Deterministic costs: forward work grows with n, reverse work does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompare as ad
from adcompare.transforms import default_chunk

SIZES = [8, 32, 128, 512]


def rosenbrock(x):
    return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def sine_energy(x):
    return ad.sum(ad.sin(x) * x) / 2


def logistic_loss(w):
    n = w.shape[0]
    features = np.cos(np.outer(np.arange(1.0, 21.0), np.arange(1.0, n + 1.0)) / n)
    labels = np.where(np.arange(20) % 2 == 0, 1.0, -1.0)
    return ad.mean(ad.softplus(-labels * ad.matmul(features, w)))


PROBLEMS = [rosenbrock, sine_energy, logistic_loss]


def work(fn, *args) -> ad.Cost:
    with ad.count() as cost:
        fn(*args)
    return cost


def f_work(f, x) -> int:
    """The arithmetic f does: run on a tensor that records nothing, so that
    operators like ``x[1:]`` and ``x**2`` also pass through the op set."""
    return work(f, ad.Tensor(x)).elements["numpy"]


def slope(values) -> float:
    return np.polyfit(np.log(SIZES), np.log(values), 1)[0]


@pytest.mark.parametrize("f", PROBLEMS, ids=lambda f: f.__name__)
def test_forward_gradient_costs_n_lanes_of_tangent_work(f):
    """Tangent elements are exactly n times one direction's; the arithmetic done
    (numpy work) grows like n times f's."""
    ratios = []
    for n in SIZES:
        x = np.linspace(-1.0, 1.0, n)
        one_direction = work(ad.jvp, f, (x,), (np.ones(n),)).elements["forward"]
        lanes = work(ad.grad(f, mode="forward"), x)
        one_lane_passes = work(ad.jacfwd(f, chunk_size=1), x)
        assert lanes.elements["forward"] == n * one_direction
        assert one_lane_passes.elements["forward"] == n * one_direction
        assert (lanes.passes, one_lane_passes.passes) == (math.ceil(n / default_chunk(n)), n)
        ratios.append(lanes.elements["numpy"] / f_work(f, x))
    assert 0.9 <= slope(ratios) <= 1.1, ratios


@pytest.mark.parametrize("f", PROBLEMS, ids=lambda f: f.__name__)
def test_reverse_gradient_costs_a_constant_multiple_of_f(f):
    ratios = []
    for n in SIZES:
        x = np.linspace(-1.0, 1.0, n)
        reverse = work(ad.grad(f), x)
        assert reverse.sweeps == 1
        ratios.append(reverse.elements["numpy"] / f_work(f, x))
    assert max(ratios) <= 6.0, ratios
    assert abs(slope(ratios)) < 0.1, ratios


def test_tape_bytes_count_what_the_tape_keeps():
    x = ad.Tensor(np.ones(100), requires_grad=True)
    with ad.count() as cost:
        y = ad.sum(ad.exp(x) + x)  # exp keeps its output (800 bytes); add and sum keep nothing
    assert cost.tape_records == 3
    assert cost.tape_bytes == 800 == y.grad_fn.next[0].next[0].saved_bytes
