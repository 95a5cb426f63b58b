"""PyTorch as a peer: eager ``backward`` and ``torch.func.jacfwd`` / ``jacrev``, float64.

Problems that close over numpy constants run through a
:class:`~adcompare.bench.peers.namespace.WrappedNamespace` over torch's
functions, since torch tensors do not mix with numpy arrays; the others run
on torch directly (:func:`function_of`).
torch runs with one thread, like numpy's BLAS in the harness.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import SimpleNamespace

from adcompare.bench.peers.namespace import WrappedNamespace
from adcompare.bench.problems import Instance

__all__ = [
    "THREADS",
    "function_of",
    "functions",
    "load",
    "namespace",
    "prepare_jacfwd",
    "prepare_jacrev",
    "prepare_reverse",
]

#: torch's intra-op threads while measuring, as the harness's one BLAS thread.
THREADS = 1


@functools.cache
def load():
    """The torch module, set to ``THREADS`` threads, its autograd engine and
    ``torch.func`` started by one tiny derivative each so that no measured call
    pays for them."""
    torch = importlib.import_module("torch")
    torch.set_num_threads(THREADS)
    one = torch.ones(1, dtype=torch.float64)
    one.clone().requires_grad_().sum().backward()
    torch.func.jacfwd(torch.sin)(one)
    torch.func.jacrev(torch.sin)(one)
    return torch


def _reduction(reduce: Callable) -> Callable:
    """A torch reduction with numpy's ``axis`` and ``keepdims`` keywords."""

    def reduction(array, axis=None, keepdims=False):
        if axis is None:
            return reduce(array)
        return reduce(array, dim=axis, keepdim=keepdims)

    return reduction


def functions(torch) -> dict[str, Callable]:
    """torch's functions under the numpy names the problems use."""
    return {
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


def namespace(torch) -> WrappedNamespace:
    """The ``xp`` the problems see when run by torch: numpy operands converted."""
    return WrappedNamespace("torch", functions(torch), torch.from_numpy)


def function_of(instance: Instance, torch) -> Callable:
    """``instance``'s f as a function of one torch tensor, returning a tensor.

    A problem whose only constants are Python numbers (Rosenbrock, the
    elementwise chain) runs on torch's tensors and functions directly, so
    the wrapper's Python layer is not timed; one with numpy constants (the
    first call raises ``TypeError``) runs through :func:`namespace`.
    """
    native, f = SimpleNamespace(**functions(torch)), instance.f
    try:
        f(native, torch.from_numpy(instance.x))
    except TypeError:
        xp = namespace(torch)
        return lambda x: xp.unwrap(f(xp, xp.wrap(x)))
    return lambda x: f(native, x)


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
