"""The problem registry: sizes, one definition for every namespace, the modes agree."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare import adbench
from adcompare.bench.harness.measure import check_derivative
from adcompare.bench.harness.modes import MODES, as_matrix, get_mode
from adcompare.bench.problems import FAMILIES, PROBLEMS, default_problems, get_problem
from adcompare.check import finite_differences
from adcompare.symbolic import SymbolicSizeError

SMALL = {"n": 6, "m": 5}
# The opt-in LSTM takes seconds a gradient: tests/test_adbench_references.py covers it.
DEFAULT = [PROBLEMS[name] for name in default_problems()]


def small(problem):
    return problem.build(**{k: SMALL[k] for k in problem.sweeps})


@pytest.mark.parametrize("problem", DEFAULT, ids=lambda p: p.name)
def test_input_and_output_counts_match_the_family(problem):
    instance = small(problem)
    assert problem.family in FAMILIES
    assert instance.x.shape == (instance.n,)
    if problem.family == "many-inputs":
        assert instance.m == 1 and instance.n >= 2
    elif problem.family == "one-input":
        assert instance.n == 1 and instance.m >= 4
    elif problem.family == "fixed":
        assert instance.size == {} and instance.n == adbench.bundled(problem.name).n_params
    else:
        assert (instance.n, instance.m) == (SMALL["n"], SMALL["m"])
    assert problem.description


@pytest.mark.parametrize("problem", DEFAULT, ids=lambda p: p.name)
def test_one_definition_runs_on_numpy_and_on_the_engines(problem):
    instance = small(problem)
    plain = np.asarray(instance.on(np)(instance.x))
    traced = instance.on(ad)(ad.Tensor(instance.x))
    np.testing.assert_allclose(np.asarray(traced.detach()._data), plain, rtol=1e-12)
    dual = instance.on(ad)(ad.Dual(instance.x, np.ones_like(instance.x)))
    np.testing.assert_allclose(np.asarray(dual.primal), plain, rtol=1e-12)


@pytest.mark.parametrize("problem", DEFAULT, ids=lambda p: p.name)
def test_the_same_size_builds_the_same_function(problem):
    first, second = small(problem), small(problem)
    np.testing.assert_array_equal(first.x, second.x)
    np.testing.assert_array_equal(first.on(np)(first.x), second.on(np)(second.x))


#: The elimination orders that search the graph at every step (each takes 3-10 s on the
#: thousands of vertices of a real problem's graph); forward and reverse order still run.
HEURISTIC_ELIMINATIONS = {
    f"eliminate:{order}" for order in ("markowitz", "reverse-markowitz", "min-fill", "optimal")
}


@pytest.mark.parametrize("problem", DEFAULT, ids=lambda p: p.name)
def test_every_derivative_mode_gives_the_same_jacobian(problem):
    instance = small(problem)
    reference = as_matrix(get_mode("reverse").prepare(instance)(), instance)
    for mode in MODES.values():
        if mode.order != 1 or mode.unavailable(instance):
            continue
        if instance.family == "fixed" and mode.name in HEURISTIC_ELIMINATIONS:
            continue  # minutes on the real problems' graphs; every order runs on the others
        try:
            jacobian = mode.prepare(instance)()
        except SymbolicSizeError:
            continue  # SymPy refuses this instance as too large: documented, tested elsewhere
        tolerance = 1e-6 if mode.name == "fd" else 1e-10
        np.testing.assert_allclose(
            as_matrix(jacobian, instance),
            reference,
            rtol=tolerance,
            atol=tolerance,
            err_msg=f"{problem.name}: {mode.name} disagrees with reverse mode",
        )
        assert check_derivative(instance, mode, jacobian)["ok"]


def test_a_wrong_derivative_fails_its_check():
    instance = get_problem("rosenbrock").build(n=4)
    mode = get_mode("forward")
    check = check_derivative(instance, mode, np.zeros(4))
    assert not check["ok"] and check["error"] >= 0.5
    assert "reverse" in check["against"]


def test_central_differences_take_two_evaluations_per_input():
    calls = []

    def f(x):
        calls.append(x)
        return np.stack([x[0] * x[1], np.sin(x[1])])

    jacobian = finite_differences(f)(np.array([2.0, 0.5]))
    assert len(calls) == 4
    np.testing.assert_allclose(jacobian, [[0.5, 2.0], [0.0, np.cos(0.5)]], rtol=1e-8)


def test_unknown_names_and_wrong_sizes_say_what_exists():
    with pytest.raises(ValueError, match="rosenbrock"):
        get_problem("nope")
    with pytest.raises(ValueError, match="reverse"):
        get_mode("sideways")
    with pytest.raises(ValueError, match="sized by n, m"):
        get_problem("tanh_map").build(n=3)


def test_limits_say_why_a_size_is_too_large():
    assert get_problem("quadratic").too_large({"n": 4096}) is None
    assert "4096" in get_problem("quadratic").too_large({"n": 8192})


def test_symbolic_mode_is_skipped_with_a_reason_when_missing(monkeypatch):
    from adcompare.bench.harness import modes

    monkeypatch.setattr(modes, "symbolic_available", lambda: False)
    instance = get_problem("rosenbrock").build(n=4)
    assert "not installed" in get_mode("symbolic").unavailable(instance)
    monkeypatch.setattr(modes, "symbolic_available", lambda: True)
    assert get_mode("symbolic").unavailable(instance) is None
    big = get_problem("rosenbrock").build(n=1000)
    assert "n·m" in get_mode("symbolic").unavailable(big)


def test_symbolic_mode_is_skipped_where_f_does_too_much_work():
    gmm = get_problem("adbench-gmm-1k").build()
    reason = get_mode("symbolic").unavailable(gmm)
    assert reason is not None and "element work" in reason
    assert get_mode("symbolic").unavailable(get_problem("rosenbrock").build(n=8)) is None
