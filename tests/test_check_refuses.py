"""The checkers never pass what they did not check.

A tolerance that is NaN, infinite or negative would make every comparison
pass (or none); a function that returns ``None``, an argument or output with
no elements, or an empty list of modes leaves nothing to compare. Each is
refused with a sentence saying what to do, never reported as passed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import adcompare as ad
from adcompare.check import check_grad, compare
from adcompare.cli import main
from adcompare.testing import assert_grad_close


def square_sum(x):
    return ad.sum(x * x)


def forgets_return(x):
    ad.sum(ad.sin(x))


def empty_output(x):
    return x[0:0]


X = np.array([0.5, 1.0])
BAD_TOLERANCES = [math.nan, math.inf, -math.inf, -1e-8]

CHECKERS = {
    "check_grad": check_grad,
    "compare": compare,
    "assert_grad_close": assert_grad_close,
}


# --- tolerances ---------------------------------------------------------------------------------


def test_a_nan_tolerance_would_pass_a_wrong_derivative():
    # Why NaN must be refused: |a - b| <= atol + nan * scale is False, so the
    # test "fails if greater" never fires. Finite differences differ from the
    # exact gradient by about 1e-10 here, so rtol=0 fails and rtol=nan must not pass.
    assert not check_grad(ad.sin, 0.7, modes=("fd",), rtol=0.0).passed
    with pytest.raises(ValueError, match="rtol"):
        check_grad(ad.sin, 0.7, modes=("fd",), rtol=math.nan)


@pytest.mark.parametrize("name", ["rtol", "atol"])
@pytest.mark.parametrize("bad", BAD_TOLERANCES, ids=str)
@pytest.mark.parametrize("checker", list(CHECKERS))
def test_a_tolerance_that_is_not_finite_and_non_negative_is_refused(checker, bad, name):
    with pytest.raises(ValueError, match=rf"{name} must be a finite number >= 0") as caught:
        CHECKERS[checker](square_sum, X, **{name: bad})
    assert checker in str(caught.value)


@pytest.mark.parametrize("checker", list(CHECKERS))
def test_a_tolerance_that_is_not_a_number_is_refused(checker):
    with pytest.raises(ValueError, match="rtol must be a finite number"):
        CHECKERS[checker](square_sum, X, rtol="1e-6")


def test_zero_tolerances_are_allowed():
    # Exact arithmetic: 2x in every mode, and SymPy's 2x.
    report = check_grad(square_sum, X, rtol=0.0, atol=0.0)
    assert report.passed
    np.testing.assert_array_equal(report["reverse"].derivative[0], 2 * X)


@pytest.mark.parametrize("flag", ["--rtol", "--atol"])
@pytest.mark.parametrize("bad", ["nan", "inf", "-1"])
def test_verify_refuses_a_bad_tolerance_in_one_line(capsys, flag, bad):
    status = main(["verify", "x**2", "--at", "x=1", f"{flag}={bad}"])
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"{flag} must be a finite number >= 0" in lines[0]


# --- nothing to compare -------------------------------------------------------------------------


@pytest.mark.parametrize("checker", list(CHECKERS))
def test_a_function_that_returns_none_is_refused(checker):
    with pytest.raises(TypeError, match=r"returned None.*return"):
        CHECKERS[checker](forgets_return, X)


@pytest.mark.parametrize("against", ["symbolic", "fd", "complex_step", "forward"])
def test_a_function_that_returns_none_is_refused_whatever_the_reference(against):
    with pytest.raises(TypeError, match="returned None"):
        check_grad(forgets_return, X, against=against)


@pytest.mark.parametrize("checker", list(CHECKERS))
def test_an_argument_with_no_elements_is_refused(checker):
    with pytest.raises(ValueError, match="no derivative entry to compare"):
        CHECKERS[checker](ad.sum, np.zeros(0))


@pytest.mark.parametrize("checker", list(CHECKERS))
def test_an_output_with_no_elements_is_refused(checker):
    with pytest.raises(ValueError, match="no derivative entry to compare"):
        CHECKERS[checker](empty_output, X)


@pytest.mark.parametrize("checker", list(CHECKERS))
def test_an_empty_list_of_modes_is_refused(checker):
    with pytest.raises(ValueError, match="no modes"):
        CHECKERS[checker](square_sum, X, modes=())


def test_an_output_that_does_not_depend_on_the_input_is_checked():
    # Zero derivatives are entries too: compared, and right.
    report = check_grad(lambda x: ad.sum(x) * 0.0 + 2.0, X)
    assert report.passed
    for result in report.results:
        np.testing.assert_array_equal(result.derivative[0], [0.0, 0.0])


def test_a_report_with_no_results_does_not_pass():
    report = check_grad(square_sum, X)
    report.results = []
    assert not report.passed
    comparison = compare(square_sum, X, modes=("forward",))
    assert comparison.passed
    comparison.rows = []
    assert not comparison.passed
