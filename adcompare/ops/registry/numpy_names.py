"""Which of numpy's (and SciPy's) functions, called on a box, reach which op."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: numpy's names (``"sin"``, ``"absolute"``, ``"linalg.norm"``) of the op set's public functions.
NUMPY_NAMES: dict[str, Callable] = {}


def register_numpy_names(names: Sequence[str], fn: Callable) -> None:
    """Let numpy's functions named ``names``, called on a box, dispatch to ``fn``."""
    for name in names:
        if name in NUMPY_NAMES and NUMPY_NAMES[name] is not fn:
            raise ValueError(f"numpy name {name!r} already dispatches to another op")
        NUMPY_NAMES[name] = fn


def default_numpy_names(name: str) -> tuple[str, ...]:
    """An op answers to numpy's function of its own name, where numpy has one."""
    return (name,) if callable(getattr(np, name, None)) else ()


def public_face(op_fn: Callable) -> Callable:
    """Make the decorated wrapper the public function of ``op_fn``'s op.

    For a primitive whose public signature differs from its record's (numpy's
    ``where(cond, x, y)`` in front of a record taking ``cond`` as a keyword):
    exports and numpy dispatch then reach the wrapper.
    """

    def register(wrapper: Callable) -> Callable:
        op = op_fn.op
        op.api = wrapper
        for numpy_name in op.numpy:
            NUMPY_NAMES[numpy_name] = wrapper
        return wrapper

    return register
