"""``grad(f, mode="replay")``: ``f`` recorded once per argument structure, then replayed.

The gradient function keeps one :func:`~adcompare.compile` recording of
``f`` and its reverse sweep, made at its first call on plain arguments, and
replays it at every later call whose arguments have the same shapes and
dtypes (a new structure is recorded once more, and kept too). The replay's
guards record again where a branch ``f`` took would go the other way, so a
replay never gives the gradient of another branch; its numbers are those of
reverse mode, bit for bit.

Replay takes plain arrays and numbers only. A call whose arguments hold
anything else is run in eager reverse mode, as ``mode="reverse"`` would:
a box of an outer transform (``grad`` inside ``grad``, where the inner
gradient must be recorded by the outer one), a pytree, an integer, or
``has_aux``. So is every call of a function whose guards keep flipping (it
records more often than it replays), where recording again would cost more
than it saves.

``f`` must be a function of its arguments, as :func:`~adcompare.compile`
requires: a number it reads from elsewhere (a global float, ``self.scale``)
is recorded as a constant, and arrays are watched only where its code names
them (globals and closures).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.engines.replay import compile as record_replay

#: Plain arguments replay takes as they are: floating arrays and numbers.
_PLAIN = (np.ndarray, float, np.float64)

#: Recordings allowed before the ratio below is checked, and the fewest calls per
#: recording: a function recorded more often gives up replay for eager reverse mode.
RECORDINGS_BEFORE_CHECK = 4
CALLS_PER_RECORDING = 8


def _plain(args: tuple) -> bool:
    """Whether every argument is a floating array or number (no box, no pytree, no int)."""
    for a in args:
        kind = type(a)
        if kind not in _PLAIN or (kind is np.ndarray and a.dtype.kind != "f"):
            return False
    return True


def replayed(f: Callable, argnums, eager: Callable) -> Callable:
    """``value_and_grad(f, argnums)`` by replay, with ``eager`` (reverse mode) where replay
    cannot serve a call (see the module's docstring).

    >>> import adcompare as ad
    >>> g = ad.grad(lambda x: x**3 + 2.0 * x, mode="replay")
    >>> print(g(2.0), g(3.0), g(ad.Dual(3.0, 1.0)).tangent)  # the Dual: eager, nested
    14.0 29.0 18.0
    """
    state = {"compiled": None, "calls": 0, "eager": False}

    def value_and_gradient(*args):
        if state["eager"] or not _plain(args):
            return eager(*args)
        compiled = state["compiled"]
        if compiled is None:
            compiled = state["compiled"] = record_replay(f, *args, argnums=argnums)
        value, gradient = compiled.value_and_grad(*args)
        if type(value) is np.ndarray and value.shape == ():
            value = value[()]  # a number, as eager reverse mode gives it
        state["calls"] += 1
        recordings = compiled.recordings
        if (
            recordings > RECORDINGS_BEFORE_CHECK
            and recordings * CALLS_PER_RECORDING > state["calls"]
        ):
            state["eager"] = True  # its guards keep flipping: recording costs more than it saves
        return value, gradient

    return value_and_gradient
