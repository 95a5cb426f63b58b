"""PyTorch as a peer: eager ``backward`` and ``torch.func.jacfwd`` / ``jacrev``, float64.

The problems run through a :class:`~adcompare.bench.peer_namespace.WrappedNamespace`
over torch's functions, since torch tensors do not mix with numpy constants.
torch runs with one thread, like numpy's BLAS in the harness.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from adcompare.bench.peer_namespace import WrappedNamespace
from adcompare.bench.problems import Instance

__all__ = ["THREADS", "load", "namespace", "prepare_jacfwd", "prepare_jacrev", "prepare_reverse"]

#: torch's intra-op threads while measuring, as the harness's one BLAS thread.
THREADS = 1


def load():
    """The torch module, set to ``THREADS`` threads."""
    torch = importlib.import_module("torch")
    torch.set_num_threads(THREADS)
    return torch


def _reduction(reduce: Callable) -> Callable:
    """A torch reduction with numpy's ``axis`` and ``keepdims`` keywords."""

    def reduction(array, axis=None, keepdims=False):
        if axis is None:
            return reduce(array)
        return reduce(array, dim=axis, keepdim=keepdims)

    return reduction


def namespace(torch) -> WrappedNamespace:
    """The ``xp`` the problems see when run by torch."""
    functions = {
        "sum": _reduction(torch.sum),
        "mean": _reduction(torch.mean),
        "max": _reduction(torch.amax),
        "reshape": lambda array, shape: torch.reshape(array, tuple(int(s) for s in shape)),
        "concatenate": lambda arrays, axis=0: torch.cat(arrays, dim=axis),
        **{
            name: getattr(torch, name)
            for name in ("tanh", "sin", "cos", "exp", "log", "log1p", "sqrt")
        },
    }
    return WrappedNamespace("torch", functions, torch.from_numpy)


def function_of(instance: Instance, torch) -> Callable:
    """``instance``'s f as a function of one torch tensor, returning a tensor."""
    xp = namespace(torch)
    return lambda x: xp.unwrap(instance.f(xp, xp.wrap(x)))


def prepare_reverse(instance: Instance) -> Callable:
    """The gradient by eager ``backward``: a fresh leaf, one forward, one backward."""
    torch = load()
    f, x = function_of(instance, torch), instance.x

    def gradient():
        leaf = torch.from_numpy(x).requires_grad_()
        f(leaf).backward()
        return leaf.grad

    return gradient


def _prepare_func(transform_name: str) -> Callable[[Instance], Callable]:
    def prepare(instance: Instance) -> Callable:
        torch = load()
        jacobian = getattr(torch.func, transform_name)(function_of(instance, torch))
        x = torch.from_numpy(instance.x)
        return lambda: jacobian(x)

    prepare.__name__ = f"prepare_{transform_name}"
    return prepare


prepare_jacfwd = _prepare_func("jacfwd")
prepare_jacrev = _prepare_func("jacrev")
