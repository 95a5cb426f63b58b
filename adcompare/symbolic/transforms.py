"""The symbolic transforms: exact values, gradients, Jacobians and Hessians."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from adcompare.runtime.dtypes import as_float
from adcompare.symbolic.recording import _trace_for, argument_positions
from adcompare.symbolic.trace import Trace, _check_scalar


def record(f: Callable, *example_args, argnums=None) -> Trace:
    """Trace ``f`` on symbols at ``example_args`` and return the :class:`Trace`.

    ``argnums`` chooses the arguments that become symbols; by default every
    real floating argument does (integer and boolean arrays stay constants,
    so they may index or select). Values that ``f`` reads decide branches
    at ``example_args``; see the module documentation.

    >>> from adcompare import symbolic
    >>> symbolic.record(lambda w: w @ w, [[1.0, 2.0], [3.0, 4.0]]).expressions
    [[w0_0**2 + w0_1*w1_0, w0_0*w0_1 + w0_1*w1_1], [w0_0*w1_0 + w1_0*w1_1, w0_1*w1_0 + w1_1**2]]
    """
    return _trace_for(f, example_args, argument_positions(argnums, example_args))


def trace(f: Callable, *example_args, argnums=None):
    """The output of ``f`` as SymPy expression(s), traced at ``example_args``.

    A scalar output gives an expression, an array output a ``sympy.Array``,
    a tuple of outputs a tuple.

    >>> import adcompare as ad
    >>> from adcompare import symbolic
    >>> symbolic.trace(lambda x: ad.sum(ad.exp(x)), [0.0, 1.0])
    exp(x0) + exp(x1)
    """
    return record(f, *example_args, argnums=argnums).expressions


def _many(argnums) -> bool:
    return isinstance(argnums, (tuple, list))


def _result_dtype(args, positions):
    kinds = [np.result_type(as_float(args[p])) for p in positions]
    return np.result_type(*kinds) if kinds else np.float64


def value_and_gradient(f: Callable, argnums=0) -> Callable:
    """A function returning ``(f(*args), gradient)``, both exact (compiled SymPy).

    >>> from adcompare import symbolic
    >>> value, g = symbolic.value_and_gradient(lambda x: x**3)(2.0)
    >>> print(value, g)
    8.0 12.0
    """

    @functools.wraps(f)
    def value_and_exact_gradient(*args):
        positions = argument_positions(argnums, args, "grad")
        traced = _trace_for(f, args, positions)
        output = traced._single_output("grad")
        _check_scalar(output.shape)
        dtype = _result_dtype(args, positions)
        value = traced.evaluate("value", args).astype(dtype)
        grads = [
            traced.evaluate(("jacobian", p), args).reshape(np.shape(args[p])).astype(dtype)
            for p in positions
        ]
        return value, (tuple(grads) if _many(argnums) else grads[0])

    return value_and_exact_gradient


def gradient(f: Callable, argnums=0) -> Callable:
    """The exact gradient of a scalar-valued ``f``, like ``grad(f, mode="symbolic")``.

    >>> import adcompare as ad
    >>> from adcompare import symbolic
    >>> print(symbolic.gradient(lambda x: ad.sum(x**2))([1.0, 2.0]))
    [2. 4.]
    """
    value_and_exact_gradient = value_and_gradient(f, argnums)

    @functools.wraps(f)
    def exact_gradient(*args):
        return value_and_exact_gradient(*args)[1]

    return exact_gradient


def jacobian(f: Callable, argnums=0) -> Callable:
    """The exact Jacobian, shaped ``out.shape + x.shape`` like ``jacfwd``/``jacrev``.

    >>> from adcompare import symbolic
    >>> print(symbolic.jacobian(lambda x: x**2)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    """

    @functools.wraps(f)
    def exact_jacobian(*args):
        positions = argument_positions(argnums, args, "jacobian")
        traced = _trace_for(f, args, positions)
        traced._single_output("jacobian")
        dtype = _result_dtype(args, positions)
        jacobians = [traced.evaluate(("jacobian", p), args).astype(dtype) for p in positions]
        return tuple(jacobians) if _many(argnums) else jacobians[0]

    return exact_jacobian


def hessian(f: Callable, argnums=0) -> Callable:
    """The exact Hessian of a scalar-valued ``f``, shaped ``x.shape + x.shape``.

    With a tuple ``argnums`` the result is a tuple of tuples of blocks:
    ``result[i][j]`` is d²f / d args[argnums[i]] d args[argnums[j]], as in JAX.

    >>> import adcompare as ad
    >>> from adcompare import symbolic
    >>> print(symbolic.hessian(lambda x: ad.sum(x**3))([1.0, 2.0]))
    [[ 6.  0.]
     [ 0. 12.]]
    >>> h = symbolic.hessian(lambda x, y: x**2 * y, argnums=(0, 1))(2.0, 3.0)
    >>> print(h[0][0], h[0][1], h[1][1])
    6.0 4.0 0.0
    """

    @functools.wraps(f)
    def exact_hessian(*args):
        positions = argument_positions(argnums, args, "hessian")
        traced = _trace_for(f, args, positions)
        dtype = _result_dtype(args, positions)
        blocks = tuple(
            tuple(traced.evaluate(("hessian", p, q), args).astype(dtype) for q in positions)
            for p in positions
        )
        return blocks if _many(argnums) else blocks[0][0]

    return exact_hessian
