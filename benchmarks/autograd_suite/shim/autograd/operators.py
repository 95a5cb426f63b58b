"""autograd's differential operators, each computed by adcompare's transforms."""

import inspect

import numpy as np

import adcompare as ad
from adcompare.ops.registry import raw
from autograd.wrap_util import containers_stay, unary_to_nary


def unary_vjp(fun, x):
    """``(vjp_fn, fun(x))``: autograd's ``make_vjp`` by ``ad.vjp``."""
    ans, pullback = ad.vjp(fun, x)
    return (lambda g: pullback(containers_stay(g))[0]), ans


def unary_jvp(fun, x):
    """``jvp(v) -> (fun(x), J v)`` by ``ad.jvp`` (one forward pass a direction)."""
    return lambda v: ad.jvp(fun, (x,), (containers_stay(v),))


make_vjp = unary_to_nary(unary_vjp)
make_jvp = unary_to_nary(unary_jvp)


def _by(transform, name: str, doc: str):
    """autograd's operator ``name``: adcompare's ``transform(fun)`` at ``x``."""

    def operator(fun, x):
        return transform(fun)(x)

    operator.__name__, operator.__doc__ = name, doc
    return unary_to_nary(operator)


grad = _by(ad.grad, "grad", "The gradient of a real scalar function, by reverse mode.")
value_and_grad = _by(ad.value_and_grad, "value_and_grad", "``(fun(x), gradient)``.")
jacobian = _by(ad.jacrev, "jacobian", "The Jacobian, shaped ``out.shape + x.shape``.")
hessian = _by(ad.hessian, "hessian", "The Hessian, by forward over reverse mode.")


@unary_to_nary
def elementwise_grad(fun, x):
    """The VJP with a cotangent of ones: the sum of the Jacobian's rows."""
    vjp_fn, ans = unary_vjp(fun, x)
    return vjp_fn(np.ones_like(raw(ans)))


#: The VJP with a cotangent of one: f'(z) for a holomorphic ``fun`` (adcompare's VJP is
#: the transpose, not the conjugate transpose, as autograd's).
holomorphic_grad = elementwise_grad


@unary_to_nary
def deriv(fun, x):
    """The JVP along ones: the derivative of a function of one variable."""
    return ad.jvp(fun, (x,), (np.ones_like(raw(x)),))[1]


@unary_to_nary
def make_hvp(fun, x):
    """``(hvp, gradient)``: the VJP of the gradient, as autograd builds it."""
    return unary_vjp(ad.grad(fun), x)


def hessian_tensor_product(fun, argnum=0):
    """``f(*args, v)`` giving the Hessian times ``v``: the gradient of ⟨∇f, v⟩."""
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(fun_grad(*args, **kwargs), vector, np.ndim(vector))

    return grad(vector_dot_grad, argnum)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """``f(*args, v)`` giving ``v`` times the Jacobian: the Jacobian of ⟨v, f⟩."""

    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(vector, fun(*args, **kwargs), axes=np.ndim(vector))

    return jacobian(vector_dot_fun, argnum)


vector_jacobian_product = tensor_jacobian_product


def make_ggnvp(f, g=lambda x: 1.0 / 2 * np.sum(x**2, axis=-1), f_argnum=0):
    """Generalized Gauss-Newton products ``Jᵀ H_g J v``, from adcompare's VJPs and JVPs."""

    @unary_to_nary
    def _make_ggnvp(f, x):
        f_vjp, f_x = unary_vjp(f, x)
        g_hvp, _ = unary_vjp(ad.grad(g), f_x)

        def ggnvp(v):
            return f_vjp(g_hvp(ad.jvp(f, (x,), (v,))[1]))

        return ggnvp

    return _make_ggnvp(f, f_argnum)


@unary_to_nary
def grad_and_aux(fun, x):
    """The gradient of the first output and the second output unchanged."""
    return ad.grad(fun, has_aux=True)(x)


def grad_named(fun, argname):
    """The gradient with respect to the argument called ``argname``."""
    return grad(fun, list(inspect.signature(fun).parameters).index(argname))


def multigrad_dict(fun):
    """The gradients with respect to every argument, in a dict by argument name."""
    signature = inspect.signature(fun)

    def gradfun(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        names = list(bound.arguments)
        gradients = ad.grad(lambda values: fun(**values))(dict(bound.arguments))
        return {name: gradients[name] for name in names}

    return gradfun


def checkpoint(fun):
    """``fun`` recomputed in the backward pass, by ``ad.checkpoint``."""
    return ad.checkpoint(fun)
