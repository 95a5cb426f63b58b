"""adcompare.odeint: values against scipy and closed forms, derivatives three ways.

The references: scipy.integrate.odeint (LSODA) at tight tolerances, the
closed form y(t) = expm(A t) y0 of a linear ODE and its derivatives (expm
itself for y0, scipy's Fréchet derivative of expm for A), central finite
differences, and JAX's own odeint where JAX is installed.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import adcompare as ad
from adcompare import revolve
from adcompare.transforms import HESSIAN_MODES

METHODS = ("tape", "forward", "adjoint")
TIGHT = {"rtol": 1e-11, "atol": 1e-11}
A = np.array([[-0.5, 1.0], [-1.0, -0.3]])
Y0 = np.array([1.0, 0.5])
TIMES = np.linspace(0.0, 2.0, 5)


def linear(y, t, a):
    return a @ y


def predator_prey(y, t, p):
    """Lotka–Volterra with four rates, t-dependent forcing so t matters too."""
    prey, predator = y[0], y[1]
    return ad.stack(
        [
            p[0] * prey - p[1] * prey * predator + 0.1 * ad.sin(t),
            -p[2] * predator + p[3] * prey * predator,
        ]
    )


RATES = np.array([1.1, 0.4, 0.9, 0.3])
PREY_START = np.array([2.0, 1.0])
PREY_TIMES = np.linspace(0.0, 3.0, 7)


def expm_solution(a, y0, times):
    return np.stack([scipy.linalg.expm(a * t) @ y0 for t in times])


def frechet_jacobian(a, y0, times):
    """d y(t)/dA = d/dA (expm(A t) y0) by expm's Fréchet derivative, shape (T, n, n, n)."""
    n = len(y0)
    out = np.zeros((len(times), n, n, n))
    for i in range(n):
        for j in range(n):
            direction = np.zeros((n, n))
            direction[i, j] = 1.0
            for k, t in enumerate(times):
                derivative = scipy.linalg.expm_frechet(a * t, direction * t, compute_expm=False)
                out[k, :, i, j] = derivative @ y0
    return out


# --- values ----------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["dopri5", "rk4"])
def test_linear_ode_matches_the_matrix_exponential(solver):
    ys = ad.odeint(linear, Y0, TIMES, A, solver=solver, steps=200, **TIGHT)
    assert ys.shape == (len(TIMES), 2)
    np.testing.assert_allclose(ys, expm_solution(A, Y0, TIMES), rtol=1e-10, atol=1e-11)


def test_exponential_decay_with_tfirst_and_a_scalar_state():
    ys = ad.odeint(lambda t, y, k: -k * y, 2.0, [0.0, 0.5, 3.0], 0.7, tfirst=True, **TIGHT)
    np.testing.assert_allclose(ys[:, 0], 2.0 * np.exp(-0.7 * np.array([0.0, 0.5, 3.0])), 1e-10)


@pytest.mark.parametrize("solver", ["dopri5", "rk4"])
def test_nonlinear_ode_matches_scipy_odeint(solver):
    ys = ad.odeint(predator_prey, PREY_START, PREY_TIMES, RATES, solver=solver, steps=400, **TIGHT)
    reference = scipy.integrate.odeint(
        lambda y, t, p: np.asarray(predator_prey(y, t, p)),
        PREY_START,
        PREY_TIMES,
        args=(RATES,),
        rtol=1e-13,
        atol=1e-13,
    )
    np.testing.assert_allclose(ys, reference, rtol=1e-9, atol=1e-10)


def test_rk4_converges_at_fourth_order():
    exact = expm_solution(A, Y0, TIMES)[-1]
    errors = [
        np.abs(ad.odeint(linear, Y0, TIMES, A, solver="rk4", steps=s)[-1] - exact).max()
        for s in (4, 8)
    ]
    assert 14 < errors[0] / errors[1] < 18  # 2⁴ = 16


def test_a_list_valued_f_and_a_static_argument_run_as_in_scipy():
    def f(y, t, k, power, unused):
        return [y[1], -(k**power) * y[0]]

    ys = ad.odeint(f, [1.0, 0.0], [0.0, 1.0], 2.0, 2, None, **TIGHT)
    np.testing.assert_allclose(ys[1], [np.cos(2.0), -2.0 * np.sin(2.0)], rtol=1e-9)


# --- derivatives ------------------------------------------------------------------------


def _solution(method, **options):
    return lambda y0, a: ad.odeint(linear, y0, TIMES, a, method=method, **TIGHT, **options)


@pytest.mark.parametrize("method", METHODS)
def test_jacobians_match_the_closed_form(method):
    jacobian = ad.jacfwd if method != "adjoint" else ad.jacrev
    d_y0, d_a = jacobian(_solution(method), argnums=(0, 1))(Y0, A)
    expected_y0 = np.stack([scipy.linalg.expm(A * t) for t in TIMES])
    np.testing.assert_allclose(d_y0, expected_y0, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(d_a, frechet_jacobian(A, Y0, TIMES), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("solver", ["dopri5", "rk4"])
def test_the_three_methods_agree_in_both_modes(solver):
    def solution(method):
        return lambda p: ad.odeint(
            predator_prey, PREY_START, PREY_TIMES, p, method=method, solver=solver, steps=20
        )

    reference = ad.jacrev(solution("tape"))(RATES)
    assert reference.shape == (len(PREY_TIMES), 2, 4)
    np.testing.assert_allclose(ad.jacfwd(solution("tape"))(RATES), reference, rtol=1e-12)
    for method, modes in (("forward", (ad.jacfwd, ad.jacrev)), ("adjoint", (ad.jacrev,))):
        for mode in modes:
            np.testing.assert_allclose(mode(solution(method))(RATES), reference, rtol=1e-6)
    if solver == "rk4":
        # With fixed steps, RK4 on the sensitivity equations is the derivative of RK4's own
        # arithmetic (Runge–Kutta commutes with forward differentiation): equal to rounding.
        found = ad.jacfwd(solution("forward"))(RATES)
        np.testing.assert_allclose(found, reference, rtol=1e-12, atol=1e-12)


def test_gradients_match_finite_differences():
    def loss(p, method="tape", tolerance=1.49012e-8):
        ys = ad.odeint(
            predator_prey, PREY_START, PREY_TIMES, p, method=method, rtol=tolerance, atol=tolerance
        )
        return ad.sum(ys[-1] ** 2) + ad.sum(ys[:, 0])

    step = 1e-5
    differences = [
        (loss(RATES + step * e, tolerance=1e-12) - loss(RATES - step * e, tolerance=1e-12))
        / (2 * step)
        for e in np.eye(4)
    ]
    for method in METHODS:  # at scipy's default tolerances
        np.testing.assert_allclose(ad.grad(loss)(RATES, method), differences, rtol=1e-6)


def test_every_snapshot_schedule_gives_the_same_adjoint_bit_for_bit():
    def gradient(snapshots):
        loss = lambda p: ad.sum(
            ad.odeint(
                predator_prey, PREY_START, PREY_TIMES, p, method="adjoint", snapshots=snapshots
            )
        )
        return ad.grad(loss)(RATES)

    stored = gradient(None)
    for snapshots in (1, 3, "sqrt"):
        np.testing.assert_array_equal(gradient(snapshots), stored)


@pytest.mark.parametrize("snapshots", [2, 5, None])
def test_the_adjoint_recomputes_what_revolve_schedules(snapshots):
    steps_each, intervals = 6, len(TIMES) - 1
    total = steps_each * intervals
    a = ad.Tensor(A, requires_grad=True)
    with ad.count() as cost:
        ys = ad.odeint(
            linear,
            Y0,
            TIMES,
            a,
            method="adjoint",
            solver="rk4",
            steps=steps_each,
            snapshots=snapshots,
        )
        ad.sum(ys).backward()
    schedule = revolve.schedule(total, total if snapshots is None else snapshots)
    # Every advance of the schedule re-runs a step, and each reversal runs its step once more.
    assert cost.recomputed_steps == schedule.advances + total


def _loss_work(method, parameters):
    """Element work of the gradient of ½‖y(1)‖² for y' = tanh(W y) with W of n² weights."""
    size = int(np.sqrt(parameters))
    weights = np.random.default_rng(0).standard_normal((size, size)) / size
    y0 = np.linspace(-1.0, 1.0, size)

    def loss(w):
        ys = ad.odeint(
            lambda y, t, w: ad.tanh(w @ y), y0, [0.0, 1.0], w, method=method, solver="rk4", steps=8
        )
        return 0.5 * ad.sum(ys[-1] ** 2)

    mode = "forward" if method == "forward" else "reverse"
    with ad.count() as cost:
        ad.grad(loss, mode=mode)(weights)
    return sum(cost.elements.values())


def test_the_adjoint_wins_a_gradient_over_many_parameters_and_its_cost_stays_flat():
    forward = [_loss_work("forward", n) for n in (16, 64)]
    adjoint = [_loss_work("adjoint", n) for n in (16, 64)]
    assert adjoint[1] < forward[1] / 4
    # n × 4 parameters: the sensitivities' work grows with n², the adjoint's with n.
    assert forward[1] / forward[0] > 2 * adjoint[1] / adjoint[0]


def test_forward_sensitivities_win_a_long_trajectory_of_few_parameters():
    times = np.linspace(0.0, 3.0, 40)

    def trajectory(method):
        return lambda p: ad.odeint(
            predator_prey, PREY_START, times, p, method=method, solver="rk4", steps=2
        )

    work = {}
    for method, jacobian in (("forward", ad.jacfwd), ("adjoint", ad.jacrev)):
        with ad.count() as cost:
            jacobian(trajectory(method))(RATES)
        work[method] = sum(cost.elements.values())
    assert work["forward"] < work["adjoint"] / 4


def test_jax_odeint_gives_the_same_gradient():
    jax = pytest.importorskip("jax")
    from jax.experimental.ode import odeint as jax_odeint

    def jax_loss(p):
        ys = jax_odeint(
            lambda y, t, p: jax.numpy.stack(
                [
                    p[0] * y[0] - p[1] * y[0] * y[1] + 0.1 * jax.numpy.sin(t),
                    -p[2] * y[1] + p[3] * y[0] * y[1],
                ]
            ),
            jax.numpy.asarray(PREY_START),
            jax.numpy.asarray(PREY_TIMES),
            p,
            rtol=1e-11,
            atol=1e-11,
        )
        return jax.numpy.sum(ys**2)

    with jax.enable_x64(True):  # float64 for this test only
        expected = np.asarray(jax.grad(jax_loss)(jax.numpy.asarray(RATES)))
    for method in METHODS:
        loss = lambda p: ad.sum(
            ad.odeint(predator_prey, PREY_START, PREY_TIMES, p, method=method, **TIGHT) ** 2
        )
        np.testing.assert_allclose(ad.grad(loss)(RATES), expected, rtol=1e-7)


def _decay(y, t, k):
    return -k * y


RATE_BATCH = np.array([0.5, 1.0, 2.0])


@pytest.mark.parametrize("method", ["forward", "adjoint"])
def test_vmap_solves_each_example_with_its_own_steps(method):
    final = ad.vmap(lambda k: ad.odeint(_decay, [1.0], [0.0, 1.0], k, method=method, **TIGHT))
    np.testing.assert_allclose(final(RATE_BATCH)[:, 1, 0], np.exp(-RATE_BATCH), rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_vmap_of_grad_runs_on_fixed_steps(method):
    def final(k):
        return ad.odeint(_decay, [1.0], [0.0, 1.0], k, method=method, solver="rk4", steps=40)[1, 0]

    found = ad.vmap(ad.grad(final))(RATE_BATCH)
    np.testing.assert_allclose(found, -np.exp(-RATE_BATCH), rtol=1e-6)


@pytest.mark.parametrize(
    "method, composition",
    [
        ("tape", "fwd-over-rev"),
        *(("forward", composition) for composition in HESSIAN_MODES),
        ("adjoint", "rev-over-rev"),
    ],
)
def test_second_derivatives_match_the_closed_form(method, composition):
    def final(k):
        return ad.odeint(_decay, [1.0], [0.0, 1.0], k, method=method, **TIGHT)[1, 0]

    found = ad.hessian(final, mode=composition)(0.5)
    np.testing.assert_allclose(found, np.exp(-0.5), rtol=1e-8)  # d²/dk² e^(-k)


# --- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: ad.odeint(linear, Y0, [0.0, 2.0, 1.0], A), ValueError, "strictly increasing"),
        (lambda: ad.odeint(linear, Y0, [[0.0, 1.0]], A), ValueError, "1-D array"),
        (lambda: ad.odeint(linear, Y0, [0.0, 1.0j], A), TypeError, "complex"),
        (lambda: ad.odeint(linear, Y0 + 0j, TIMES, A), TypeError, "y0 is complex"),
        (lambda: ad.odeint(linear, Y0, TIMES, A + 0j), TypeError, "split it"),
        (lambda: ad.odeint(linear, np.ones((2, 2)), TIMES, A), ValueError, "flatten"),
        (lambda: ad.odeint(lambda y, t: y[:1], Y0, TIMES), ValueError, "shaped like y"),
        (lambda: ad.odeint(linear, Y0, TIMES, A, method="backward"), ValueError, "tape"),
        (lambda: ad.odeint(linear, Y0, TIMES, A, solver="euler"), ValueError, "dopri5"),
        (lambda: ad.odeint(linear, Y0, TIMES, A, snapshots=0), ValueError, "sqrt"),
        (lambda: ad.odeint(linear, Y0, TIMES, A, mxstep=3), RuntimeError, "mxstep"),
        (lambda: ad.vmap(lambda k: ad.odeint(_decay, Y0, TIMES, k))(RATE_BATCH), TypeError, "rk4"),
        (
            lambda: ad.jacfwd(lambda a: ad.odeint(linear, Y0, TIMES, a, method="adjoint"))(A),
            TypeError,
            "method='forward'",
        ),
        (
            lambda: ad.grad(lambda s: ad.sum(ad.odeint(linear, Y0, s * TIMES, A)))(1.0),
            TypeError,
            "not the times",
        ),
    ],
)
def test_bad_input_is_refused_in_one_sentence(call, error, words):
    with pytest.raises(error, match=words):
        call()
