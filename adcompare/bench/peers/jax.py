"""JAX as a peer: ``grad``, ``jacfwd``, ``jacrev``, each with and without ``jit``, float64.

The problems run with ``xp = jax.numpy`` (JAX arrays take numpy constants
as they are). JAX dispatches asynchronously, so each call waits for its
result. XLA's CPU backend is asked for one thread, like numpy's BLAS in the
harness; the flag only acts if set before JAX is first imported.

A jitted function compiles on its first call: the harness's warm-up call
(``time["warmup"]`` of a cell) is compile plus one run, the median the
steady state.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable

from adcompare.bench.problems import Instance

__all__ = ["SINGLE_THREAD_FLAGS", "load", "preparer"]

SINGLE_THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


@functools.cache
def load():
    """The jax module with float64 enabled, its CPU backend started by one tiny
    gradient so that no measured call pays for it."""
    os.environ.setdefault("XLA_FLAGS", SINGLE_THREAD_FLAGS)
    jax = importlib.import_module("jax")
    jax.config.update("jax_enable_x64", True)
    jax.grad(jax.numpy.sin)(0.0).block_until_ready()
    return jax


def preparer(transform_name: str, *, jit: bool) -> Callable[[Instance], Callable]:
    """``prepare(instance)`` for ``jax.<transform_name>`` (``grad``, ``jacfwd``,
    ``jacrev``), jitted or not."""

    def prepare(instance: Instance) -> Callable:
        jax = load()
        xp = importlib.import_module("jax.numpy")
        f = instance.f
        derivative = getattr(jax, transform_name)(lambda x: f(xp, x))
        if jit:
            derivative = jax.jit(derivative)
        x = xp.asarray(instance.x)
        return lambda: derivative(x).block_until_ready()

    prepare.__name__ = f"prepare_{transform_name}{'_jit' if jit else ''}"
    return prepare
