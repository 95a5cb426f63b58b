"""asdex (sparse AD in JAX) as the sparse sweep's peer, on the same problems and sizes.

asdex detects a pattern by interpreting the function's jaxpr, colours it
greedily in largest-first order (columns or rows, whichever needs fewer;
star colouring for Hessians and for Jacobians declared symmetric), and
decompresses. It has no bidirectional colouring. Two modes are measured:

======================  ===============================================================
``asdex``               the colouring prepared once, the sparse Jacobian (or Hessian)
                        jitted, as asdex's documentation advises for repeated calls
``asdex+prep``          detection, colouring and an unjitted evaluation in every call
======================  ===============================================================

Both return JAX's sparse ``BCOO`` matrix (a dense result would cost more than the
derivative at n = 4096), as adcompare's modes return ``scipy.sparse`` ones.

The problems run with ``xp = jax.numpy`` in float64. asdex is optional: when
it (or JAX) is missing the sweep records why and goes on without it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import time
import warnings

import numpy as np

from adcompare.bench.harness.measure import time_calls
from adcompare.bench.peers import is_installed

__all__ = ["ASDEX_MODES", "asdex_cell", "asdex_colours", "missing", "version"]

ASDEX_MODES = ("asdex", "asdex+prep")


def missing() -> str | None:
    """Why asdex is not measured, or ``None`` when it is installed.

    >>> missing() in (None, "asdex is not installed: pip install asdex (it brings JAX)")
    True
    """
    if is_installed("asdex") and is_installed("jax"):
        return None
    return "asdex is not installed: pip install asdex (it brings JAX)"


def version() -> str:
    """asdex's version, as installed."""
    return importlib.metadata.version("asdex")


def _load():
    from adcompare.bench.peers.jax import load

    jax = load()  # float64, one CPU thread, the backend started
    return jax, importlib.import_module("jax.numpy"), importlib.import_module("asdex")


@contextlib.contextmanager
def _quiet(asdex):
    """asdex warns when a colouring is as dense as the Jacobian: the tables say so already."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", asdex.DenseColoringWarning)
        yield


def _coloured(asdex, f, x, kind: str):
    if kind == "hessian":
        return asdex.hessian_coloring(f, x)
    return asdex.jacobian_coloring(f, x)


def _derivative(asdex, f, colouring, kind: str):
    """asdex's sparse Jacobian or Hessian function, returning a ``BCOO`` matrix."""
    if kind == "hessian":
        return asdex.hessian_from_coloring(f, colouring, "bcoo")
    return asdex.jacobian_from_coloring(f, colouring, "bcoo")


def asdex_colours(instance, kind: str, symmetric: bool) -> dict:
    """asdex's colours on ``instance``: forward and reverse (Jacobians), star (Hessians and
    symmetric Jacobians), and its pattern's non-zeros."""
    _, jnp, asdex = _load()
    with _quiet(asdex):
        return _colours(asdex, instance.on(jnp), jnp.asarray(instance.x), kind, symmetric)


def _colours(asdex, f, x, kind: str, symmetric: bool) -> dict:
    if kind == "hessian":
        colouring = asdex.hessian_coloring(f, x)
        return {"star": colouring.num_colors, "nnz": int(colouring.sparsity.nnz)}
    pattern = asdex.jacobian_sparsity(f, x)
    counts = {
        name: asdex.jacobian_coloring_from_sparsity(pattern, mode=mode).num_colors
        for name, mode in (("forward", "fwd"), ("reverse", "rev"))
    }
    if symmetric:
        colouring = asdex.jacobian_coloring_from_sparsity(pattern, symmetric=True)
        counts["symmetric star"] = colouring.num_colors
    return counts | {"nnz": int(pattern.nnz)}


def _passes(colouring) -> dict:
    """JVPs (or HVPs) and VJPs from asdex's colouring: it reports no count of its own."""
    reverse = colouring.mode == "rev"
    count = colouring.num_colors
    return {
        "seeds": 0 if reverse else count,
        "sweeps": count if reverse else 0,
        "cotangent_seeds": count if reverse else 0,
        "passes": 1,
    }


def asdex_cell(cell: dict, instance, mode: str, reference, budget: float) -> dict:
    """``cell`` (its problem, size, n, m and kind) measured with asdex's ``mode``; a peer that
    fails on a problem is recorded as skipped, with its error, and the sweep goes on."""
    try:
        _, _, asdex = _load()
        with _quiet(asdex):
            return _measured(cell, instance, mode, reference, budget)
    except Exception as error:  # a peer failing on a problem is a result, not a crash
        return cell | {"mode": mode, "skipped": f"asdex failed: {type(error).__name__}: {error}"}


def _measured(cell: dict, instance, mode: str, reference, budget: float) -> dict:
    jax, jnp, asdex = _load()
    kind = cell["kind"]
    f, x = instance.on(jnp), jnp.asarray(instance.x)
    started = time.perf_counter()
    colouring = _coloured(asdex, f, x, kind)
    if mode == "asdex":
        compiled = jax.jit(_derivative(asdex, f, colouring, kind))
        work = lambda: jax.block_until_ready(compiled(x))
    else:
        work = lambda: jax.block_until_ready(
            _derivative(asdex, f, _coloured(asdex, f, x, kind), kind)(x)
        )
    result = work()
    prepare_time = time.perf_counter() - started
    timing, _ = time_calls(work, repeats=5 if mode == "asdex" else 1, budget=budget)
    reason = f"asdex {colouring.mode}: {colouring.num_colors} colour(s), largest-first"
    cell = cell | {"mode": mode, "time": timing["median"], "colours": colouring.num_colors}
    cell |= _passes(colouring) | {"prepare_time": prepare_time, "reason": reason}
    if reference is not None:
        dense = np.asarray(result.todense()).reshape(reference.shape)
        difference = np.abs(dense - reference).max()
        cell["error"] = float(difference) / max(1.0, float(np.abs(reference).max()))
    return cell
