"""GradBench's lse, llsq, det, kmeans and ode evals: the recorded answers, and independent oracles.

Conformance compares each eval's output, in every mode, with the reference
tool's recorded answer by GradBench's rule (|a − b| / max(1, |a| + |b|) ≤ 1e-4),
and more strictly than GradBench: every number finite, every list of the
reference's length. The oracles are SymPy (det, llsq, lse), finite differences
(kmeans, ode, where ode's gradient is not zero) and JAX where installed.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare.gradbench import InputError, get_eval
from adcompare.gradbench.scalar import FORWARD_BUDGET
from tests.shared_data import shared_file

EVALS = ("lse", "llsq", "det", "kmeans", "ode")
DERIVATIVE_MODES = ("reverse", "forward", "replay", "auto")


def _assert_conforms(reference, output, where="output"):
    """GradBench's comparison (ints as floats, equal types and lengths, the 1e-4 rule), with
    non-finite numbers refused."""
    if isinstance(reference, list):
        assert isinstance(output, list), f"{where}: a list expected, got {type(output).__name__}"
        assert len(output) == len(reference), f"{where}: length {len(output)}, not {len(reference)}"
        for i, (a, b) in enumerate(zip(reference, output)):
            _assert_conforms(a, b, f"{where}[{i}]")
        return
    assert isinstance(output, float), f"{where}: a float expected, got {type(output).__name__}"
    assert math.isfinite(output), f"{where}: {output} is not finite"
    difference = abs(reference - output) / max(1.0, abs(reference) + abs(output))
    assert difference <= 1e-4, f"{where}: {output} against the reference {reference}"


def _recorded(name):
    with open(shared_file("gradbench", f"{name}.jsonl")) as lines:
        return [json.loads(line) for line in lines]


def _answer(name, function, value, mode):
    ev = get_eval(name)
    return ev.encode(function, ev.functions[function](ev.prepare(value), ev.resolve(mode)))


@pytest.mark.parametrize("name", EVALS)
def test_recorded_answers_in_every_mode(name):
    ev = get_eval(name)
    for line in _recorded(name):
        value = {**line["input"], "min_runs": 1}
        modes = DERIVATIVE_MODES if line["function"] == ev.derivative else ("reverse",)
        for mode in modes:
            _assert_conforms(line["output"], _answer(name, line["function"], value, mode))


@pytest.mark.parametrize("name", EVALS)
def test_workloads_are_gradbenchs_in_its_order_with_its_inputs(name):
    with open(shared_file("gradbench", "published.json")) as file:
        published = json.load(file)["evals"][name]["tools"]["manual"]["workloads"]
    workloads = get_eval(name).workloads()
    assert [w.description for w in workloads] == list(published)
    recorded = {line["workload"]: line["input"] for line in _recorded(name)}
    for workload in workloads[: len(recorded)]:
        assert workload.make() == recorded[workload.description]


def test_comparison_refuses_what_gradbench_would_let_through():
    with pytest.raises(AssertionError, match="not finite"):
        _assert_conforms(1.0, float("nan"))
    with pytest.raises(AssertionError, match="length"):
        _assert_conforms([1.0, 2.0], [1.0])
    with pytest.raises(AssertionError, match="reference"):
        _assert_conforms(100.0, 100.1)
    _assert_conforms(100.0, 100.01)  # 0.01 / 200.01 is within 1e-4


def _all_modes(name, function, value):
    return {mode: _answer(name, function, value, mode) for mode in DERIVATIVE_MODES}


def _values(expression, symbols, point):
    return float(expression.subs(dict(zip(symbols, point))))


@pytest.mark.parametrize("singular", [False, True])
def test_det_matches_sympy_at_ell_3_singular_matrices_included(singular):
    entries = sympy.symbols("a0:9")
    determinant = sympy.Matrix(3, 3, entries).det()
    point = [2, -1, 3, 0, 4, 1, 5, 2, -2]
    if singular:  # rank two: det 0, but its cofactors are not all 0
        point = [1, 2, 3, 2, 4, 6, -1, 3, 1]
    value = {"A": [float(v) for v in point], "ell": 3}
    assert _answer("det", "primal", value, "reverse") == _values(determinant, entries, point)
    cofactors = [_values(sympy.diff(determinant, a), entries, point) for a in entries]
    if singular:
        assert any(cofactors)
    for mode, gradient in _all_modes("det", "gradient", value).items():
        np.testing.assert_allclose(gradient, cofactors, rtol=1e-13, atol=1e-13, err_msg=mode)


def test_det_work_grows_as_subsets_not_permutations():
    # ℓ·2^(ℓ−1) products: from ℓ = 8 to 10 the elements multiplied grow 4.9-fold, not 90-fold.
    det = get_eval("det").functions["primal"]
    work = {}
    for ell in (8, 10):
        with ad.count() as counted:
            det(get_eval("det").prepare({"A": [0.5] * ell * ell, "ell": ell}), "reverse")
        work[ell] = counted.elements["numpy"]
    assert work[8] > 0
    assert 4 < work[10] / work[8] < 6


def test_llsq_matches_sympy_at_small_m():
    m, n = 3, 5
    x = sympy.symbols("x0:3")
    objective = 0
    for i in range(n):
        t = sympy.Rational(-1) + sympy.Rational(2 * i, n - 1)
        objective += (sympy.sign(t) - sum(x[j] * t**j for j in range(m))) ** 2
    objective /= 2
    point = [0.25, -0.5, 1.5]
    value = {"x": point, "n": n}
    assert _answer("llsq", "primal", value, "reverse") == pytest.approx(
        _values(objective, x, point), rel=1e-14
    )
    expected = [_values(sympy.diff(objective, xj), x, point) for xj in x]
    for mode, gradient in _all_modes("llsq", "gradient", value).items():
        np.testing.assert_allclose(gradient, expected, rtol=1e-13, atol=1e-13, err_msg=mode)


def test_lse_matches_sympy_at_small_n():
    x = sympy.symbols("x0:4")
    objective = sympy.log(sum(sympy.exp(xi) for xi in x))
    point = [0.5, -2.0, 3.0, 3.0]  # a tie at the maximum
    value = {"x": point}
    assert _answer("lse", "primal", value, "reverse") == pytest.approx(
        _values(objective, x, point), rel=1e-14
    )
    expected = [_values(sympy.diff(objective, xi), x, point) for xi in x]
    for mode, gradient in _all_modes("lse", "gradient", value).items():
        np.testing.assert_allclose(gradient, expected, rtol=1e-13, err_msg=mode)


def _kmeans_instance():
    rng = np.random.default_rng(5)
    points = rng.random((40, 3))
    return {"points": points.tolist(), "centroids": points[-4:].tolist()}


def test_kmeans_dir_is_gradient_over_hessian_diagonal_by_finite_differences():
    value = _kmeans_instance()
    kmeans = get_eval("kmeans")
    points, centroids = kmeans.prepare(value)
    step = 1e-4  # small enough that no point changes its nearest centroid
    gradient, diagonal = np.zeros_like(centroids), np.zeros_like(centroids)
    cost = kmeans.functions["cost"]
    centre = cost((points, centroids), "reverse")
    for index in np.ndindex(centroids.shape):
        shifted = [centroids.copy(), centroids.copy()]
        shifted[0][index] += step
        shifted[1][index] -= step
        up, down = (cost((points, c), "reverse") for c in shifted)
        gradient[index] = (up - down) / (2 * step)
        diagonal[index] = (up - 2 * centre + down) / step**2
    expected = gradient / diagonal
    for mode, direction in _all_modes("kmeans", "dir", value).items():
        np.testing.assert_allclose(direction, expected, rtol=1e-5, atol=1e-7, err_msg=mode)
    # the direction is each centroid minus the mean of its points
    assignment = np.argmin(((points[:, None] - centroids[None]) ** 2).sum(axis=2), axis=1)
    means = np.array([points[assignment == j].mean(axis=0) for j in range(len(centroids))])
    np.testing.assert_allclose(expected, centroids - means, atol=1e-6)


def _ode_instance():
    # n = 6 and s = 2: the RK4 stages reach y₅, so its gradient is not zero.
    return {"x": [0.9, 0.4, 1.3, 0.7, 1.1, 0.6], "s": 2}


def test_ode_gradient_where_it_is_not_zero_by_finite_differences():
    value = _ode_instance()
    x = np.array(value["x"])

    def last(x):
        return _answer("ode", "primal", {"x": x.tolist(), "s": value["s"]}, "reverse")[-1]

    step = 1e-5
    expected = [
        (last(x + step * unit) - last(x - step * unit)) / (2 * step) for unit in np.eye(x.size)
    ]
    assert min(abs(e) for e in expected) > 1e-3
    for mode, gradient in _all_modes("ode", "gradient", value).items():
        np.testing.assert_allclose(gradient, expected, rtol=1e-7, err_msg=mode)


def test_ode_replay_records_one_step_and_gives_reverse_mode_s_gradient():
    import adcompare.gradbench.ode as ode_eval

    ev = get_eval("ode")
    rng = np.random.default_rng(32)
    ode_eval._REPLAYS.clear()
    for s in (3, 12, 40):  # one step's programs for every s: recorded once for n = 9
        x = rng.random(9) * 2.0
        replayed = ev.functions["gradient"]((x, s), "replay")
        reverse = ev.functions["gradient"]((x, s), "reverse")
        assert np.max(np.abs(reverse)) > 1e-12
        # Each step's shares of the scales are summed before they join the running total,
        # where reverse mode's sweep adds them one by one: a reassociation, a few ulps.
        ulps = np.abs(replayed - reverse) / np.spacing(np.abs(reverse))
        assert np.max(ulps) <= 4.0
    assert len(ode_eval._REPLAYS) == 2  # one step's stages: the first step's, the others'
    first, later = (ode_eval._REPLAYS[key].programs()[1] for key in ((9, "first"), 9))
    assert first.instructions < later.instructions  # no cotangent of y(0)
    assert all(c.recordings == 1 for c in ode_eval._REPLAYS.values())
    assert ev.auto == "replay"


def test_ode_primal_is_rk4_of_the_chain():
    # One step of h = 2 is exact for y₀ = x₀t, y₁ = x₀x₁t²/2, y₂ = x₀x₁x₂t³/6 (degree ≤ 4).
    x = [0.5, 2.0, 3.0]
    y = _answer("ode", "primal", {"x": x, "s": 1}, "reverse")
    assert y == pytest.approx([0.5 * 2, 0.5 * 2 * 4 / 2, 0.5 * 2 * 3 * 8 / 6], rel=1e-15)


@pytest.mark.parametrize("name", ["lse", "ode"])
def test_agrees_with_jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    if name == "lse":
        value = {"x": [0.3, -1.2, 2.5, 0.0]}
        expected = jax.grad(jax.scipy.special.logsumexp)(jnp.array(value["x"]))
    else:
        value = _ode_instance()

        def last(x):
            y, h = jnp.zeros_like(x), 2.0 / value["s"]
            slope = lambda y: x * jnp.concatenate([jnp.ones(1), y[:-1]])
            for _ in range(value["s"]):
                k1 = slope(y)
                k2 = slope(y + h / 2 * k1)
                k3 = slope(y + h / 2 * k2)
                k4 = slope(y + h * k3)
                y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y[-1]

        expected = jax.grad(last)(jnp.array(value["x"]))
    for mode, gradient in _all_modes(name, "gradient", value).items():
        np.testing.assert_allclose(gradient, np.asarray(expected), rtol=1e-12, err_msg=mode)


BAD_INPUTS = [
    ("lse", [1.0, 2.0], "takes an object with fields x"),
    ("lse", {"y": [1.0]}, "lacks the field 'x'"),
    ("lse", {"x": []}, "non-empty"),
    ("lse", {"x": [[1.0], [2.0]]}, "must be a list of numbers"),
    ("lse", {"x": [1.0, float("inf")]}, "non-finite number at index 1"),
    ("lse", {"x": [True, False]}, "must be a list of numbers"),
    ("lse", {"x": "1.0"}, "must be a list of numbers, not str"),
    ("llsq", {"x": [1.0], "n": 1}, "n must be a whole number of at least 2"),
    ("llsq", {"x": [1.0], "n": 2.0}, "n must be a whole number"),
    ("llsq", {"x": [1.0] * 128, "n": 10**6}, "exceed this tool's"),
    ("det", {"A": [1.0, 2.0, 3.0], "ell": 2}, "must hold ell² = 4 numbers"),
    ("det", {"A": [1.0], "ell": 0}, "at least 1"),
    ("det", {"A": [1.0], "ell": 30}, "beyond this tool's 20"),
    ("det", {"A": [1.0, float("nan"), 0.0, 1.0], "ell": 2}, "non-finite number at index 1"),
    ("kmeans", {"points": [[1.0, 2.0]], "centroids": [[1.0]]}, "with the same d"),
    ("kmeans", {"points": [[1.0, 2.0], [1.0]], "centroids": [[1.0]]}, "rows of one length"),
    ("kmeans", {"points": [1.0, 2.0], "centroids": [[1.0]]}, "2-deep nested lists"),
    ("kmeans", {"points": [[0.0], [1.0]], "centroids": [[0.0], [1.0], [9.0]]}, "centroid 2"),
    ("ode", {"x": [1.0, 2.0], "s": 0}, "s must be a whole number of at least 1"),
    ("ode", {"x": [1.0, 2.0]}, "lacks the field 's'"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD_INPUTS)
def test_bad_input_is_one_sentence(name, value, message):
    ev = get_eval(name)
    with pytest.raises(InputError, match=re.escape(message)) as info:
        ev.functions[ev.derivative](ev.prepare(value), "reverse")
    assert "\n" not in str(info.value)


def test_forward_mode_refuses_what_would_run_for_many_minutes():
    n = int(math.sqrt(FORWARD_BUDGET)) + 1  # n lanes through n elements
    lse = get_eval("lse")
    prepared = lse.prepare({"x": [0.0] * n})
    with pytest.raises(InputError, match="use mode reverse or replay"):
        lse.functions["gradient"](prepared, "forward")
    assert lse.functions["gradient"](prepared, "reverse") == pytest.approx(np.full(n, 1 / n))


def test_replay_records_each_shape_and_answers_alike_after_a_change():
    for x in ([0.0, 1.0], [0.0, 1.0, 2.0], [2.0, 1.0]):
        expected = np.exp(x) / np.exp(x).sum()
        np.testing.assert_allclose(_answer("lse", "gradient", {"x": x}, "replay"), expected)


def test_kmeans_forward_lanes_in_several_chunks_agree_with_forward_over_reverse(monkeypatch):
    from adcompare.gradbench import kmeans

    value = _kmeans_instance()
    expected = _answer("kmeans", "dir", value, "reverse")
    monkeypatch.setattr(kmeans, "LANE_ELEMENTS", 5 * 40 * 3)  # 5 lanes a chunk: 3 chunks of 12
    np.testing.assert_allclose(_answer("kmeans", "dir", value, "forward"), expected, rtol=1e-12)


def test_a_replayed_vjp_gives_reverse_mode_s_pullback_bit_for_bit():
    from adcompare.gradbench.inputs import replayed_vjp

    def f(x):
        return ad.sin(x) * x, ad.exp(x[:-1]) * 3.0

    cache, rng = {}, np.random.default_rng(5)
    for _ in range(2):  # recorded once, replayed at a new x
        x = rng.normal(size=6)
        outputs, pullback = replayed_vjp(cache, 6, f, x)
        expected, eager = ad.vjp(f, x)
        bars = (rng.normal(size=6), rng.normal(size=5))
        assert [y.tobytes() for y in outputs] == [y.tobytes() for y in expected]
        gradient = pullback(*bars)
        assert gradient.tobytes() == eager(bars)[0].tobytes()
        # by hand: (sin x + x cos x)·b₁ + 3 eˣ·b₂ on the first five
        by_hand = (np.sin(x) + x * np.cos(x)) * bars[0]
        by_hand[:-1] += 3.0 * np.exp(x[:-1]) * bars[1]
        np.testing.assert_allclose(gradient, by_hand, rtol=1e-14)
        with pytest.raises(RuntimeError, match="finished already"):
            pullback(*bars)  # the kept values are freed: one pullback per call
    assert cache[6].recordings == 1
