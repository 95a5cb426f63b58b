"""The symbolic interpreter: every op against SymPy, traces, caching, limits, Hessians.

SymPy's derivative of each op's SymPy counterpart is the independent oracle:
the engines' JVP and VJP rules are never consulted to build it.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare import symbolic
from adcompare.check import relative_error
from adcompare.symbolic import ExpressionTooLargeError, Symbolic, SymbolicSizeError

from .opcases import case_id, draw, op_cases

CASES = list(op_cases())


def positions(op, shapes):
    return tuple(range(len(shapes))) if op.nargs is None else op.differentiable


def as_function(op, params):
    return lambda *args: op.fn(*args, **params)


def assert_close(got, want, tol, what):
    rho = relative_error(got, want)
    assert rho.size == 0 or rho.max() <= tol, (
        f"{what}: max rel err {rho.max():.3g}\n got  {np.asarray(got)}\n want {np.asarray(want)}"
    )


# --- every op in the registry --------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_value_and_first_derivatives_match_sympy(case):
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=21)
    argnums = positions(op, shapes)
    f = as_function(op, params)
    parts = {"": f}
    if np.iscomplexobj(f(*args)):
        # A complex output (the FFTs) is checked as its real and imaginary parts, two real
        # functions that SymPy evaluates; their derivatives pair as Re(ū · J v).
        parts = {
            " (real part)": lambda *a: ad.real(f(*a)),
            " (imaginary part)": lambda *a: ad.imag(f(*a)),
        }
    for part, g in parts.items():
        what = f"{op.name}{part}"
        traced = symbolic.record(g, *args, argnums=argnums)
        assert_close(traced.evaluate("value", args), g(*args), 1e-13, f"{what} value")
        exact = symbolic.jacobian(g, argnums=argnums)(*args)
        forward = ad.jacfwd(g, argnums=argnums)(*args)
        reverse = ad.jacrev(g, argnums=argnums)(*args)
        for i, want in enumerate(exact):
            assert_close(forward[i], want, 1e-12, f"{what}: forward, argument {argnums[i]}")
            assert_close(reverse[i], want, 1e-12, f"{what}: reverse, argument {argnums[i]}")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_second_derivatives_match_sympy(case):
    # Contract the output with fixed weights to get a scalar whose Hessian
    # involves every output element.
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=22)
    weights = np.random.default_rng(23).standard_normal(np.shape(op.fn(*args, **params)))
    complex_output = np.iscomplexobj(op.fn(*args, **params))

    def f(*a):
        total = ad.sum(op.fn(*a, **params) * weights)
        return ad.real(total) if complex_output else total  # grad needs a real output

    argnums = positions(op, shapes)
    exact = symbolic.hessian(f, argnums=argnums)(*args)
    for outer, inner in [(ad.jacfwd, "reverse"), (ad.jacrev, "reverse")]:
        for i, p in enumerate(argnums):
            row = outer(lambda *a, p=p: ad.grad(f, argnums=p, mode=inner)(*a), argnums)(*args)
            for j in range(len(argnums)):
                assert_close(row[j], exact[i][j], 1e-11, f"{op.name}: H[{i}][{j}] {outer.__name__}")


@pytest.mark.parametrize("op", list(ad.OPS.values()), ids=lambda op: op.name)
def test_every_op_record_has_a_sympy_counterpart(op):
    assert callable(op.sym), f"{op.name} has no SymPy counterpart"


# --- conventions at non-smooth points -------------------------------------------------


@pytest.mark.parametrize(
    "f, x",
    [
        (lambda x: ad.abs(x), 0.0),
        (lambda x: ad.maximum(x, 0.0), 0.0),
        (lambda x: ad.minimum(x, 0.0), 0.0),
        (lambda x: ad.clip(x, -0.5, 0.7), -0.5),
        (lambda x: ad.clip(x, -0.5, 0.7), 0.7),
        (lambda x: ad.clip(x, None, 0.7), 2.0),
        (lambda x: ad.relu(x), 0.0),
        (lambda x: ad.softplus(x), 0.0),
        (lambda x: ad.norm(ad.stack([x, 2 * x])), 0.0),
        (lambda x: ad.max(ad.stack([x, 0.0 * x + 1.0])), 1.0),
        (lambda x: ad.where(x > 0, x, -x), 0.0),
    ],
    ids=["abs", "maximum", "minimum", "clip-lo", "clip-hi", "clip-open", "relu", "softplus",
         "norm", "max-tie", "where"],
)  # fmt: skip
def test_subgradient_conventions_match_the_engines(f, x):
    exact = symbolic.gradient(f)(x)
    assert exact == ad.grad(f)(x) == ad.grad(f, mode="forward")(x)


# --- traces ----------------------------------------------------------------------------


def test_scalar_inputs_become_symbols_named_after_parameters():
    expr = symbolic.trace(lambda x, y: 3 * x**2 + x * y + 5 * y**2, 2.0, 3.0)
    x, y = sympy.symbols("x y", real=True)
    assert expr == 3 * x**2 + x * y + 5 * y**2


def test_array_inputs_become_indexed_symbols():
    traced = symbolic.record(lambda v, w: ad.sum(v) + ad.sum(w), np.ones(3), np.ones((2, 2)))
    assert [str(s) for s in traced.symbols[0]] == ["v0", "v1", "v2"]
    assert [str(s) for s in traced.symbols[1].ravel()] == ["w0_0", "w0_1", "w1_0", "w1_1"]
    assert str(traced.expressions) == "v0 + v1 + v2 + w0_0 + w0_1 + w1_0 + w1_1"


def test_symbol_names_never_clash():
    traced = symbolic.record(lambda x, x0: ad.sum(x) * x0, np.ones(2), 1.0)
    names = [str(s) for p in traced.positions for s in traced.symbols[p].ravel()]
    assert len(set(names)) == len(names) == 3
    assert symbolic.gradient(lambda x, x0: ad.sum(x) * x0, argnums=1)(np.ones(2), 1.0) == 2.0


def test_unnamed_arguments_get_positional_names():
    traced = symbolic.record(lambda *a: a[0] * a[1], 1.0, 2.0)
    assert str(traced.expressions) == "arg0*arg1"


def test_trace_returns_arrays_and_tuples_as_sympy():
    expr = symbolic.trace(lambda x: x**2, [1.0, 2.0])
    assert isinstance(expr, sympy.Array) and expr.shape == (2,)
    pair = symbolic.trace(lambda x: (ad.sin(x), x * 2), 1.0)
    assert isinstance(pair, tuple) and str(pair[0]) == "sin(x)"


def test_constants_are_exact_where_they_can_be():
    assert str(symbolic.trace(lambda x: 0.5 * x + 2.0, 1.0)) == "x/2 + 2"
    assert str(symbolic.trace(lambda x: 0.1 * x, 1.0)) == "0.1*x"


def test_integer_and_boolean_arguments_stay_constants():
    f = lambda x, index, mask: ad.sum(x[index] * mask)
    x, index, mask = np.arange(4.0), np.array([0, 2]), np.array([True, False])
    traced = symbolic.record(f, x, index, mask)
    assert traced.positions == (0,)
    assert str(traced.expressions) == "x0"


def test_composites_run_symbolically():
    x = np.array([0.3, -1.2, 0.5])
    for f in [
        lambda x: ad.sum(ad.softmax(x) * np.arange(3.0)),
        lambda x: ad.logsumexp(x),
        lambda x: ad.sum(ad.log_softmax(x) ** 2),
        lambda x: ad.mean(ad.sigmoid(x)),
        lambda x: ad.norm(x) + ad.norm(x, ord=1) + ad.norm(x, ord=np.inf),
        lambda x: ad.sum(ad.outer(x, x)) + ad.dot(x, x),
        lambda x: ad.sum(ad.square(x) + ad.reciprocal(x)),
        lambda x: ad.sum(ad.flatten(ad.stack([x, x]))),
    ]:
        np.testing.assert_allclose(symbolic.gradient(f)(x), ad.grad(f)(x), rtol=1e-12)


def test_numpy_functions_dispatch_on_symbolic_values():
    assert str(symbolic.trace(lambda x: np.sin(x) + np.exp(x), 1.0)) == "exp(x) + sin(x)"
    with pytest.raises(TypeError, match="would drop it"):
        symbolic.trace(lambda x: np.spacing(x), 1.0)


def test_symbolic_values_refuse_to_become_numpy_arrays():
    with pytest.raises(TypeError, match=r"\.expr"):
        symbolic.trace(lambda x: np.asarray(x), 1.0)


# --- point dependence and caching --------------------------------------------------------


def counting(f):
    @functools.wraps(f)
    def counted(*args):
        counted.calls += 1
        return f(*args)

    counted.calls = 0
    return counted


def test_traces_are_cached_per_function_and_shape():
    f = counting(lambda x: ad.sum(ad.sin(x) * x))
    g = symbolic.gradient(f)
    for point in ([0.1, 0.2], [0.5, 0.7], [1.0, -1.0]):
        np.testing.assert_allclose(g(np.array(point)), ad.grad(f)(np.array(point)), rtol=1e-14)
    calls_for_two = f.calls
    g(np.ones(3))
    assert calls_for_two == 1 + 3  # one trace, plus the three engine checks
    assert f.calls == calls_for_two + 1  # a new shape traces again
    assert symbolic.record(f, np.ones(3)) is symbolic.record(f, np.zeros(3))


def test_a_trace_that_reads_values_is_reused_only_at_its_point():
    f = counting(lambda x: ad.relu(x) * x)
    g = symbolic.gradient(f)
    assert g(2.0) == 4.0 and g(-2.0) == 0.0
    assert symbolic.record(f, 2.0).point_dependent
    assert str(symbolic.trace(f, 2.0)) == "x**2" and symbolic.trace(f, -2.0) == 0
    calls = f.calls
    g(2.0)
    assert f.calls == calls


def test_branches_in_python_follow_the_point():
    def f(x):
        return ad.sin(x) if x > 0 else ad.cos(x)

    assert symbolic.gradient(f)(1.0) == pytest.approx(np.cos(1.0), abs=0, rel=1e-15)
    assert symbolic.gradient(f)(-1.0) == pytest.approx(np.sin(1.0), abs=0, rel=1e-15)


def test_constant_arguments_are_part_of_the_cache_key():
    f = lambda x, a: x * a
    g = symbolic.gradient(f)
    assert g(1.0, 2.0) == 2.0 and g(1.0, 5.0) == 5.0


def test_clear_cache_forgets_traces():
    f = counting(lambda x: x * x)
    symbolic.gradient(f)(1.0)
    symbolic.clear_cache(f)
    symbolic.gradient(f)(1.0)
    assert f.calls == 2
    symbolic.clear_cache()


# --- transforms and modes -------------------------------------------------------------------


def test_symbolic_is_a_mode_of_grad_and_jacobian():
    f = lambda x, y: 3 * x**2 + x * y + 5 * y**2
    assert ad.grad(f, argnums=(0, 1), mode="symbolic")(2.0, 3.0) == (15.0, 32.0)
    value, g = ad.value_and_grad(f, mode="symbolic")(2.0, 3.0)
    assert (value, g) == (63.0, 15.0)
    jac = ad.jacobian(lambda x: ad.tanh(x) * x[0], mode="symbolic")(np.array([0.5, 1.0]))
    np.testing.assert_allclose(jac, ad.jacfwd(lambda x: ad.tanh(x) * x[0])(np.array([0.5, 1.0])))


def test_results_keep_the_input_dtype():
    x = np.array([0.5, 1.5], dtype=np.float32)
    assert symbolic.gradient(lambda x: ad.sum(ad.exp(x)))(x).dtype == np.float32
    assert symbolic.hessian(lambda x: ad.sum(ad.exp(x)))(x).dtype == np.float32
    assert symbolic.gradient(lambda x: ad.sum(ad.exp(x)))(x.astype(np.float64)).dtype == np.float64


def test_grad_needs_a_scalar_output():
    with pytest.raises(ValueError, match="jacobian"):
        symbolic.gradient(lambda x: x * 2)(np.ones(2))
    with pytest.raises(TypeError, match="tuple"):
        symbolic.jacobian(lambda x: (x, x))(1.0)


def test_inputs_must_be_plain_real_numbers():
    with pytest.raises(TypeError, match="outside the other transforms"):
        ad.jacfwd(symbolic.gradient(lambda x: x**3))(2.0)
    with pytest.raises(TypeError, match="real inputs"):
        symbolic.gradient(lambda x: x * x)(1.0 + 2.0j)


def test_argnums_errors_name_the_problem():
    with pytest.raises(ValueError, match="argnums=3"):
        symbolic.gradient(lambda x: x, argnums=3)(1.0)


# --- Hessians ------------------------------------------------------------------------------


def test_hessian_of_rosenbrock_matches_the_hand_formula():
    def rosenbrock(v):
        return ad.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1.0 - v[:-1]) ** 2)

    x, y = 1.2, 0.7
    expected = np.array([[1200 * x**2 - 400 * y + 2, -400 * x], [-400 * x, 200.0]])
    np.testing.assert_allclose(symbolic.hessian(rosenbrock)(np.array([x, y])), expected)


def test_hessian_of_a_quadratic_form_is_a_plus_a_transpose():
    a = np.random.default_rng(5).standard_normal((4, 4))
    h = symbolic.hessian(lambda x: x @ (a @ x))(np.ones(4))
    np.testing.assert_allclose(h, a + a.T, rtol=1e-14)


def test_hessian_blocks_for_several_arguments():
    f = lambda w, x: ad.sum(ad.tanh(w @ x))
    w, x = np.random.default_rng(6).standard_normal((2, 3)), np.array([0.5, -0.2, 0.1])
    blocks = symbolic.hessian(f, argnums=(0, 1))(w, x)
    assert [[b.shape for b in row] for row in blocks] == [
        [(2, 3, 2, 3), (2, 3, 3)],
        [(3, 2, 3), (3, 3)],
    ]
    np.testing.assert_allclose(blocks[0][1], np.moveaxis(blocks[1][0], 0, -1), rtol=1e-14)
    for i, p in enumerate((0, 1)):
        row = ad.jacfwd(lambda *a, p=p: ad.grad(f, argnums=p)(*a), (0, 1))(w, x)
        for j in range(2):
            np.testing.assert_allclose(blocks[i][j], row[j], rtol=1e-12, atol=1e-15)


def test_hessian_expressions_are_exact_and_symmetric():
    traced = symbolic.record(lambda x, y: ad.sin(x * y), 1.0, 2.0)
    x, y = sympy.symbols("x y", real=True)
    assert sympy.simplify(traced.hessian_expressions(0, 1) - traced.hessian_expressions(1, 0)) == 0
    assert traced.hessian_expressions(0, 0) == -(y**2) * sympy.sin(x * y)


def test_third_derivatives_by_nesting_symbolic_expressions():
    traced = symbolic.record(lambda x: ad.exp(2 * x) * x, 0.3)
    x = traced.symbols[0][()]
    third = sympy.diff(traced.hessian_expressions(0), x)
    assert sympy.simplify(third - sympy.diff(sympy.exp(2 * x) * x, x, 3)) == 0


def test_hessian_needs_a_scalar_output():
    with pytest.raises(ValueError, match="scalar output"):
        symbolic.hessian(lambda x: x * x)(np.ones(2))


# --- limits --------------------------------------------------------------------------------


def test_too_many_inputs_are_refused_with_advice():
    with pytest.raises(SymbolicSizeError, match=r"101 input elements .*size_limit.*against='fd'"):
        symbolic.gradient(lambda x: ad.sum(x))(np.ones(101))
    with symbolic.size_limit(max_inputs=200):
        assert symbolic.gradient(lambda x: ad.sum(x))(np.ones(101)).shape == (101,)
    assert symbolic.LIMITS.max_inputs == 100


def test_runaway_work_is_refused():
    def loop(x):
        for _ in range(1000):
            x = ad.sin(x)
        return ad.sum(x)

    with symbolic.size_limit(max_work=500), pytest.raises(SymbolicSizeError, match="max_work"):
        symbolic.gradient(loop)(np.ones(2))


def test_large_derivatives_are_refused():
    with symbolic.size_limit(max_entries=10), pytest.raises(SymbolicSizeError, match="Hessian"):
        symbolic.hessian(lambda x: ad.sum(x**3))(np.ones(4))


def recurrence(v, steps=20):
    for _ in range(steps):
        v = ad.sin(v) * v + 0.5
    return v


def test_an_expression_that_doubles_at_each_step_is_refused_as_it_grows():
    # The shared graph grows by three nodes a step; written out, it doubles.
    with symbolic.size_limit(max_expression_size=2000):
        with pytest.raises(ExpressionTooLargeError, match="too large for exact differentiation"):
            symbolic.gradient(recurrence)(0.3)
        assert symbolic.gradient(functools.partial(recurrence, steps=3))(0.3) == pytest.approx(
            ad.grad(functools.partial(recurrence, steps=3))(0.3), rel=1e-12
        )


def test_a_derivative_whose_predicted_work_is_too_large_is_refused_before_it_starts():
    f = lambda v: ad.sum(ad.sin(v) * ad.prod(v))
    with (
        symbolic.size_limit(max_derivative_size=20_000),
        pytest.raises(ExpressionTooLargeError, match=r"predicted work.*against='fd'"),
    ):
        symbolic.hessian(f)(np.linspace(0.5, 1.5, 12))
    with pytest.raises(ExpressionTooLargeError, match="max_expression_size"):
        ad.hessian(f, mode="symbolic")(np.linspace(0.5, 1.5, 100))
    x = np.linspace(0.5, 1.5, 4)
    np.testing.assert_allclose(symbolic.hessian(f)(x), ad.hessian(f)(x), rtol=1e-10)


def test_nesting_deeper_than_sympy_recurses_is_refused_as_too_large():
    def nested(x, y):
        v = x
        for _ in range(60):
            v = ad.sin(x * v + y)
        return v

    with pytest.raises(ExpressionTooLargeError, match="nested more deeply"):
        symbolic.record(nested, 0.5, 0.3).jacobian_array(0)


def test_formulas_print_or_say_how_large_they_are():
    traced = symbolic.record(functools.partial(recurrence, steps=3), 0.3)
    assert symbolic.formula(traced.expressions) == str(traced.expressions)
    assert symbolic.formula(traced.expressions, limit=10).startswith("(a formula of size ")


def test_check_grad_falls_back_to_finite_differences_with_a_note():
    with symbolic.size_limit(max_expression_size=2000):
        report = ad.check_grad(recurrence, 0.3)
        assert report.passed and report.against == "fd"
        assert "checked against fd instead of SymPy" in report.note
        assert "note: checked against fd" in str(report)
        with pytest.raises(ExpressionTooLargeError):
            ad.check_grad(recurrence, 0.3, against="symbolic")
    exact = ad.check_grad(functools.partial(recurrence, steps=3), 0.3)
    assert exact.against == "symbolic" and exact.note == ""


def test_size_limit_rejects_unknown_names():
    with pytest.raises(TypeError, match="max_inputs"), symbolic.size_limit(max_input=3):
        pass


# --- the box --------------------------------------------------------------------------------


def test_symbolic_box_reports_shape_and_expression():
    seen = {}

    def f(w):
        seen["w"] = w
        return ad.sum(w)

    symbolic.trace(f, np.ones((2, 3)))
    w = seen["w"]
    assert isinstance(w, Symbolic) and w.shape == (2, 3) and w.ndim == 2 and w.size == 6
    assert w.dtype == np.float64
    assert repr(w).startswith("Symbolic([[w0_0")


def test_deep_expressions_compile_without_recursion():
    def chain(x):
        for _ in range(3000):
            x = x * 1.0001 + 0.001
        return x

    with symbolic.size_limit(max_work=10**6):
        np.testing.assert_allclose(symbolic.gradient(chain)(0.5), 1.0001**3000, rtol=1e-10)


def test_engines_run_inside_a_symbolic_trace():
    # The engines' rules applied to symbols: the formula reverse mode computes.
    g = lambda y: ad.sum(ad.sin(y) * y)
    x = np.array([0.3, 0.7])
    assert str(symbolic.trace(lambda x: ad.grad(g)(x), x)) == (
        "[x0*cos(x0) + sin(x0), x1*cos(x1) + sin(x1)]"
    )
    f = lambda x: ad.sum(ad.grad(g)(x) * x)
    np.testing.assert_allclose(symbolic.gradient(f)(x), ad.grad(f)(x), rtol=1e-14)


def test_complex_constants_in_branches_not_taken_stay_out_of_real_results():
    # SymPy pushes sqrt into clip's Piecewise: its branch x < -1/2 holds sqrt(-1/2) = I/sqrt(2).
    f = lambda x: ad.sqrt(ad.clip(x, -0.5, 0.7))
    assert "I" in str(symbolic.trace(f, 0.3))
    assert symbolic.gradient(f)(0.3) == pytest.approx(0.5 / np.sqrt(0.3), rel=1e-15)


def test_names_after_a_digit_are_separated():
    traced = symbolic.record(lambda *a: ad.sum(a[0]) * a[1], np.ones(2), 1.0)
    assert str(traced.expressions) == "arg1*(arg0_0 + arg0_1)"


def test_untaken_complex_branches_do_not_leak_into_later_functions():
    f = lambda x: ad.erf(ad.sqrt(ad.clip(x, -0.5, 0.7)))
    expected = 2 / np.sqrt(np.pi) * np.exp(-0.3) * 0.5 / np.sqrt(0.3)
    assert symbolic.gradient(f)(0.3) == pytest.approx(expected, rel=1e-14)
