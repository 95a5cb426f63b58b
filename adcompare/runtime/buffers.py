"""A cache of large result buffers, so that elementwise ops reuse memory.

numpy gives every result fresh memory, and for a large array the operating
system hands that memory over zeroed, page by page: at n = 10⁶ this costs
about as much as the arithmetic. Plain numpy hides it by computing into
temporaries it is about to drop (``a - b**2`` reuses the square's memory),
which an engine cannot do for values its tape keeps or that a caller holds.
So large elementwise results are computed into buffers kept here, as a
caching allocator does (PyTorch's, on GPUs).

A result is a view of a cached buffer. When the last reference to the view
goes, the buffer comes back to the cache; before it is handed out again the
cache checks that nothing else refers to it (a slice taken from the view
refers to the buffer itself), so no live array ever sees its memory reused.

>>> import numpy as np
>>> from adcompare.runtime import buffers
>>> out = buffers.take((POOLED_FROM_BYTES // 8,), np.dtype(np.float64))
>>> out.base is not None
True
>>> del out
>>> buffers.cached_bytes() >= POOLED_FROM_BYTES
True
>>> buffers.release()
>>> buffers.cached_bytes()
0
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Iterator

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

__all__ = [
    "POOLED_FROM_BYTES",
    "cached_bytes",
    "disabled",
    "memory_key",
    "release",
    "run_into",
    "take",
]

#: Results of at least this many bytes are computed into cached buffers.
POOLED_FROM_BYTES = 1 << 20
#: At most this many idle buffers of one shape and dtype are kept.
MAX_IDLE_PER_SHAPE = 4
#: At most this many bytes of idle buffers are kept in all.
MAX_IDLE_BYTES = 1 << 28

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_SCALARS = (float, int)

_idle: dict[tuple, list[np.ndarray]] = {}
_state = {"bytes": 0, "enabled": True}


def _baseline_references() -> int | None:
    """What ``sys.getrefcount`` reports for an object only a local name holds.

    Measured in the way :func:`take` calls it (CPython 3.14 stopped counting the
    argument). ``None`` where counts are not exact: other interpreters, and
    CPython without the GIL, whose reuse check would then not be safe.
    """
    gil = getattr(sys, "_is_gil_enabled", None)  # CPython 3.13 and later
    if sys.implementation.name != "cpython" or (gil is not None and not gil()):
        return None
    holder = [object()]
    candidate = holder.pop()
    return sys.getrefcount(candidate)


#: The count that proves a popped buffer is referred to by nothing else.
_ONLY_OURS = _baseline_references()
# Re-entrant: a buffer may come back (a view's finalizer) while one is being taken.
_lock = threading.RLock()


def take(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised array of ``shape`` and ``dtype`` backed by a cached buffer.

    >>> import numpy as np
    >>> take((3,), np.dtype(np.float64)).shape
    (3,)
    """
    with _lock:
        buffers = _idle.get((shape, dtype))
        base = None
        while buffers:
            candidate = buffers.pop()
            _state["bytes"] -= candidate.nbytes
            # Only the local name refers to it (as in _baseline_references). Any
            # more means a view of the buffer is still alive: leave the buffer to it.
            if sys.getrefcount(candidate) == _ONLY_OURS:
                base = candidate
                break
            del candidate
        if base is None:
            base = np.empty(shape, dtype)
    view = base[...]
    weakref.finalize(view, _give_back, base)
    return view


def _give_back(base: np.ndarray) -> None:
    with _lock:
        buffers = _idle.setdefault((base.shape, base.dtype), [])
        if len(buffers) < MAX_IDLE_PER_SHAPE and _state["bytes"] + base.nbytes <= MAX_IDLE_BYTES:
            buffers.append(base)
            _state["bytes"] += base.nbytes


def cached_bytes() -> int:
    """Bytes held by idle cached buffers.

    >>> cached_bytes() >= 0
    True
    """
    return _state["bytes"]


def release() -> None:
    """Free every idle cached buffer (live results are not affected).

    >>> release(); cached_bytes()
    0
    """
    with _lock:
        _idle.clear()
        _state["bytes"] = 0


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Compute every result into fresh memory inside the block (nestable).

    >>> import numpy as np
    >>> with disabled():
    ...     run_into(np.negative, (np.ones(POOLED_FROM_BYTES),), {}) is None
    True
    """
    with _lock:
        before = _state["enabled"]
        _state["enabled"] = False
    try:
        yield
    finally:
        _state["enabled"] = before


def run_into(into, args: tuple, params: dict):
    """``into(out, *args, **params)`` into a cached buffer, or ``None`` when not worth it.

    Only C-contiguous plain arrays of one shape and one floating dtype, with
    Python numbers and broadcast values (every stride 0) beside them, qualify
    (their result has that shape, dtype and layout), and only from
    :data:`POOLED_FROM_BYTES` on. Nothing qualifies where reference counts are
    not exact (see ``_baseline_references``) or inside :func:`disabled`.

    >>> import numpy as np
    >>> x = np.ones(POOLED_FROM_BYTES // 8)
    >>> float(run_into(lambda out, a, b: np.add(a, b, out=out), (x, 2.0), {})[0])
    3.0
    >>> run_into(lambda out, a, b: np.add(a, b, out=out), (np.ones(3), 2.0), {}) is None
    True
    """
    # Called for every elementwise op: the size test, which rejects small arrays,
    # comes first, and reading ``flags`` (which builds an object) after it.
    model = None
    for a in args:
        if type(a) is ndarray:
            if model is None:
                if a.nbytes < POOLED_FROM_BYTES or a.dtype not in _FLOATS:
                    return None
                model = a
            elif a.shape != model.shape or a.dtype != model.dtype:
                return None
            if not a.flags.c_contiguous and any(a.strides):
                # A C-ordered result would be written across a strided input's
                # strides; a broadcast value (all strides 0, a sum's cotangent) has none.
                return None
        elif type(a) not in _SCALARS:
            return None
    if model is None or _ONLY_OURS is None or not _state["enabled"]:
        return None
    out = take(model.shape, model.dtype)
    into(out, *args, **params)
    return out


def memory_key(array) -> tuple:
    """Where an array's elements are: address, shape, strides and dtype (a view numpy
    makes of an array, ``np.asarray`` of a subclass, has the same key).

    >>> import numpy as np
    >>> a = np.arange(3.0)
    >>> memory_key(np.asarray(a.view(np.recarray))) == memory_key(a)
    True
    >>> memory_key(a[1:]) == memory_key(a)
    False
    """
    return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)
