"""autograd's ``unary_to_nary``: an operator on ``f(x)`` becomes one on ``f(*args)``."""

import functools

import numpy as np


def unary_to_nary(unary_operator):
    """Turn ``unary_operator(f, x, ...)`` into ``operator(f, argnum=0, ...)(*args, **kwargs)``.

    ``argnum`` may be a tuple: ``x`` is then the tuple of those arguments.
    """

    @functools.wraps(unary_operator)
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        def nary_f(*args, **kwargs):
            def unary_f(x):
                new_args = list(args)
                if isinstance(argnum, int):
                    new_args[argnum] = x
                else:
                    for position, value in zip(argnum, x):
                        new_args[position] = value
                return fun(*new_args, **kwargs)

            unary_f.__name__ = get_name(fun)
            x = args[argnum] if isinstance(argnum, int) else tuple(args[i] for i in argnum)
            return unary_operator(unary_f, containers_stay(x), *op_args, **op_kwargs)

        nary_f.__name__ = f"{get_name(unary_operator)}_of_{get_name(fun)}_wrt_argnum_{argnum}"
        return nary_f

    return nary_operator


def get_name(f) -> str:
    """A function's name, for messages."""
    return getattr(f, "__name__", "[unknown name]")


def containers_stay(value):
    """``value`` with the numbers inside its tuples, lists and dicts as 0-d arrays.

    autograd differentiates a tuple of numbers as a tuple; adcompare reads one
    (``(1.0, 2.0)``) as an array literal, as ``np.asarray`` does. As 0-d arrays the
    numbers keep the container a container, so derivatives come back in its shape.
    """
    if isinstance(value, dict):
        return type(value)((k, containers_stay(v)) for k, v in value.items())
    if type(value) in (tuple, list):
        return type(value)(containers_stay(v) for v in value)
    return np.asarray(value) if isinstance(value, (float, complex, np.inexact)) else value
