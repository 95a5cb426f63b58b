"""Peers: the same problems differentiated by JAX, PyTorch and HIPS autograd.

Each peer mode is a bench mode like adcompare's own (``name``, ``label``,
``prepare(instance)`` returning the zero-argument work), so the sweep,
the results, the derivative check and the plots treat it as any other:

=====================  ==========================================================
``jax:grad``           ``jax.grad`` (scalar f only); ``jax:grad+jit`` jitted
``jax:jacfwd``         ``jax.jacfwd``; ``jax:jacfwd+jit`` jitted
``jax:jacrev``         ``jax.jacrev``; ``jax:jacrev+jit`` jitted
``torch:reverse``      eager ``backward`` (scalar f only)
``torch:jacfwd``       ``torch.func.jacfwd``
``torch:jacrev``       ``torch.func.jacrev``
``autograd:grad``      ``autograd.grad`` (scalar f only)
``autograd:jvp-loop``  ``autograd.make_jvp`` along each of the n basis vectors
=====================  ==========================================================

Peers are optional: a mode whose library is not installed is unavailable,
with a note saying how to install it. Third-party packages add peers without
editing adcompare, through the entry-point group ``adcompare.peers``
(:func:`load_peer_entry_points`, called when a mode is looked up). All run in float64 on one thread.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adcompare.bench.peers import autograd as peers_autograd
from adcompare.bench.peers import jax as peers_jax
from adcompare.bench.peers import torch as peers_torch
from adcompare.bench.problems import Instance
from adcompare.bench.problems.registry import loaded_objects

__all__ = [
    "FAILED_PEERS",
    "INSTALL_HINT",
    "LIBRARIES",
    "PEER_ENTRY_POINT_GROUP",
    "PEER_MODES",
    "PeerMode",
    "available_peer_modes",
    "is_installed",
    "load_peer_entry_points",
    "missing_note",
]

#: The peer libraries, in the order their modes are listed.
LIBRARIES = ("jax", "torch", "autograd")
INSTALL_HINT = 'pip install -e ".[peers]"'


def is_installed(library: str) -> bool:
    """Whether ``library`` can be imported (without importing it).

    >>> is_installed("numpy"), is_installed("no_such_library")
    (True, False)
    """
    return importlib.util.find_spec(library) is not None


def missing_note(libraries: Sequence[str]) -> str:
    """The one line saying which peer libraries are missing and how to install them.

    >>> print(missing_note(["jax", "torch"]))  # doctest: +NORMALIZE_WHITESPACE
    peers: jax and torch are not installed, so their modes are skipped; install the peers
    with pip install -e ".[peers]"
    """
    names = " and ".join([", ".join(libraries[:-1]), libraries[-1]] if libraries[1:] else libraries)
    verb, their = ("are", "their") if libraries[1:] else ("is", "its")
    return (
        f"peers: {names} {verb} not installed, so {their} modes are skipped; install the peers "
        f"with {INSTALL_HINT}"
    )


@dataclass(frozen=True)
class PeerMode:
    """A mode computed by a peer library; the same interface as
    :class:`~adcompare.bench.harness.modes.Mode`.

    ``scalar_only`` modes (gradients) need m = 1. ``jit`` marks modes whose
    first call compiles. ``counterpart`` is the adcompare mode doing the same
    job (``"reverse"`` or ``"forward"``), which the report compares it with.
    Peers' work is not seen by adcompare's counters, so ``counted`` is false;
    tracemalloc sees only autograd's (numpy) memory.
    """

    name: str
    label: str
    library: str
    prepare: Callable[[Instance], Callable[[], object]]
    counterpart: str
    scalar_only: bool = False
    jit: bool = False
    derivative: bool = True
    order: int = 1
    counted: bool = False

    @property
    def memory_traced(self) -> bool:
        """Whether tracemalloc sees this library's arrays (numpy's only)."""
        return self.library == "autograd"

    def unavailable(self, instance: Instance | None) -> str | None:
        """Why this mode cannot run on ``instance``, or ``None`` if it can.

        >>> mode = PEER_MODES["autograd:grad"]
        >>> print(mode.unavailable(type("I", (), {"m": 3, "family": "jacobian"})()))
        autograd:grad computes gradients of scalar functions only (here m = 3)
        """
        if instance is not None and instance.family == "fixed":
            return (
                f"{self.name} runs only problems written against an array namespace; the "
                "ADBench and GradBench objectives use adcompare's op set directly"
            )
        if instance is not None and not getattr(instance, "namespaced", True):
            return (
                f"{self.name} runs only functions written against an array namespace: write "
                f"{instance.problem} as f(xp, x) and pass xp=True to bench.problem"
            )
        if instance is not None and self.scalar_only and instance.m != 1:
            return (
                f"{self.name} computes gradients of scalar functions only (here m = {instance.m})"
            )
        if not is_installed(self.library):
            return missing_note([self.library])
        return None


def _jax_modes() -> list[PeerMode]:
    return [
        PeerMode(
            f"jax:{transform}{'+jit' if jit else ''}",
            f"JAX {transform}{' + jit' if jit else ''}",
            "jax",
            peers_jax.preparer(transform, jit=jit),
            "forward" if transform == "jacfwd" else "reverse",
            scalar_only=transform == "grad",
            jit=jit,
        )
        for transform in ("grad", "jacfwd", "jacrev")
        for jit in (False, True)
    ]


PEER_MODES: dict[str, PeerMode] = {
    mode.name: mode
    for mode in [
        *_jax_modes(),
        PeerMode(
            "torch:reverse",
            "torch eager backward",
            "torch",
            peers_torch.prepare_reverse,
            "reverse",
            scalar_only=True,
        ),
        PeerMode(
            "torch:jacfwd", "torch.func.jacfwd", "torch", peers_torch.prepare_jacfwd, "forward"
        ),
        PeerMode(
            "torch:jacrev", "torch.func.jacrev", "torch", peers_torch.prepare_jacrev, "reverse"
        ),
        PeerMode(
            "autograd:grad",
            "autograd grad",
            "autograd",
            peers_autograd.prepare_grad,
            "reverse",
            scalar_only=True,
        ),
        PeerMode(
            "autograd:jvp-loop",
            "autograd make_jvp × n",
            "autograd",
            peers_autograd.prepare_jvp_loop,
            "forward",
        ),
    ]
}


#: Third-party peers enter through this entry-point group: each entry names a
#: :class:`PeerMode`, or an iterable of them (or a callable returning either).
PEER_ENTRY_POINT_GROUP = "adcompare.peers"
#: The sentences saying which peer entry points failed to load, by entry-point name.
FAILED_PEERS: dict[str, str] = {}


def load_peer_entry_points() -> None:
    """Add the modes of the ``adcompare.peers`` entry points not loaded yet to
    :data:`PEER_MODES`; one that fails to load is noted in :data:`FAILED_PEERS`.

    >>> load_peer_entry_points(); "jax:grad" in PEER_MODES
    True
    """
    for name, value in loaded_objects(PEER_ENTRY_POINT_GROUP, PeerMode):
        if isinstance(value, str):
            FAILED_PEERS[name] = value
        else:
            PEER_MODES[value.name] = value


def available_peer_modes() -> tuple[list[str], str | None]:
    """The names of the installed peers' modes, and the note on missing libraries
    (``None`` when every peer is installed).

    >>> names, note = available_peer_modes()
    >>> any(f" {PEER_MODES[name].library} " in (note or "") for name in names)
    False
    """
    load_peer_entry_points()
    names = [name for name, mode in PEER_MODES.items() if is_installed(mode.library)]
    missing = [library for library in LIBRARIES if not is_installed(library)]
    return names, missing_note(missing) if missing else None
