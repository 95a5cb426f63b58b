"""custom_jvp and custom_vjp: users' own derivative rules, checked like the op set's."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad


def make_log1pexp():
    @ad.custom_jvp
    def log1pexp(x):
        return ad.log(1.0 + ad.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return log1pexp(x), (1.0 - 1.0 / (1.0 + ad.exp(x))) * x_dot

    return log1pexp


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_safe_log1pexp(mode):
    """JAX's example: the naive derivative is inf/inf at x = 1000, the rule gives 1."""
    naive = ad.grad(lambda x: ad.log(1.0 + ad.exp(x)), mode=mode)
    safe = ad.grad(make_log1pexp(), mode=mode)
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(naive(1000.0))
        assert float(safe(1000.0)) == 1.0
    x = np.linspace(-3, 3, 7)
    np.testing.assert_allclose(
        ad.vmap(safe)(x), 1 / (1 + np.exp(-x)), rtol=1e-14
    )  # the sigmoid, elsewhere


def two_argument_rule():
    @ad.custom_jvp
    def f(x, y):
        return ad.sin(x) * y

    f.defjvp(lambda p, t: (f(*p), ad.cos(p[0]) * p[1] * t[0] + ad.sin(p[0]) * t[1]))
    return f


def test_both_modes_agree_with_a_jvp_rule_and_with_sympy():
    f = two_argument_rule()
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.4, -0.7])
    loss = lambda x, y: ad.sum(f(x, y) ** 2)
    assert ad.check_grad(loss, x, y).passed
    assert ad.check_grad(loss, x, y, against="fd").passed
    assert ad.check_grad(loss, x, y, order=2, modes=("fwd-over-rev", "rev-over-rev")).passed
    # The dot-product test between the rule and its transpose: <u, J v> = <J^T u, v>.
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal(3), rng.standard_normal(3)
    jv = ad.jvp(lambda x: f(x, y), (x,), (v,))[1]
    jtu = ad.vjp(lambda x: f(x, y), x)[1](u)[0]
    np.testing.assert_allclose(np.dot(u, jv), np.dot(jtu, v), rtol=1e-13)


def test_a_custom_vjp_rule_and_a_jvp_rule_given_together_agree():
    @ad.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (cube(x), x), lambda x, g: (3.0 * x**2 * g,))
    cube.defjvp(lambda p, t: (cube(p[0]), 3.0 * p[0] ** 2 * t[0]))
    x = np.array([0.5, -2.0])
    report = ad.check_grad(lambda x: ad.sum(cube(x) * x), x)
    assert report.passed
    np.testing.assert_allclose(ad.grad(lambda x: ad.sum(cube(x)))(x), 3 * x**2)


def test_custom_vjp_alone_refuses_forward_mode():
    @ad.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (ad.clip(g, -1.0, 1.0),))
    assert float(ad.grad(lambda x: 5.0 * clip_gradient(x))(2.0)) == 1.0
    with pytest.raises(TypeError, match=r"no JVP rule.*defjvp"):
        ad.grad(lambda x: 5.0 * clip_gradient(x), mode="forward")(2.0)


@pytest.mark.parametrize("decorate", [ad.custom_vjp, ad.custom_jvp])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_custom_function_without_any_rule_says_to_give_one(decorate, mode):
    # autograd's test_no_vjp_def: reverse mode crashed on the missing fwd rule.
    double = decorate(lambda x: 2.0 * x)
    with pytest.raises(TypeError, match=r"no derivative rule yet; give one with .*defvjp"):
        ad.grad(double, mode=mode)(1.0)


def test_check_grad_catches_a_wrong_custom_rule():
    @ad.custom_jvp
    def cube(x):
        return x**3

    cube.defjvp(lambda p, t: (cube(p[0]), 2.0 * p[0] ** 2 * t[0]))  # wrong: 3x²
    for against in ("symbolic", "fd"):
        report = ad.check_grad(lambda x: ad.sum(cube(x)), np.array([0.5, 1.5]), against=against)
        assert not report.passed


def test_custom_rules_compose_with_hessian_and_vmap():
    f = two_argument_rule()
    y = np.array([1.5, 0.4])
    h = ad.hessian(lambda x: ad.sum(f(x, y)))(np.array([0.3, 1.0]))
    np.testing.assert_allclose(h, np.diag(-np.sin([0.3, 1.0]) * y), atol=1e-15)
    xs = np.array([[0.3, 1.0], [0.1, -0.5]])
    g = ad.vmap(ad.grad(lambda x: ad.sum(f(x, y))))(xs)
    np.testing.assert_allclose(g, np.cos(xs) * y, rtol=1e-14)


def test_bad_bwd_rule_and_keywords_are_refused():
    @ad.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), None), lambda _, g: (g,))
    with pytest.raises(TypeError, match="one cotangent per argument"):
        ad.grad(f)(1.0, 2.0)
    with pytest.raises(TypeError, match="positional arrays only"):
        f(1.0, y=2.0)


#: Output trees a rule's function may return, as JAX's custom rules take them.
OUTPUT_TREES = {
    "tuple": lambda a, b: (a, b),
    "dict": lambda a, b: {"a": a, "b": b},
    "nested": lambda a, b: (a, {"b": [b]}),
}


def _tree_leaves(tree):
    return ad.pytree.tree_leaves(tree)


@pytest.mark.parametrize("tree", sorted(OUTPUT_TREES))
@pytest.mark.parametrize("rule", ["vjp", "jvp"])
def test_a_custom_rule_may_return_a_tree_of_outputs(tree, rule):
    """f(x) = (sin x, x^2) in a tuple, a dict or nested: the rule sees the same tree."""
    build = OUTPUT_TREES[tree]

    def plain(x):
        return build(ad.sin(x), x * x)

    fun = (ad.custom_vjp if rule == "vjp" else ad.custom_jvp)(plain)
    if rule == "vjp":
        fun.defvjp(
            lambda x: (fun(x), x),
            lambda x, g: (_tree_leaves(g)[0] * ad.cos(x) + _tree_leaves(g)[1] * 2.0 * x,),
        )
    else:
        fun.defjvp(lambda p, t: (fun(p[0]), build(ad.cos(p[0]) * t[0], 2.0 * p[0] * t[0])))
    x = np.array([0.3, -1.2, 2.0])
    out = fun(x)
    assert ad.pytree.tree_structure(out) == ad.pytree.tree_structure(plain(x))
    loss = lambda v: ad.sum(_tree_leaves(fun(v))[0] * _tree_leaves(fun(v))[1])
    # d/dx sum(sin(x) x^2) = cos(x) x^2 + 2 x sin(x)
    want = np.cos(x) * x**2 + 2 * x * np.sin(x)
    modes = ["reverse"] if rule == "vjp" else ["reverse", "forward"]
    for mode in modes:
        np.testing.assert_allclose(ad.grad(loss, mode=mode)(x), want, rtol=1e-14)
    batched = ad.vmap(ad.grad(loss))(np.stack([x, 2 * x]))
    np.testing.assert_allclose(batched[1], ad.grad(loss)(2 * x), rtol=1e-14)
