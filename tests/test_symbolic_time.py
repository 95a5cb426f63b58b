"""Symbolic mode's time is bounded inside a single SymPy call, not only between calls.

A recurrence ``v = sin(v)*v + 1/2`` doubles its written-out size at each
step, so SymPy's differentiation and printing of 20 steps take minutes. With
the size limits raised out of the way, ``LIMITS.max_seconds`` alone must stop
them. Each such test runs under a timer of its own (``backstop``) that rings
after 60 s: code that does not interrupt SymPy fails then instead of hanging,
and code that does must put that timer and its handler back.
"""

from __future__ import annotations

import functools
import importlib
import signal
import threading
import time

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare import symbolic
from adcompare.symbolic import ExpressionTooLargeError

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "setitimer"), reason="interval timers need POSIX signals"
)

#: Size limits raised so far that only the time limit can stop the work.
UNBOUNDED_SIZES = {
    "max_expression_size": 10**15,
    "max_derivative_size": 10**18,
    "max_printed_size": 10**15,
}
BACKSTOP_SECONDS = 60.0


class NotInterruptedError(Exception):
    """The backstop rang: nothing stopped SymPy within its time."""


@pytest.fixture
def backstop():
    def ring(signum, frame):
        raise NotInterruptedError(f"SymPy was not interrupted within {BACKSTOP_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, BACKSTOP_SECONDS)
    try:
        yield ring
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_backstop_restored(ring) -> None:
    assert signal.getsignal(signal.SIGALRM) is ring
    left, interval = signal.getitimer(signal.ITIMER_REAL)
    assert 0 < left < BACKSTOP_SECONDS and interval == 0


def recurrence(v, steps=20):
    for _ in range(steps):
        v = ad.sin(v) * v + 0.5
    return v


def traced_recurrence():
    """The recurrence's trace (cached), recorded before a test tightens the time limit, so
    that the limit meets differentiating or printing, not tracing."""
    with symbolic.size_limit(**UNBOUNDED_SIZES):
        return symbolic.record(recurrence, 0.3)


def sympy_recurrence(x, steps=20):
    v = x
    for _ in range(steps):
        v = sympy.sin(v) * v + sympy.Rational(1, 2)
    return v


def test_a_derivative_over_the_time_limit_stops_inside_sympy_and_restores_the_timer(backstop):
    traced_recurrence()
    with (
        symbolic.size_limit(**UNBOUNDED_SIZES, max_seconds=0.2),
        pytest.raises(
            ExpressionTooLargeError,
            match=r"differentiating took over 0\.2 s, the limit adcompare\.symbolic\.LIMITS\."
            r"max_seconds; raise it with `with adcompare\.symbolic\.size_limit\(max_seconds",
        ),
    ):
        # One input and one output: one derivative entry, so no check between entries
        # can stop it; only an interrupted SymPy call can.
        symbolic.gradient(recurrence)(0.3)
    assert_backstop_restored(backstop)


def test_one_sympy_diff_call_is_interrupted(backstop):
    deadline = importlib.import_module("adcompare.symbolic.deadline").deadline
    x = sympy.Symbol("x")
    huge = sympy_recurrence(x)
    with (
        symbolic.size_limit(max_seconds=0.2),
        pytest.raises(ExpressionTooLargeError, match=r"differentiating took over 0\.2 s"),
        deadline("differentiating"),
    ):
        sympy.diff(huge, x)
    assert_backstop_restored(backstop)


def test_printing_a_formula_over_the_time_limit_is_stopped(backstop):
    traced = traced_recurrence()
    with (
        symbolic.size_limit(**UNBOUNDED_SIZES, max_seconds=0.2),
        pytest.raises(ExpressionTooLargeError, match=r"printing a formula took over 0\.2 s"),
    ):
        symbolic.formula(traced.expressions)
    assert_backstop_restored(backstop)


def test_check_grad_falls_back_to_finite_differences_when_sympy_runs_out_of_time(backstop):
    traced_recurrence()
    with symbolic.size_limit(**UNBOUNDED_SIZES, max_seconds=0.2):
        report = ad.check_grad(recurrence, 0.3)
    assert report.passed and report.against == "fd"
    assert "took over 0.2 s" in report.note and "max_seconds" in report.note
    assert_backstop_restored(backstop)


def test_without_a_previous_timer_none_is_left_armed():
    handler = signal.getsignal(signal.SIGALRM)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    traced_recurrence()
    with (
        symbolic.size_limit(**UNBOUNDED_SIZES, max_seconds=0.2),
        pytest.raises(ExpressionTooLargeError, match=r"differentiating took over 0\.2 s"),
    ):
        symbolic.gradient(recurrence)(0.3)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is handler


def test_under_the_timer_derivatives_are_sympys_exact_ones():
    deadline = importlib.import_module("adcompare.symbolic.deadline").deadline
    f = functools.partial(recurrence, steps=3)
    v = sympy.Symbol("v", real=True)  # the symbol record names after f's parameter
    exact = sympy.diff(sympy_recurrence(v, steps=3), v)
    with symbolic.size_limit(max_seconds=30), deadline("differentiating"):
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 30  # the mechanism is armed while SymPy works
        assert sympy.diff(sympy_recurrence(v, steps=3), v) == exact
    symbolic.clear_cache(f)
    with symbolic.size_limit(max_seconds=30):
        traced = symbolic.record(f, 0.3)
        assert sympy.simplify(traced.gradient_expressions(0) - exact) == 0
        gradient = symbolic.gradient(f)(0.3)
    assert gradient == pytest.approx(float(exact.subs(v, 0.3)), rel=1e-14)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_enclosing_deadline_that_rings_first_is_left_to_ring():
    deadline = importlib.import_module("adcompare.symbolic.deadline").deadline
    with (
        symbolic.size_limit(max_seconds=0.2),
        pytest.raises(ExpressionTooLargeError, match="outer work took over"),
        deadline("outer work"),
        deadline("inner work"),
    ):
        time.sleep(BACKSTOP_SECONDS)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_other_threads_are_bounded_between_entries_and_arm_no_timer():
    outcome = {}

    def work():
        with symbolic.size_limit(max_seconds=1e-9):
            try:
                symbolic.jacobian(lambda x: ad.sin(x) * x)(np.array([0.1, 0.2, 0.3]))
            except ExpressionTooLargeError as error:
                outcome["error"] = str(error)
        outcome["exact"] = symbolic.gradient(lambda x: ad.sum(x**3))(np.array([1.0, 2.0]))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert "took over 1e-09 s" in outcome["error"]
    np.testing.assert_array_equal(outcome["exact"], [3.0, 12.0])
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_compare_gives_up_on_sympy_within_its_budget_and_says_so(backstop):
    traced_recurrence()
    with symbolic.size_limit(**UNBOUNDED_SIZES):
        result = ad.compare(recurrence, 0.3, symbolic_seconds=0.2)
    assert result.reference == "fd" and result.passed
    assert "symbolic reference skipped: gave up after 0.2 s; pass symbolic_seconds=60" in (
        result.note
    )
    assert result["symbolic"].passed is None and "SymbolicTimeoutError" in result["symbolic"].error
    assert result.note in str(result) and "rel err vs fd" in str(result)
    # The forward and reverse derivatives are judged against central differences.
    assert result["forward"].passed and result["reverse"].passed
    np.testing.assert_allclose(
        result["reverse"].derivative[0], result["fd"].derivative[0], rtol=1e-6
    )
    assert_backstop_restored(backstop)


def test_compare_against_sympy_alone_fails_when_it_gives_up(backstop):
    traced_recurrence()
    with symbolic.size_limit(**UNBOUNDED_SIZES):
        result = ad.compare(recurrence, 0.3, against="symbolic", symbolic_seconds=0.2)
    assert not result.passed and result.reference is None
    assert result.reference_error.startswith("gave up after 0.2 s; pass symbolic_seconds=60")
    assert "no symbolic reference: gave up" in str(result)
    assert_backstop_restored(backstop)


def test_compare_against_fd_runs_no_sympy(backstop):
    # Unbounded, SymPy would take minutes on this recurrence; against="fd" never starts it.
    with symbolic.size_limit(**UNBOUNDED_SIZES):
        result = ad.compare(recurrence, 0.3, against="fd")
    assert [r.mode for r in result.rows] == ["forward", "reverse", "fd"]
    assert result.reference == "fd" and result.passed and result.note == ""
    assert_backstop_restored(backstop)
