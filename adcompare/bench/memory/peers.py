"""Peers in the memory study: PyTorch and JAX differentiating the same loops.

=====================  ==============================================================
``torch:tape``         eager loop, ``backward``: every step on autograd's tape, O(T)
``torch:checkpoint``   ``torch.utils.checkpoint`` (``use_reentrant=False``) around each
                       block of ⌈√T⌉ steps, O(√T)
``jax:scan``           ``jax.grad`` of ``jax.lax.scan``, jitted, O(T)
``jax:scan+remat``     the same scan over ``jax.checkpoint(step)``: O(T), one carry a step
``jax:blocks``         a scan over ⌈√T⌉-step blocks, each ``jax.checkpoint``-ed, O(√T)
=====================  ==============================================================

tracemalloc does not see these libraries' arrays, so each peer's peak memory
is read by its own tool (``tool`` of the mode: ``torch.profiler``'s memory
events, XLA's compiled ``memory_analysis()``); the cell also records the
process's resident-set high-water mark during the call (:func:`rss_peak_bytes`)
as a cross-check read the same way for both.

Peers are optional: a mode whose library is not installed is skipped with
the note :func:`~adcompare.bench.peers.missing_note` gives, as in
``adcompare bench --peers``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adcompare.bench.memory import peers_jax as jax_modes
from adcompare.bench.memory import peers_torch as torch_modes
from adcompare.bench.memory.modes import MEMORY_MODES, MemoryMode
from adcompare.bench.peers import is_installed, missing_note

__all__ = [
    "ALL_MEMORY_MODES",
    "PEER_LIBRARIES",
    "PEER_MEMORY_MODES",
    "PeerMemoryMode",
    "available_memory_peers",
    "lookup_memory_mode",
    "rss_peak_bytes",
]

#: The peer libraries of the memory study, in the order their modes are listed.
PEER_LIBRARIES = ("torch", "jax")


@dataclass(frozen=True)
class PeerMemoryMode(MemoryMode):
    """A memory-study mode computed by a peer library.

    ``prepare(instance)`` returns the work (a call gives the gradient as a
    numpy array); ``peak_bytes(work)`` measures one call's peak memory with
    the library's own ``tool``.
    """

    library: str = ""
    tool: str = ""
    peak_bytes: Callable[[object], int] | None = None

    def unavailable(self) -> str | None:
        """Why this mode cannot run here, or ``None`` if it can.

        >>> mode = PeerMemoryMode("x:y", "x", None, "T", library="no_such_library")
        >>> print(mode.unavailable())  # doctest: +NORMALIZE_WHITESPACE
        peers: no_such_library is not installed, so its modes are skipped; install the peers
        with pip install -e ".[peers]"
        """
        return None if is_installed(self.library) else missing_note([self.library])


def _jax_mode(kind: str, label: str, growth: str) -> PeerMemoryMode:
    return PeerMemoryMode(
        f"jax:{kind}",
        label,
        jax_modes.preparer(kind),
        growth,
        library="jax",
        tool=jax_modes.TOOL,
        peak_bytes=lambda work: work.peak_bytes(),
    )


PEER_MEMORY_MODES: dict[str, PeerMemoryMode] = {
    m.name: m
    for m in [
        PeerMemoryMode(
            "torch:tape",
            "torch, full tape",
            torch_modes.prepare_tape,
            "T",
            library="torch",
            tool=torch_modes.TOOL,
            peak_bytes=torch_modes.peak_bytes,
        ),
        PeerMemoryMode(
            "torch:checkpoint",
            "torch.utils.checkpoint per √T-step block",
            torch_modes.prepare_checkpoint,
            "sqrt(T)",
            library="torch",
            tool=torch_modes.TOOL,
            peak_bytes=torch_modes.peak_bytes,
        ),
        _jax_mode("scan", "jax lax.scan", "T"),
        _jax_mode("scan+remat", "jax lax.scan of jax.checkpoint(step)", "T"),
        _jax_mode("blocks", "jax lax.scan of jax.checkpoint-ed √T-step blocks", "sqrt(T)"),
    ]
}

#: adcompare's memory modes, then the peers': every name a memory cell may have.
ALL_MEMORY_MODES: dict[str, MemoryMode] = {**MEMORY_MODES, **PEER_MEMORY_MODES}


def lookup_memory_mode(name: str) -> MemoryMode:
    """adcompare's or a peer's memory-study mode called ``name``.

    >>> lookup_memory_mode("torch:checkpoint").growth, lookup_memory_mode("reverse").growth
    ('sqrt(T)', 'T')
    """
    try:
        return ALL_MEMORY_MODES[name]
    except KeyError:
        raise ValueError(
            f"unknown memory-study mode {name!r}; the modes are {', '.join(ALL_MEMORY_MODES)}"
        ) from None


def available_memory_peers() -> tuple[list[str], str | None]:
    """The installed peers' memory modes, and the note on the missing libraries
    (``None`` when both are installed).

    >>> names, note = available_memory_peers()
    >>> all(PEER_MEMORY_MODES[name].library not in (note or "") for name in names)
    True
    """
    names = [name for name, mode in PEER_MEMORY_MODES.items() if is_installed(mode.library)]
    missing = [library for library in PEER_LIBRARIES if not is_installed(library)]
    return names, missing_note(missing) if missing else None


_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"{_STATUS} has no {field}")


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc), so that a call
    reusing them shows in the resident set."""
    name = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    if trim is not None:
        trim(0)


def rss_peak_bytes(work: Callable[[], object]) -> int | None:
    """How far the process's resident set rose above its size at the start during
    ``work()``: Linux's high-water mark (``VmHWM``), reset by writing 5 to
    ``/proc/self/clear_refs``. ``None`` where that is not available.

    It counts whole pages of everything the process touched (Python objects,
    allocator caches, compiler buffers), and misses memory reused from pages
    that were already resident.

    >>> import numpy as np
    >>> peak = rss_peak_bytes(lambda: np.ones(2**23).sum())
    >>> peak is None or peak > 2**25
    True
    """
    gc.collect()
    _trim_heap()
    try:
        _CLEAR_REFS.write_text("5")
        start = _status_bytes("VmRSS")
    except OSError:
        return None
    work()
    return max(0, _status_bytes("VmHWM") - start)
