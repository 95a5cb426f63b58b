"""Gradient checking: references, reports, tolerances, and the checker caught lying."""

from __future__ import annotations

import json

import numpy as np
import pytest

import adcompare as ad
from adcompare.check import (
    NotComplexSafeError,
    check_grad,
    compare,
    complex_step,
    default_tolerance,
    finite_differences,
    relative_error,
)
from adcompare.ops import OPS, defop
from adcompare.testing import assert_grad_close

WORKED = lambda x, y: 3 * x**2 + x * y + 5 * y**2


def mlp_loss(w, b, x):
    return ad.mean(ad.softplus(ad.tanh(x @ w + b) @ np.array([1.0, -2.0])))


# Small: SymPy's Hessian of this loss takes seconds at 8 inputs, minutes at 30.
RNG = np.random.default_rng(0)
W, B, X = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal((4, 3))


# --- numeric references -----------------------------------------------------------------


def test_finite_differences_are_accurate_to_about_1e_9():
    x = np.array([0.3, -1.2, 2.0])
    g = finite_differences(lambda x: ad.sum(ad.sin(x) * x))(x)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-9)


def test_finite_difference_step_scales_with_x():
    # A fixed step of 1e-5 would be lost in rounding at 1e8.
    g = finite_differences(lambda x: x**2)(1e8)
    assert abs(g - 2e8) / 2e8 < 1e-8


def test_finite_differences_give_jacobians_and_hessians():
    f = lambda x, y: ad.sum(ad.exp(x) * y)
    x, y = np.array([0.1, 0.2]), np.array([1.5, -0.5])
    jx, jy = finite_differences(lambda x, y: ad.exp(x) * y, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, np.diag(np.exp(x) * y), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(jy, np.diag(np.exp(x)), rtol=1e-8, atol=1e-10)
    hxx, hxy = finite_differences(f, argnums=(0, 1), order=2)(x, y)[0]
    np.testing.assert_allclose(hxx, np.diag(np.exp(x) * y), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hxy, np.diag(np.exp(x)), rtol=1e-5, atol=1e-7)


def test_complex_step_is_exact_to_rounding():
    x = np.array([0.3, -1.2, 2.0])
    g = complex_step(lambda x: ad.sum(ad.tanh(x) * ad.exp(x)))(x)
    exact = (1 - np.tanh(x) ** 2) * np.exp(x) + np.tanh(x) * np.exp(x)
    np.testing.assert_allclose(g, exact, rtol=1e-15)
    h = complex_step(lambda x: ad.sum(ad.sin(x) ** 2), order=2)(x)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(2 * x)), rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize(
    "f",
    [lambda x: ad.sum(ad.abs(x)), lambda x: ad.max(x), lambda x: ad.sum(ad.maximum(x, 0.1))],
    ids=["abs", "max", "maximum"],
)
def test_complex_step_refuses_functions_that_are_not_complex_safe(f):
    with pytest.raises(NotComplexSafeError, match="not complex-safe"):
        complex_step(f)(np.array([0.5, -0.5]))


def test_complex_step_refuses_functions_that_drop_the_imaginary_part():
    with pytest.raises(NotComplexSafeError, match="dropped"):
        complex_step(lambda x: np.real(x) * 2)(1.0)


# --- the error measure and tolerances -----------------------------------------------------


def test_relative_error_is_adbench_rho():
    assert relative_error(1.0, 1.5) == pytest.approx(0.2)
    assert relative_error(0.0, 1e-9) == pytest.approx(1e-9)  # absolute for small entries
    assert relative_error(1e6, 1e6 + 1) == pytest.approx(5e-7)  # relative for large ones
    assert relative_error(np.inf, np.inf) == 0 and relative_error(np.nan, np.nan) == 0
    assert relative_error(np.inf, 1.0) == np.inf and relative_error(np.nan, 1.0) == np.inf


def test_tolerances_follow_dtype_and_reference():
    assert default_tolerance(np.float64) == 1e-8
    assert default_tolerance(np.float32) == 1e-4
    assert default_tolerance(np.float64, "fd") == 1e-6
    assert default_tolerance(np.float64, "fd", order=2) == 1e-4
    assert default_tolerance(np.float32, "fd") == 1e-4


def test_a_correct_float32_gradient_passes_at_float32_precision():
    args = [a.astype(np.float32) for a in (W, B, X)]
    report = check_grad(mlp_loss, *args, argnums=(0, 1))
    assert report.passed, report
    assert report.rtol == 1e-4 and report.dtype == "float32"
    assert report["reverse"].max_rel_err > 1e-9  # float32 really is less precise...
    assert not check_grad(mlp_loss, *args, argnums=(0, 1), rtol=1e-12).passed  # ...than this


# --- check_grad on correct functions --------------------------------------------------------


@pytest.mark.parametrize("against", ["symbolic", "fd", "complex_step", "reverse"])
def test_correct_gradients_pass_against_every_reference(against):
    f = lambda x, y: ad.sum(ad.tanh(x) * ad.exp(y) + x @ y)
    x, y = np.array([0.1, -0.4, 0.8]), np.array([0.3, 0.2, -0.1])
    report = check_grad(f, x, y, modes=("forward", "reverse", "symbolic"), against=against)
    assert report.passed, report
    assert [r.mode for r in report.results] == ["forward", "reverse", "symbolic"]


@pytest.mark.parametrize(
    "modes",
    [("forward", "reverse"), ("fwd-over-rev", "rev-over-fwd", "fd", "symbolic")],
)
def test_second_derivatives_of_a_small_mlp_loss(modes):
    report = check_grad(mlp_loss, W, B, X, modes=modes, order=2, argnums=(0, 1))
    assert report.passed, report


def test_modes_that_cannot_run_are_reported_with_the_reason():
    # softplus uses abs and maximum, so the complex step does not apply.
    report = check_grad(mlp_loss, W, B, X, modes=("reverse", "complex_step"), argnums=0)
    assert report["reverse"].passed and not report["complex_step"].passed
    # maximum refuses complex input as soon as it meets it.
    assert "not complex-safe (maximum compares complex" in report["complex_step"].error


def test_jacobians_of_array_outputs_are_checked():
    report = check_grad(lambda x: ad.softmax(x) * x[0], np.array([0.2, -0.3, 1.1]))
    assert report.passed, report
    assert report["forward"].worst.startswith("out[")


def test_default_argnums_skip_integer_and_boolean_arguments():
    f = lambda x, index, mask: ad.sum(x[index] * mask)
    report = check_grad(f, np.arange(4.0), np.array([0, 2, 2]), np.array([True, False, True]))
    assert report.passed and report.arguments == ["x: float64 4"]


def test_lists_and_python_numbers_are_accepted():
    assert check_grad(lambda x: ad.sum(x**2), [1.0, 2.0]).passed
    assert check_grad(lambda x: x**3, 2).passed


# --- check_grad catches wrong rules --------------------------------------------------------------


def test_a_wrong_rule_in_both_modes_is_caught_by_the_symbolic_oracle(wrong_op):
    x = np.array([0.3, -1.1, 2.0])
    f = lambda x: ad.sum(wrong_op(x) * x)
    report = check_grad(f, x)
    assert not report.passed
    assert [r.passed for r in report.results] == [False, False]
    exact = np.sin(x) + x * np.cos(x)
    wrong = np.sin(x) + 1.1 * x * np.cos(x)
    worst = int(np.argmax(relative_error(wrong, exact)))
    result = report["reverse"]
    assert result.worst == f"x[{worst}]"
    assert result.got == pytest.approx(wrong[worst]) and result.expected == exact[worst]
    assert result.max_rel_err == pytest.approx(relative_error(wrong, exact).max())
    # The two modes agree with each other: only an independent reference sees the error.
    assert check_grad(f, x, modes=("forward",), against="reverse").passed
    assert not check_grad(f, x, against="fd").passed
    assert not check_grad(f, x, against="complex_step").passed


def test_a_wrong_reverse_rule_is_caught_and_forward_passes(wrong_vjp_op):
    f = lambda x: ad.sum(wrong_vjp_op(x))
    report = check_grad(f, np.array([0.3, 0.5]))
    assert report["forward"].passed and not report["reverse"].passed
    assert not check_grad(f, np.array([0.3, 0.5]), modes=("reverse",), against="forward").passed


def test_wrong_second_derivatives_are_caught(wrong_op):
    f = lambda x: ad.sum(wrong_op(x) * x)
    report = check_grad(f, np.array([0.3, 0.9]), modes=("fwd-over-rev", "rev-over-rev"), order=2)
    assert not any(r.passed for r in report.results)


def test_the_report_prints_a_table_that_locates_the_error(wrong_op):
    # rel err 0.1·|cos x| / max(1, 2.1·|cos x|) is largest at x[1].
    report = check_grad(lambda x: ad.sum(wrong_op(x)), np.array([1.5, 1.2]))
    text = str(report)
    assert "FAILED (2 mode(s))" in text
    for column in ["mode", "max abs err", "max rel err", "worst entry", "got", "expected"]:
        assert column in text
    assert text.count("FAIL") == 3 and "x[1]" in text
    data = json.loads(report.to_json())
    assert data["passed"] is False and data["results"][0]["worst"] == "x[1]"
    assert not report


def test_assert_grad_close_raises_with_the_table(wrong_op):
    with pytest.raises(AssertionError, match=r"(?s)FAILED.*worst entry.*x\[1\]"):
        assert_grad_close(lambda x: ad.sum(wrong_op(x)), np.array([1.5, 1.2]))
    report = assert_grad_close(lambda x: ad.sum(ad.sin(x)), np.array([0.1, 0.2]))
    assert report.passed


def test_a_mode_that_raises_is_a_failure_not_a_crash():
    report = check_grad(lambda x: x * x, 2.0, modes=("reverse", "no-such-mode"))
    assert report["reverse"].passed
    bad = report["no-such-mode"]
    assert not bad.passed and "unknown mode" in bad.error
    assert "FAIL: ValueError" in str(report)


def test_usage_errors_are_explained():
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        check_grad(WORKED, 2.0, 3.0, order=3)
    with pytest.raises(ValueError, match="scalar output"):
        check_grad(lambda x: x * 2, np.ones(2), order=2)
    with pytest.raises(ValueError, match="second-order mode"):
        check_grad(WORKED, 2.0, 3.0, against="fwd-over-rev")
    with pytest.raises(ValueError, match="no argument to differentiate"):
        check_grad(lambda i: i * 2.0, np.array([1, 2]))


# --- compare --------------------------------------------------------------------------------------


def test_compare_gives_value_derivative_error_time_and_ops_per_mode():
    result = compare(WORKED, 2.0, 3.0)
    assert [r.mode for r in result.rows] == ["symbolic", "forward", "reverse", "fd"]
    for row in result.rows:
        assert float(row.value) == 63.0
        np.testing.assert_allclose([b.item() for b in row.derivative], [15.0, 32.0], rtol=1e-9)
        assert row.passed and row.max_rel_err < 1e-9 and row.seconds > 0
    # Op applications: WORKED uses Python operators on floats, which bypass the op set
    # except where the engines box the values.
    assert result["forward"].ops > 0 and result["reverse"].ops > 0 and result["fd"].ops == 0
    assert result["reverse"].max_rel_err == 0.0
    assert result.passed
    text = str(result)
    assert "rel err vs SymPy" in text and "[15, 32]" not in text  # one block per argument
    assert json.loads(json.dumps(result.as_dict()))["rows"][1]["mode"] == "forward"


def test_compare_second_order_and_mismatches(wrong_op):
    result = compare(lambda x: ad.sum(wrong_op(x) ** 2), np.array([0.2, 0.4]), order=2)
    assert not result.passed
    assert result["symbolic"].passed and not result["reverse"].passed
    assert "MISMATCH" in str(result)


def test_compare_without_a_symbolic_reference_says_why():
    from adcompare import symbolic

    with symbolic.size_limit(max_inputs=2):
        result = compare(lambda x: ad.sum(x**2), np.ones(3), modes=("forward", "reverse"))
    assert not result.passed and "input elements exceed" in result.reference_error
    assert "no symbolic reference" in str(result)


@pytest.fixture
def user_op_without_sym():
    """A user's op with no SymPy counterpart: x³, with a right JVP and a VJP off by 10%."""
    fn = defop(
        "user_cube",
        lambda x: x**3,
        elementwise=True,
        saves=("args",),
        jvp=lambda out, x, x_dot: 3 * x * x * x_dot,
        vjp=lambda out, x, out_bar: out_bar * 3.3 * x * x,
    )
    yield fn
    del OPS["user_cube"]


def test_an_op_without_sympy_is_checked_against_the_other_references(user_op_without_sym):
    x = np.array([0.5, -2.0])
    report = ad.check_grad(lambda v: ad.sum(user_op_without_sym(v)), x)
    # The op declares no complex support either, so the complex step gives way to fd.
    assert report.against == "fd"
    assert "op 'user_cube' has no SymPy counterpart" in str(report)
    assert "checked against fd instead" in report.note
    np.testing.assert_allclose(report.reference[0], 3 * x**2, rtol=1e-7)  # d(x³) = 3x²
    assert report["forward"].passed and not report["reverse"].passed  # the 3.3x² VJP is caught


def test_asking_sympy_for_an_op_without_it_says_so(user_op_without_sym):
    with pytest.raises(TypeError, match=r"op 'user_cube' has no SymPy counterpart.*'fd'"):
        ad.check_grad(lambda v: ad.sum(user_op_without_sym(v)), [1.0], against="symbolic")


def test_compare_times_a_slow_mode_by_its_first_call_alone(monkeypatch):
    import adcompare.check.comparison as check_module

    calls = {"n": 0}

    def f(x):
        calls["n"] += 1
        return ad.sum(x * x)

    x = np.arange(3.0)
    ad.compare(f, x, modes=("reverse",), repeat=3)
    with_repeats = calls["n"]
    calls["n"] = 0
    monkeypatch.setattr(check_module, "TIMING_BUDGET", 0.0)  # every mode counts as slow
    ad.compare(f, x, modes=("reverse",), repeat=3)
    assert with_repeats - calls["n"] == 3  # the three timed repeats are skipped


def test_compare_against_a_chain_of_references(user_op_without_sym):
    x = np.array([0.5, -2.0])

    def f(v):
        return ad.sum(user_op_without_sym(v))

    # SymPy cannot, the complex step cannot (no complex support): fd, the third, is used.
    result = compare(f, x, modes=("forward",), against=("symbolic", "complex-step", "fd"))
    assert result.reference == "fd" and result.passed
    assert "symbolic reference skipped: NoSymbolicCounterpartError" in result.note
    assert "complex_step reference skipped" in result.note
    np.testing.assert_allclose(result["forward"].derivative[0], 3 * x**2, rtol=1e-12)


def test_compare_refuses_an_unknown_reference():
    with pytest.raises(ValueError, match=r"unknown reference 'sympy' in against=; use one of"):
        compare(lambda x: x * x, 2.0, against="sympy")


def test_compare_catches_a_wrong_rule_against_finite_differences(user_op_without_sym):
    result = compare(lambda v: ad.sum(user_op_without_sym(v)), [0.5, -2.0], against="fd")
    assert result.reference == "fd" and not result.passed
    assert result["forward"].passed and result["reverse"].passed is False  # the 3.3x² VJP
