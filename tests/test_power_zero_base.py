"""``power`` at a zero base: derivatives are PyTorch's 0, never NaN, in every mode and order.

``x**0`` is the constant 1, so every derivative in ``x`` is 0 (also at ``x = 0``,
where ``0 * x**-1`` would be NaN). ``0**y`` is 0 for every ``y > 0``, so every
derivative in ``y`` is 0 there (where ``log(0) * 0`` would be NaN).
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.transforms import HESSIAN_MODES

GRAD_MODES = ["reverse", "forward", "symbolic"]


@pytest.mark.parametrize("mode", GRAD_MODES)
def test_first_derivatives_at_a_zero_base_are_zero(mode):
    assert ad.grad(lambda x: x**0.0, mode=mode)(0.0) == 0.0
    assert ad.grad(lambda y: 0.0**y, mode=mode)(0.14) == 0.0
    assert ad.grad(lambda x: x**0, mode=mode)(0.0) == 0.0


@pytest.mark.parametrize("mode", HESSIAN_MODES)
def test_second_derivatives_at_a_zero_base_are_zero(mode):
    at = np.array([0.0, 1.5])
    np.testing.assert_array_equal(ad.hessian(lambda x: ad.sum(x**0.0), mode=mode)(at), 0.0)
    np.testing.assert_array_equal(
        ad.hessian(lambda y: ad.sum(0.0**y), mode=mode)(np.array([0.14, 2.0])), 0.0
    )


def test_third_derivatives_at_a_zero_base_are_zero():
    assert ad.grad(ad.grad(ad.grad(lambda x: x**0.0)))(0.0) == 0.0
    assert ad.grad(ad.grad(ad.grad(lambda y: 0.0**y), mode="forward"))(0.14) == 0.0


def test_a_zero_base_leaves_the_other_entries_of_a_forward_gradient_alone():
    f = lambda x: ad.sum(x**0.0) + ad.sum(x * x)
    at = np.array([0.0, 1.0, -2.0])
    np.testing.assert_array_equal(ad.grad(f, mode="forward")(at), 2.0 * at)
    np.testing.assert_array_equal(ad.jacfwd(lambda x: x**0.0 + x)(at), np.eye(3))


def test_away_from_zero_the_general_rules_still_hold():
    # At y = 0 with x != 0 the exponent's derivative is log(x) and the mixed
    # second derivative 1/x: the masks must not touch these.
    g = ad.grad(lambda x, y: x**y, argnums=(0, 1))(2.0, 0.0)
    np.testing.assert_allclose(g, [0.0, np.log(2.0)], rtol=1e-15)
    h = ad.hessian(lambda v: v[0] ** v[1])(np.array([2.0, 0.0]))
    np.testing.assert_allclose(h, [[0.0, 0.5], [0.5, np.log(2.0) ** 2]], rtol=1e-15)


def test_verify_agrees_at_a_zero_base(capsys):
    from adcompare.cli import main

    assert main(["verify", "x**0", "--at", "x=0"]) == 0
    assert "MISMATCH" not in capsys.readouterr().out
