"""HIPS autograd as a peer: reverse-mode ``grad`` and forward mode by ``make_jvp``.

The problems run with ``xp = autograd.numpy``. autograd's forward mode has
no lanes: the Jacobian takes one ``make_jvp`` pass per basis vector, n
passes in all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np

from adcompare.bench.problems import Instance

__all__ = ["load", "prepare_grad", "prepare_jvp_loop"]


def load():
    """The autograd module."""
    return importlib.import_module("autograd")


def _function(instance: Instance) -> Callable:
    xp = importlib.import_module("autograd.numpy")
    f = instance.f
    return lambda x: f(xp, x)


def prepare_grad(instance: Instance) -> Callable:
    """The gradient by ``autograd.grad``: one recorded pass and one sweep."""
    gradient, x = load().grad(_function(instance)), instance.x
    return lambda: gradient(x)


def prepare_jvp_loop(instance: Instance) -> Callable:
    """The Jacobian column by column: ``make_jvp`` along each of the n basis vectors."""
    jvp_at, x = load().make_jvp(_function(instance)), instance.x
    basis = np.eye(instance.n)

    def jacobian():
        along = jvp_at(x)
        columns = [along(direction)[1] for direction in basis]
        return np.stack(columns, axis=-1)

    return jacobian
