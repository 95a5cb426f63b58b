"""Users' functions for the command line's tests: good ones and each kind of bad one."""

import numpy as np

NOT_CALLABLE = 3.0


def cumulative(x):
    """R^n -> R^2, smooth everywhere."""
    return np.tanh(np.cumsum(x))[-2:]


def pair(x, y):
    """f(x, y) = x² y + sin(y): two scalars to one, for verify --at x=...,y=..."""
    return x**2 * y + np.sin(y)


def loss(params, data):
    """A pytree function: params a dict, data a fixed array."""
    return np.sum((params["w"] * data + params["b"]) ** 2)


def loss_inputs(n):
    """The inputs of loss at size n."""
    return {"w": np.linspace(0.5, 1.5, n), "b": 0.25}, np.arange(n, dtype=float)


def raises(x):
    """Fails when called."""
    raise RuntimeError("the model's file is missing")


def matrix(x):
    """Returns a 2-D array: the wrong shape."""
    return np.outer(x, x)


def root(x):
    """sqrt(x) is not differentiable at 0."""
    return np.sqrt(x)


def zeros(n):
    """The point 0 of size n, where root's derivative is infinite."""
    return np.zeros(n)


def tridiagonal(x):
    """A residual whose Jacobian is tridiagonal: for adcompare sparse --function."""
    inner = x[1:-1]
    middle = 2.0 * inner - x[:-2] - x[2:] + 0.1 * np.exp(inner)
    return np.concatenate([x[:1], middle, x[-1:]])


def small_only(x):
    """Runs at n <= 2 only: the cells measured before it fails must be kept."""
    if x.size > 2:
        raise MemoryError(f"n = {x.size} does not fit")
    return np.sin(x)


def recurrence(x):
    """v = sin(v)·v + 1/2, twenty times: its written-out size doubles each step, too
    large for SymPy, so verify falls back to finite differences."""
    v = x
    for _ in range(20):
        v = np.sin(v) * v + 0.5
    return v
