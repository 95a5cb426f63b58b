"""Sparse Jacobians and Hessians equal the dense ones, in as many passes as colours."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare import adbench
from adcompare.bench.sparse.problems import get_sparse_problem
from adcompare.sparsity import jacobian_pattern, prepare_jacobian, sparse_hessian, sparse_jacobian
from tests.shared_data import shared_file

JACOBIAN_CASES = [("bratu-1d", 12), ("laplacian-2d", 5), ("arrowhead", 9), ("bundle-adjustment", 3)]
MODES = ["forward", "reverse", "bidirectional", "auto"]


def dense_jacobian(instance):
    return np.asarray(ad.jacfwd(instance.on(ad))(instance.x)).reshape(instance.m, instance.n)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "size"), JACOBIAN_CASES)
def test_sparse_jacobian_equals_the_dense_one_in_one_pass_per_colour(name, size, mode):
    instance = get_sparse_problem(name).build(size)
    jac = sparse_jacobian(instance.on(ad), mode)
    first = jac(instance.x)
    np.testing.assert_allclose(first.toarray(), dense_jacobian(instance), rtol=1e-12, atol=1e-12)
    plan = jac.last_plan
    with ad.count() as cost:
        again = jac(instance.x + 0.1)
    assert jac.last_plan is plan, "the plan is kept per input shape"
    # The JVPs are the lanes of one forward pass, the VJPs the lanes of one sweep.
    assert (cost.seeds, cost.cotangent_seeds) == (plan.forward_passes, plan.reverse_sweeps)
    assert (cost.passes, cost.sweeps) == (plan.forward_passes > 0, plan.reverse_sweeps > 0)
    shifted = get_sparse_problem(name).build(size)
    np.testing.assert_allclose(
        again.toarray(),
        np.asarray(ad.jacfwd(shifted.on(ad))(instance.x + 0.1)).reshape(instance.m, instance.n),
        rtol=1e-12,
        atol=1e-12,
    )


@pytest.mark.parametrize("n", [6, 50])
def test_arrowhead_takes_three_passes_where_dense_modes_take_n(n):
    instance = get_sparse_problem("arrowhead").build(n)
    jac = sparse_jacobian(instance.on(ad))
    with ad.count() as cost:
        jac(instance.x)
    plan = jac.last_plan
    assert plan.mode == "bidirectional" and "fewest passes" in plan.reason
    assert (plan.forward_passes, plan.reverse_sweeps) == (2, 1)
    assert (cost.passes, cost.seeds, cost.sweeps, cost.cotangent_seeds) == (1, 2, 1, 1)
    forward = prepare_jacobian(instance.on(ad), instance.x, "forward")
    reverse = prepare_jacobian(instance.on(ad), instance.x, "reverse")
    assert forward.passes == reverse.passes == n


def test_bundle_adjustment_needs_no_more_passes_than_its_fullest_row():
    """ADBench's BA rows hold 15 structural entries (camera 11, point 3, weight 1), but
    two of them are always zero (x does not depend on v₀, nor y on u₀): tracing finds 14,
    and 14 JVPs give the Jacobian where dense forward mode takes 62. ADBench's test
    instance and its recorded Jacobian are read from ``../shared/data``."""
    problem = adbench.load_ba(shared_file("adbench", "ba", "test.txt"))
    recorded = adbench.adbench_references("ba", shared_file("adbench", "reference_values.json"))
    pattern = jacobian_pattern(problem.residuals, problem.params)
    rows, cols = problem.jacobian_pattern()
    reference = np.asarray(recorded["jacobian_csr_values"])
    listed = pattern.toarray()[rows, cols]
    assert pattern.nnz == 290 and len(rows) == 310
    np.testing.assert_array_equal(reference[~listed], 0.0)
    assert np.diff(pattern.indptr).max() == 14
    jac = sparse_jacobian(problem.residuals, "forward")
    values = jac(problem.params).toarray()[rows, cols]
    np.testing.assert_allclose(values, reference, rtol=1e-8, atol=1e-8)
    assert jac.last_plan.forward_passes == 14


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto", "star"])
def test_laplacian_takes_five_passes(mode):
    """Columns and rows by saturation degree, or the symmetric Jacobian star coloured by
    dynamic largest-first: the optimal 5 (largest-first takes 7)."""
    instance = get_sparse_problem("laplacian-2d").build(8)
    dense = dense_jacobian(instance)
    np.testing.assert_allclose(dense, dense.T, atol=1e-9)
    jac = sparse_jacobian(instance.on(ad), mode)
    with ad.count() as cost:
        found = jac(instance.x)
    np.testing.assert_allclose(found.toarray(), dense, rtol=1e-12, atol=1e-12)
    assert jac.last_plan.passes == cost.seeds + cost.cotangent_seeds == 5
    largest_first = prepare_jacobian(instance.on(ad), instance.x, "forward", order="largest-first")
    assert largest_first.passes == 7


@pytest.mark.parametrize("hvp_mode", ["fwd-over-rev", "rev-over-rev"])
@pytest.mark.parametrize(("mode", "passes"), [("star", 3), ("acyclic", 2), ("auto", 2)])
def test_sparse_hessian_equals_the_dense_one(mode, passes, hvp_mode):
    instance = get_sparse_problem("rosenbrock-hessian").build(10)
    f = instance.on(ad)
    hess = sparse_hessian(f, mode, hvp_mode=hvp_mode)
    found = hess(instance.x)
    dense = np.asarray(ad.hessian(f)(instance.x))
    np.testing.assert_allclose(found.toarray(), dense, rtol=1e-12, atol=1e-12)
    assert hess.last_plan.passes == passes
    with ad.count() as cost:
        hess(instance.x)
    # One HVP per colour: the lanes of one forward pass over the gradient (one sweep),
    # or two sweeps each.
    expected = (passes, 1) if hvp_mode == "fwd-over-rev" else (0, 2 * passes)
    assert (cost.seeds, cost.sweeps) == expected


def test_a_given_pattern_is_used_and_checked():
    f = lambda x: x[1:] * x[:-1]
    band = np.eye(3, 4, dtype=bool) | np.eye(3, 4, 1, dtype=bool)
    jac = sparse_jacobian(f, "forward", pattern=band)
    np.testing.assert_allclose(
        jac(np.arange(1.0, 5.0)).toarray(), [[2, 1, 0, 0], [0, 3, 2, 0], [0, 0, 4, 3]]
    )
    with pytest.raises(ValueError, match="does not fit"):
        sparse_jacobian(f, pattern=np.ones((4, 4)))(np.ones(4))


def test_unknown_modes_are_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="bidirectional"):
        sparse_jacobian(ad.sin, "sideways")(np.ones(3))
    with pytest.raises(ValueError, match="acyclic"):
        sparse_hessian(ad.sum, "sideways")(np.ones(3))
