"""PyTorch on the memory study's loops: the full tape and ``torch.utils.checkpoint``.

``torch:tape`` runs the T steps eagerly and calls ``backward``: autograd
keeps every step's saved tensors, O(T). ``torch:checkpoint`` wraps each
block of ⌈√T⌉ steps in ``torch.utils.checkpoint.checkpoint`` with
``use_reentrant=False`` (the non-reentrant form, as ``adcompare.checkpoint``):
only each block's inputs are kept, and the block runs again in the backward
pass, O(√T).

Peak memory is read by torch's own tool: :func:`peak_bytes` runs the work
under ``torch.profiler.profile(profile_memory=True)`` and takes the highest
"Total Allocated" of the CPU allocator's memory events, less what was live
when the first one came. It sees every tensor torch's CPU allocator hands
out (data only: not the autograd graph's C++ nodes, nor Python objects).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from types import SimpleNamespace

from adcompare.bench.memory.loops import LoopInstance
from adcompare.bench.memory.modes import block_size
from adcompare.bench.peers.torch import load

__all__ = ["namespace", "peak_bytes", "prepare_checkpoint", "prepare_tape"]

TOOL = "torch.profiler (profile_memory=True): peak Total Allocated of the CPU allocator"


def namespace(torch) -> SimpleNamespace:
    """torch's functions under the names ``LoopInstance.written_on`` uses."""
    return SimpleNamespace(
        asarray=torch.from_numpy,
        concatenate=torch.cat,
        sum=torch.sum,
        tanh=torch.tanh,
        sigmoid=torch.sigmoid,
    )


def _loop(instance: LoopInstance, torch, run_steps: Callable) -> Callable[[], object]:
    step, objective = instance.written_on(namespace(torch))
    carry = tuple(torch.from_numpy(c) for c in instance.carry)
    xs = None if instance.xs is None else torch.from_numpy(instance.xs)
    params = instance.params

    def gradient():
        leaf = torch.from_numpy(params).requires_grad_()
        objective(run_steps(step, carry, xs, instance.unflatten(leaf))).backward()
        return leaf.grad.numpy()

    return gradient


def prepare_tape(instance: LoopInstance) -> Callable[[], object]:
    """The gradient with every step on autograd's tape."""

    def run(step, carry, xs, args):
        for t in range(instance.steps):
            carry = step(carry, None if xs is None else xs[t], *args)
        return carry

    return _loop(instance, load(), run)


def prepare_checkpoint(instance: LoopInstance) -> Callable[[], object]:
    """The gradient with ``torch.utils.checkpoint`` around each block of ⌈√T⌉ steps."""
    torch = load()
    checkpoint = torch.utils.checkpoint.checkpoint
    steps, size = instance.steps, block_size(instance.steps)

    def run(step, carry, xs, args):
        count = len(carry)
        for start in range(0, steps, size):

            def block(*values, start=start):
                state = tuple(values[:count])
                for t in range(start, min(steps, start + size)):
                    state = tuple(step(state, None if xs is None else xs[t], *values[count:]))
                return state

            carry = checkpoint(block, *carry, *args, use_reentrant=False)
        return carry

    return _loop(instance, torch, run)


def peak_bytes(work: Callable[[], object]) -> int:
    """The most bytes torch's CPU allocator held during ``work()`` above what it held
    at the first allocation, read from ``torch.profiler``'s memory events."""
    torch = load()
    profiler = torch.profiler
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], profile_memory=True) as run:
        work()
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        run.export_chrome_trace(path)
        with open(path, encoding="utf-8") as trace:
            events = json.load(trace)["traceEvents"]
    finally:
        os.remove(path)
    memory = sorted(
        (e["ts"], e["args"]["Total Allocated"], e["args"]["Bytes"])
        for e in events
        if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0
    )
    if not memory:
        return 0
    _, first_total, first_bytes = memory[0]
    return int(max(total for _, total, _ in memory) - (first_total - first_bytes))
