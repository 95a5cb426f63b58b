"""ADBench and GradBench problems against the answers other tools computed.

The instances and their recorded answers are ADBench's and GradBench's own
files, read from ``../shared/data`` (the package ships none; these tests skip,
saying why, where the folder is absent). Every comparison uses ADBench's error
measure ρ = |a − b| / max(1, |a| + |b|) and the issue's tolerance ρ ≤ 1e-8, in
forward mode and in reverse mode. The checks that need no recorded answer run
on the generated instances.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompare as ad
from adcompare import adbench
from tests.shared_data import shared_file

TOLERANCE = 1e-8
MODES = ["forward", "reverse"]
RECORDED = ["adbench-gmm-test", "gradbench-gmm-1k", "adbench-lstm"]


def assert_close(actual, expected):
    rho = adbench.relative_error(actual, expected)
    assert np.shape(actual) == np.shape(expected)
    assert rho.max() <= TOLERANCE, f"max ρ = {rho.max():.3g} at {np.argmax(rho)}"


def _with_references(problem, name: str):
    problem.reference = adbench.adbench_references(
        name, shared_file("adbench", "reference_values.json")
    )
    return problem


@pytest.fixture(scope="module")
def problems():
    """ADBench's test files with its recorded answers, and GradBench's GMM file with its own."""
    return {
        "adbench-gmm-test": _with_references(
            adbench.load_gmm(shared_file("adbench", "gmm", "test.txt")), "gmm"
        ),
        "gradbench-gmm-1k": adbench.load_gradbench_gmm(
            shared_file("gradbench", "gmm_2_5_1000.json")
        ),
        "adbench-ba-test": _with_references(
            adbench.load_ba(shared_file("adbench", "ba", "test.txt")), "ba"
        ),
        "adbench-lstm": _with_references(
            adbench.load_lstm(shared_file("adbench", "lstm", "lstm_l2_c1024.txt")), "lstm"
        ),
    }


@pytest.fixture(scope="module")
def gradients(problems):
    """Gradients of the recorded scalar problems by both modes, each computed once, with costs."""
    results = {}
    for name in RECORDED:
        problem = problems[name]
        for mode in MODES:
            with ad.count() as cost:
                value, gradient = ad.value_and_grad(problem.objective, mode=mode)(problem.params)
            results[name, mode] = (value, gradient, cost)
    return results


@pytest.mark.parametrize("name", RECORDED)
def test_objective_matches_the_reference(problems, name):
    problem = problems[name]
    assert_close(problem.objective(problem.params), problem.reference["objective"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", RECORDED)
def test_gradient_matches_the_reference(problems, gradients, name, mode):
    value, gradient, _ = gradients[name, mode]
    assert_close(value, problems[name].reference["objective"])
    assert_close(gradient, problems[name].reference["gradient"])


@pytest.mark.parametrize("name", RECORDED)
def test_reverse_takes_one_sweep_and_forward_one_pass_of_n_lanes(problems, gradients, name):
    _, _, reverse_cost = gradients[name, "reverse"]
    _, _, forward_cost = gradients[name, "forward"]
    assert reverse_cost.sweeps == 1 and reverse_cost.passes == 0
    n = problems[name].n_params
    assert forward_cost.passes == 1 and forward_cost.sweeps == 0
    # Each forward op carries n tangent lanes, so tangent work is a multiple of n.
    assert forward_cost.elements["forward"] % n == 0


def test_gmm_1k_gradient_agrees_between_modes_and_with_differences():
    """The generated 1k instance has no recorded answer: check the modes against each
    other and against central differences of the objective."""
    problem = adbench.bundled("adbench-gmm-1k")
    forward = ad.grad(problem.objective, mode="forward")(problem.params)
    reverse = ad.grad(problem.objective, mode="reverse")(problem.params)
    assert_close(forward, reverse)
    assert_matches_differences(problem, reverse, (0, 7, 29))


def assert_matches_differences(problem, gradient, entries):
    """Each of the gradient's ``entries`` equals the objective's central difference."""
    step = 1e-5
    for i in entries:
        shift = np.zeros(problem.n_params)
        shift[i] = step
        difference = (
            problem.objective(problem.params + shift) - problem.objective(problem.params - shift)
        ) / (2 * step)
        assert adbench.relative_error(difference, gradient[i]) <= 1e-7


def test_the_gmm_gradient_takes_one_product_over_the_points_in_its_sweep():
    """Q_k(x_i − μ_k) as one product of the points (x_i, 1) with [Q_kᵀ; −(Q_k μ_k)ᵀ]: the
    points are data, so the sweep multiplies the (K, N, D) cotangent by them once (for
    the factors and Q_k μ_k). The centred form (x_i − μ_k) took a second such product,
    for the centred points, and 3.3·K·N·D² numpy work in all; the bound allows the
    forward product, the sweep's product and 30 elementwise passes."""
    d, k, n = 32, 3, 200
    problem = adbench.GMMProblem(adbench.generate_gmm(d, k, n), "gradbench")
    with ad.count() as cost:
        gradient = ad.grad(problem.objective)(problem.params)
    assert cost.elements["numpy"] <= 2 * k * n * d * d + 30 * k * n * d
    assert_matches_differences(problem, gradient, (0, k, k + k * d, problem.n_params - 1))


def test_the_two_gmm_conventions_differ_by_twice_the_prior():
    """ADBench adds the Wishart prior term that GradBench subtracts: on one input the
    objectives differ by exactly twice that term, computed here by hand."""
    gradbench_style = adbench.bundled("gradbench-gmm-1k")
    data = gradbench_style.data
    d, k, _ = data.sizes
    q, lower = data.icf[:, :d], data.icf[:, d:]
    dof = d + data.m + 1
    log_gamma_d = d * (d - 1) / 4 * math.log(math.pi) + sum(
        math.lgamma(dof / 2 + (1 - j) / 2) for j in range(1, d + 1)
    )
    prior = np.sum(
        0.5 * data.gamma**2 * (np.sum(np.exp(q) ** 2, 1) + np.sum(lower**2, 1)) - data.m * q.sum(1)
    ) - k * (dof * d * (math.log(data.gamma) - 0.5 * math.log(2)) - log_gamma_d)
    adbench_style = adbench.GMMProblem(data, "adbench")
    difference = adbench_style.objective(data.params) - gradbench_style.objective(data.params)
    assert difference == pytest.approx(2 * prior, rel=1e-12)


def test_ba_residuals_match_the_reference(problems):
    problem = problems["adbench-ba-test"]
    residuals = problem.residuals(problem.params)
    assert_close(residuals[:20], problem.reference["reprojection_error"])
    assert_close(residuals[20:], problem.reference["weight_error"])


@pytest.fixture(scope="module")
def ba_jacobians(problems):
    problem = problems["adbench-ba-test"]
    with ad.count() as forward_cost:
        forward = ad.jacfwd(problem.residuals)(problem.params)
    with ad.count() as reverse_cost:
        reverse = ad.jacrev(problem.residuals)(problem.params)
    return forward, forward_cost, reverse, reverse_cost


def test_ba_jacobian_by_forward_mode_matches_the_csr_reference(problems, ba_jacobians):
    problem = problems["adbench-ba-test"]
    forward, cost, _, _ = ba_jacobians
    assert forward.shape == (30, 62)
    assert cost.passes <= 62 and cost.sweeps == 0
    assert_close(problem.csr_values(forward), problem.reference["jacobian_csr_values"])


def test_ba_jacobian_by_reverse_mode_takes_30_rows_in_one_sweep_and_matches(problems, ba_jacobians):
    problem = problems["adbench-ba-test"]
    _, _, reverse, cost = ba_jacobians
    # 30 rows within the lane budget: one sweep carries them all, as one forward pass
    # carries the 62 columns.
    assert (cost.sweeps, cost.cotangent_seeds, cost.passes) == (1, 30, 0)
    assert_close(problem.csr_values(reverse), problem.reference["jacobian_csr_values"])


def test_ba_jacobian_modes_agree_everywhere_and_vanish_off_the_pattern(problems, ba_jacobians):
    problem = problems["adbench-ba-test"]
    forward, _, reverse, _ = ba_jacobians
    assert_close(forward, reverse)
    off_pattern = np.ones(forward.shape, dtype=bool)
    off_pattern[problem.jacobian_pattern()] = False
    assert not forward[off_pattern].any() and not reverse[off_pattern].any()


def test_ba_jacobian_in_chunks_of_eight_lanes_takes_eight_passes(problems, ba_jacobians):
    problem = problems["adbench-ba-test"]
    with ad.count() as cost:
        chunked = ad.jacfwd(problem.residuals, chunk_size=8)(problem.params)
    assert cost.passes == math.ceil(62 / 8)
    assert_close(chunked, ba_jacobians[0])
