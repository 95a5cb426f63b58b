"""The smallest ADBench instances differentiated exactly by SymPy.

The SymPy expressions are written here from the formulas, independently of
``adcompare.adbench``, so they check the op-set objectives and both modes'
derivatives against an exact oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import adcompare as ad
from adcompare import adbench
from adcompare.adbench.ba import rodrigues_rotate
from tests.shared_data import shared_file

MODES = ["forward", "reverse"]


def sympy_gmm_objective(data, symbols):
    """ADBench's GMM objective as one SymPy expression in the flat parameters."""
    d, k, n = data.sizes
    icf_size = d * (d + 1) // 2
    alpha = symbols[:k]
    mu = [sp.Matrix(symbols[k + d * c : k + d * (c + 1)]) for c in range(k)]
    icf = [symbols[k + k * d + icf_size * c : k + k * d + icf_size * (c + 1)] for c in range(k)]
    factors = []
    for c in range(k):
        q, lower = icf[c][:d], iter(icf[c][d:])
        factor = sp.zeros(d, d)
        for i in range(d):
            factor[i, i] = sp.exp(q[i])
        for column in range(d):
            for row in range(column + 1, d):
                factor[row, column] = next(lower)
        factors.append(factor)
    total = -sp.Rational(n * d, 2) * sp.log(2 * sp.pi)
    for x in data.x:
        point = sp.Matrix([sp.Float(v, 20) for v in x])
        terms = []
        for c in range(k):
            mapped = factors[c] * (point - mu[c])
            terms.append(alpha[c] + sum(icf[c][:d]) - (mapped.T * mapped)[0] / 2)
        total += sp.log(sum(sp.exp(t) for t in terms))
    total -= n * sp.log(sum(sp.exp(a) for a in alpha))
    gamma, m = sp.Float(data.gamma, 20), data.m
    dof = d + m + 1
    for c in range(k):
        q, lower = icf[c][:d], icf[c][d:]
        squares = sum(sp.exp(v) ** 2 for v in q) + sum(v**2 for v in lower)
        total += gamma**2 / 2 * squares - m * sum(q)
    log_gamma_d = sp.Rational(d * (d - 1), 4) * sp.log(sp.pi) + sum(
        sp.loggamma(sp.Rational(dof, 2) + sp.Rational(1 - j, 2)) for j in range(1, d + 1)
    )
    return total - k * (dof * d * (sp.log(gamma) - sp.log(2) / 2) - log_gamma_d)


@pytest.fixture(scope="module")
def gmm_exact():
    problem = adbench.bundled("adbench-gmm-test")
    symbols = sp.symbols(f"p0:{problem.n_params}")
    expression = sympy_gmm_objective(problem.data, symbols)
    at = dict(zip(symbols, problem.params))
    value = float(expression.evalf(30, subs=at))
    gradient = np.array([float(sp.diff(expression, s).evalf(30, subs=at)) for s in symbols])
    return problem, value, gradient


def test_gmm_objective_matches_sympy(gmm_exact):
    problem, value, _ = gmm_exact
    assert adbench.relative_error(problem.objective(problem.params), value) <= 1e-13


@pytest.mark.parametrize("mode", MODES)
def test_gmm_gradient_matches_sympy(gmm_exact, mode):
    problem, _, gradient = gmm_exact
    computed = ad.grad(problem.objective, mode=mode)(problem.params)
    assert adbench.relative_error(computed, gradient).max() <= 1e-13


def sympy_reprojection(camera, point, weight, feature):
    """ADBench's reprojection error of one observation, from the formulas."""
    rotation = sp.Matrix(camera[0:3])
    angle = sp.sqrt(sum(r**2 for r in rotation))
    axis = rotation / angle
    relative = sp.Matrix(point) - sp.Matrix(camera[3:6])
    rotated = (
        relative * sp.cos(angle)
        + axis.cross(relative) * sp.sin(angle)
        + axis * axis.dot(relative) * (1 - sp.cos(angle))
    )
    u = sp.Matrix([rotated[0] / rotated[2], rotated[1] / rotated[2]])
    radius_sq = u.dot(u)
    u = u * (1 + camera[9] * radius_sq + camera[10] * radius_sq**2)
    pixel = u * camera[6] + sp.Matrix(camera[7:9])
    return (pixel - sp.Matrix(feature)) * weight


@pytest.fixture(scope="module")
def ba_exact_block():
    """Observation 0's 2 × 15 Jacobian block, exactly: each column is the derivative
    in one variable with the other fourteen fixed at their values."""
    problem = adbench.bundled("adbench-ba-test")
    data = problem.data
    camera, point, weight = sp.symbols("c0:11"), sp.symbols("x0:3"), sp.Symbol("w")
    error = sympy_reprojection(camera, point, weight, [sp.Float(v, 30) for v in data.features[0]])
    variables = [*camera, *point, weight]
    values = [sp.Float(v, 30) for v in [*data.cameras[0], *data.points[0], data.weights[0]]]
    columns = []
    for i, variable in enumerate(variables):
        others = {u: value for j, (u, value) in enumerate(zip(variables, values)) if j != i}
        along = error.subs(others)
        columns.append([float(sp.diff(e, variable).subs(variable, values[i])) for e in along])
    return problem, np.array(columns).T


@pytest.mark.parametrize("mode", MODES)
def test_ba_observation_block_matches_sympy(ba_exact_block, mode):
    problem, exact = ba_exact_block
    jacobian = ad.jacobian(problem.residuals, mode=mode)(problem.params)
    rows, cols = problem.jacobian_pattern()
    block = jacobian[rows[:30], cols[:30]].reshape(2, 15)  # observation 0, in CSR order
    assert adbench.relative_error(block, exact).max() <= 1e-12


@pytest.mark.parametrize("mode", MODES)
def test_rodrigues_at_zero_angle_has_the_first_order_derivative(mode):
    """At r = 0 the rotation is X + r × X, whose Jacobian in r is −[X]×."""
    point = np.array([[0.3, -1.2, 2.0]])
    jacobian = ad.jacobian(lambda r: rodrigues_rotate(ad.reshape(r, (1, 3)), point)[0], mode=mode)
    x, y, z = point[0]
    minus_cross_matrix = np.array([[0.0, z, -y], [-z, 0.0, x], [y, -x, 0.0]])
    np.testing.assert_allclose(jacobian(np.zeros(3)), minus_cross_matrix, rtol=0, atol=1e-15)


def test_symbolic_mode_matches_the_hand_written_sympy_formula(gmm_exact):
    """The same objective code, traced by adcompare.symbolic, against the SymPy formula above."""
    problem, exact_value, exact_gradient = gmm_exact
    value, gradient = ad.value_and_grad(problem.objective, mode="symbolic")(problem.params)
    assert adbench.relative_error(value, exact_value) <= 1e-13
    assert adbench.relative_error(gradient, exact_gradient).max() <= 1e-13


def test_symbolic_mode_reproduces_adbench_reference_gradient():
    """ADBench's own test instance and recorded answers (from ``../shared/data``)."""
    problem = adbench.load_gmm(shared_file("adbench", "gmm", "test.txt"))
    reference = adbench.adbench_references("gmm", shared_file("adbench", "reference_values.json"))
    value, gradient = ad.value_and_grad(problem.objective, mode="symbolic")(problem.params)
    assert adbench.relative_error(value, reference["objective"]).max() <= 1e-8
    assert adbench.relative_error(gradient, reference["gradient"]).max() <= 1e-8
