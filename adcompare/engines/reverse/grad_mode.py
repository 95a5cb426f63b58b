"""Grad mode: whether operations on tensors are recorded (thread-local)."""

from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    enabled = True  # every thread starts with grad mode on


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations on tensors are being recorded (thread-local).

    >>> import adcompare as ad
    >>> with ad.no_grad():
    ...     ad.is_grad_enabled()
    False
    """
    return _state.enabled


class _GradMode:
    """Sets grad mode inside a ``with`` block or a decorated function."""

    enabled = True

    def __init__(self):
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(is_grad_enabled())
        _state.enabled = self.enabled
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self._previous.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapped


class no_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Do not record operations: results do not require grad.

    Usable as a context manager and as a decorator; thread-local.

    >>> import adcompare as ad
    >>> w = ad.Tensor([1.0], requires_grad=True)
    >>> with ad.no_grad():
    ...     y = w * 2
    >>> y.requires_grad
    False
    """

    enabled = False


class enable_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Record operations again, inside a ``no_grad`` block.

    >>> import adcompare as ad
    >>> with ad.no_grad(), ad.enable_grad():
    ...     ad.is_grad_enabled()
    True
    """

    enabled = True
