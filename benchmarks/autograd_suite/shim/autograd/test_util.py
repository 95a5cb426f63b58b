"""autograd's ``check_grads``: adcompare's derivatives, by both modes, against
central differences, with the dot-product test ⟨ū, J v⟩ on random directions."""

from itertools import product

from autograd.operators import make_jvp, make_vjp
from autograd.vspace import vspace
from autograd.wrap_util import get_name, unary_to_nary

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    """Whether two numbers agree to autograd's tolerances."""
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def make_numerical_jvp(f, x):
    """``v -> (f(x + εv/2) − f(x − εv/2)) / ε``."""
    y_space, x_space = vspace(f(x)), vspace(x)

    def jvp(v):
        plus = f(x_space.add(x, x_space.scalar_mul(v, EPS / 2)))
        minus = f(x_space.add(x, x_space.scalar_mul(v, -EPS / 2)))
        return y_space.scalar_mul(y_space.add(plus, y_space.scalar_mul(minus, -1.0)), 1 / EPS)

    return jvp


def check_vjp(f, x):
    """⟨J v, u⟩ by adcompare's VJP against central differences."""
    vjp, y = make_vjp(f)(x)
    x_space, y_space = vspace(x), vspace(y)
    x_v, y_v = x_space.randn(), y_space.randn()
    vjp_y = x_space.covector(vjp(y_space.covector(y_v)))
    assert vspace(vjp_y) == x_space, f"VJP of {get_name(f)} in {vspace(vjp_y)}, not {x_space}"
    exact = x_space.inner_prod(x_v, vjp_y)
    numeric = y_space.inner_prod(y_v, make_numerical_jvp(f, x)(x_v))
    assert scalar_close(numeric, exact), (
        f"Derivative (VJP) check of {get_name(f)} failed with arg {x}:\n"
        f"analytic: {exact}\nnumeric:  {numeric}"
    )


def check_jvp(f, x):
    """adcompare's JVP against central differences along a random direction."""
    x_v = vspace(x).randn()
    check_equivalent(make_jvp(f)(x)(x_v)[1], make_numerical_jvp(f, x)(x_v))


def check_equivalent(x, y):
    """Same space and the same inner product with a random vector."""
    x_space, y_space = vspace(x), vspace(y)
    assert x_space == y_space, f"VSpace mismatch:\nx: {x_space}\ny: {y_space}"
    v = x_space.randn()
    assert scalar_close(x_space.inner_prod(x, v), x_space.inner_prod(y, v)), (
        f"Value mismatch:\nx: {x}\ny: {y}"
    )


@unary_to_nary
def check_grads(f, x, modes=("fwd", "rev"), order=2):
    """Check both modes' derivatives of ``f`` at ``x`` up to ``order``."""
    assert all(m in ("fwd", "rev") for m in modes)
    if "fwd" in modes:
        check_jvp(f, x)
        if order > 1:

            def jvp_f(x, v):
                return make_jvp(f)(x)(v)[1]

            jvp_f.__name__ = f"jvp_{get_name(f)}"
            check_grads(jvp_f, (0, 1), modes, order=order - 1)(x, vspace(x).randn())
    if "rev" in modes:
        check_vjp(f, x)
        if order > 1:

            def vjp_f(x, v):
                return make_vjp(f)(x)[0](v)

            vjp_f.__name__ = f"vjp_{get_name(f)}"
            check_grads(vjp_f, (0, 1), modes, order=order - 1)(x, vspace(f(x)).randn())


def combo_check(fun, *args, **kwargs):
    """``check_grads`` at every combination of the given arguments and keywords."""

    def _combo_check(*arg_lists, **kwarg_lists):
        keyword_values = [[(k, v) for v in values] for k, values in kwarg_lists.items()]
        for _args in product(*arg_lists):
            for _kwargs in product(*keyword_values):
                check_grads(fun, *args, **kwargs)(*_args, **dict(_kwargs))

    return _combo_check
