"""JAX on the memory study's loops: ``jax.lax.scan``, with and without ``jax.checkpoint``.

Every mode differentiates the loop with ``jax.grad`` under ``jax.jit`` (the
compile is the cell's first call, outside the timing):

``jax:scan``
    ``lax.scan`` over the T steps: the scan saves each step's residuals, O(T).
``jax:scan+remat``
    ``lax.scan`` over ``jax.checkpoint(step)``: only each step's carry is
    saved and the step runs again in the backward pass, O(T) with a smaller
    constant.
``jax:blocks``
    an outer ``lax.scan`` over blocks of ⌈√T⌉ steps, each block an inner scan
    wrapped in ``jax.checkpoint``: only the blocks' inputs are saved, O(√T),
    as adcompare's ``block`` mode.

Peak memory is read by JAX's own tool: :func:`peak_bytes` asks the compiled
gradient for XLA's ``memory_analysis()`` and adds its temporary buffers to
its output. It is XLA's buffer assignment at compile time, exact for the
compiled program but not a runtime measurement (CPU devices have no
``memory_stats()``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from adcompare.bench.memory.loops import LoopInstance
from adcompare.bench.memory.modes import block_size
from adcompare.bench.peers.jax import load

__all__ = ["JaxGradient", "namespace", "preparer"]

TOOL = "XLA memory_analysis() of the compiled gradient: temporaries + output"


def namespace(jax) -> SimpleNamespace:
    """JAX's functions under the names ``LoopInstance.written_on`` uses."""
    jnp = jax.numpy
    return SimpleNamespace(
        asarray=jnp.asarray,
        concatenate=jnp.concatenate,
        sum=jnp.sum,
        tanh=jnp.tanh,
        sigmoid=jax.nn.sigmoid,
    )


class JaxGradient:
    """The jitted gradient of an instance's loss: call it for the gradient (a numpy
    array); :meth:`peak_bytes` for XLA's memory analysis of the compiled program."""

    def __init__(self, jax, loss: Callable, params: np.ndarray):
        self.params = jax.numpy.asarray(params)
        self.compiled = jax.jit(jax.grad(loss)).lower(self.params).compile()

    def __call__(self):
        return np.asarray(self.compiled(self.params).block_until_ready())

    def peak_bytes(self) -> int:
        analysis = self.compiled.memory_analysis()
        return int(analysis.temp_size_in_bytes + analysis.output_size_in_bytes)


def _scan(jax, step, *, remat: bool):
    def run(carry, xs, args, length):
        def body(state, x):
            return tuple(step(state, x, *args)), None

        return jax.lax.scan(jax.checkpoint(body) if remat else body, carry, xs, length=length)[0]

    return run


def _blocks(jax, step, steps: int):
    size = block_size(steps)
    full, rest = divmod(steps, size)
    inner = _scan(jax, step, remat=False)

    def run(carry, xs, args, length):
        def block(state, block_xs, length):
            return inner(state, block_xs, args, length)

        checkpointed = jax.checkpoint(block, static_argnums=(2,))
        split = None if xs is None else xs[: full * size].reshape(full, size, *xs.shape[1:])

        def outer(state, block_xs):
            return checkpointed(state, block_xs, size), None

        carry = jax.lax.scan(outer, carry, split, length=full)[0]
        if rest:
            carry = checkpointed(carry, None if xs is None else xs[full * size :], rest)
        return carry

    return run


def preparer(kind: str) -> Callable[[LoopInstance], JaxGradient]:
    """``prepare(instance)`` for ``kind``: ``"scan"``, ``"scan+remat"`` or ``"blocks"``."""

    def prepare(instance: LoopInstance) -> JaxGradient:
        jax = load()
        jnp = jax.numpy
        step, objective = instance.written_on(namespace(jax))
        if kind == "blocks":
            run = _blocks(jax, step, instance.steps)
        else:
            run = _scan(jax, step, remat=kind == "scan+remat")
        carry = tuple(jnp.asarray(c) for c in instance.carry)
        xs = None if instance.xs is None else jnp.asarray(instance.xs)

        def loss(params):
            return objective(run(carry, xs, instance.unflatten(params), instance.steps))

        return JaxGradient(jax, loss, instance.params)

    prepare.__name__ = f"prepare_{kind.replace('+', '_')}"
    return prepare
