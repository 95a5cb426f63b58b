"""The ways of computing a problem that the benchmark measures.

Each mode turns an :class:`~adcompare.bench.problems.Instance` into a
function of no arguments that does the work once: plain f, or the full
m×n Jacobian (an n-vector gradient when m = 1) by one of the engines.

=============  ===================================================================
``f``          plain f with numpy: the baseline every cost is divided by
``forward1``   forward mode, one lane: pure dual numbers, n passes
``forward``    forward mode, chunked lanes: ``jacfwd``'s default chunk
``reverse1``   reverse mode, one row: one recorded pass, m backward sweeps
``reverse``    reverse mode, chunked rows: ``jacrev``'s default chunk of cotangent lanes
               (the same rule as forward's lanes), so the two modes batch alike
``reverse-reference``  reverse mode by the plain reference sweep
               (:func:`adcompare.engines.reverse.reference_jacrev`), one row a sweep:
               beside ``reverse1`` it shows what the optimised sweep's tricks buy
``reverse-replay``  reverse mode replayed by ``adcompare.compile``: the gradient, or for
               m > 1 one replay of f and its sweep per output row (uᵀJ, u = eᵢ)
``forward-replay``  forward mode replayed by ``adcompare.compile(mode="forward")``:
               ``jacfwd``'s chunks of lanes, one replay each
``fd``         central finite differences of plain f: 2n evaluations
``symbolic``   exact derivatives by SymPy, for small sizes, when
               ``adcompare.symbolic`` is installed
``eliminate:O``  vertex elimination on the linearized graph in order ``O``
               (:data:`~adcompare.elimination.ORDERS`: ``forward``, ``reverse``,
               ``markowitz``, ``reverse-markowitz``, ``min-fill``, ``optimal``); its
               cell's counts add ``multiplications`` and ``additions``, the
               elimination's own, deterministic. Measured when named, or by the
               group ``eliminate``
=============  ===================================================================

The replay modes record on their first call, as a peer's ``jit`` compiles on
its first: the harness's warm-up call (``time["warmup"]``) is the recording
plus one replay, the median the replay alone. A replay applies no op through
adcompare's dispatch, so its counts are not taken (``counted=False``); eager
time ÷ replayed time is how much of a mode's time was interpretation.

``per-example:loop`` and ``per-example:vmap`` (:mod:`~adcompare.bench.problems.per_example`)
compute the per-example gradients of the ``per_example`` problem; ``ode:tape``,
``ode:forward`` and ``ode:adjoint`` (:mod:`~adcompare.bench.problems.ode`) the
Jacobians of the ODE problems by odeint's three methods. They are measured
only when named (or by the groups ``per-example`` and ``ode``).

Second-order modes (:mod:`~adcompare.bench.harness.second_order`), on scalar-valued
f only: ``hvp:C``, one Hessian-vector product, and ``hessian:C``, the full
Hessian (n HVPs), for each composition C of
:data:`~adcompare.transforms.HESSIAN_MODES` (``fwd-over-rev``,
``rev-over-rev``, ``fwd-over-fwd``, ``rev-over-fwd``). The groups ``hvp``,
``hessian`` and ``second-order`` name several modes at once
(:func:`expand_modes`).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import adcompare as ad
from adcompare import transforms
from adcompare.bench.harness import second_order
from adcompare.bench.peers import (
    FAILED_PEERS,
    PEER_MODES,
    PeerMode,
    load_peer_entry_points,
)
from adcompare.bench.problems import Instance, ode, per_example
from adcompare.check import finite_differences
from adcompare.elimination import MAX_EXACT, ORDERS, eliminate, linearize
from adcompare.engines.reverse import reference_jacrev
from adcompare.transforms import HESSIAN_MODES

__all__ = [
    "MODES",
    "MODE_GROUPS",
    "Mode",
    "expand_modes",
    "get_mode",
    "mode_label",
    "symbolic_available",
]

#: Symbolic differentiation is measured only while n·m stays this small,
SYMBOLIC_MAX_ENTRIES = 64
#: and while f's element work (one plain evaluation, counted) stays this small:
#: SymPy's cost grows with every element it touches, not only with n and m.
SYMBOLIC_MAX_WORK = 20_000


@dataclass(frozen=True)
class Mode:
    """A way of computing: ``prepare(instance)`` returns the zero-argument work.

    ``order`` is the order of the derivative computed: 0 for plain f, 1 for
    Jacobians and gradients, 2 for HVPs and Hessians. ``counted``: adcompare's
    counters see the work; ``memory_traced``: tracemalloc sees its arrays (both
    false for most peers, :mod:`~adcompare.bench.peers`). ``by_default``: a
    sweep that names no modes measures it (the replay modes are asked for by
    name, so the quick report stays a one-minute read).
    """

    name: str
    label: str
    prepare: Callable[[Instance], Callable[[], np.ndarray]]
    derivative: bool = True
    order: int = 1
    counted: bool = True
    memory_traced: bool = True
    by_default: bool = True

    def unavailable(self, instance: Instance) -> str | None:
        """Why this mode cannot run on ``instance``, or ``None`` if it can.

        >>> get_mode("forward").unavailable(None) is None
        True
        """
        if self.order == 2:
            return second_order.unavailable_reason(self.name.split(":")[0], instance)
        if self.name in per_example.PREPARERS:
            return per_example.unavailable_reason(instance)
        if self.name in ode.PREPARERS:
            return ode.unavailable_reason(instance)
        if self.name == "eliminate:optimal":
            return _exact_search_unavailable(instance)
        if self.name == "reverse1" and instance.m == 1:
            return "with one output, one row a sweep is the chunked sweep: see reverse"
        if self.name != "symbolic":
            return None
        if not symbolic_available():
            return "symbolic mode is not installed (adcompare.symbolic registers it)"
        if instance.n * instance.m > SYMBOLIC_MAX_ENTRIES:
            return (
                f"symbolic mode runs only while n·m ≤ {SYMBOLIC_MAX_ENTRIES} "
                f"(here {instance.n}·{instance.m})"
            )
        work = plain_work(instance)
        if work > SYMBOLIC_MAX_WORK:
            return (
                f"symbolic mode runs only while f's element work ≤ {SYMBOLIC_MAX_WORK:,} "
                f"(here {work:,})"
            )
        return None


def plain_cost(instance: Instance) -> ad.Cost:
    """The counts of one evaluation of f, run on a tensor that records nothing,
    so that numpy's own operators on it (``x[1:]``, ``x**2``) pass through the
    op set and are counted too.

    >>> from adcompare.bench.problems import get_problem
    >>> plain_cost(get_problem("rosenbrock").build(n=4)).elements["numpy"] > 0
    True
    """
    with ad.count() as cost:
        instance.on(ad)(ad.Tensor(instance.x))
    return cost


def plain_work(instance: Instance) -> int:
    """The element work of one evaluation of f (see :func:`plain_cost`)."""
    return plain_cost(instance).elements["numpy"]


def symbolic_available() -> bool:
    """Whether ``mode="symbolic"`` is registered with the transforms.

    >>> isinstance(symbolic_available(), bool)
    True
    """
    if "symbolic" not in transforms.registered_modes():
        try:
            importlib.import_module("adcompare.symbolic")
        except ImportError:
            return False
    return "symbolic" in transforms.registered_modes()


def as_matrix(jacobian, instance: Instance) -> np.ndarray:
    """A Jacobian in any of the engines' shapes as an ``m × n`` float array.

    >>> as_matrix([1.0, 2.0], type("I", (), {"m": 1, "n": 2})()).shape
    (1, 2)
    """
    return np.asarray(jacobian, dtype=np.float64).reshape(instance.m, instance.n)


def _plain(instance: Instance):
    f, x = instance.on(np), instance.x
    return lambda: f(x)


def _forward_one_lane(instance: Instance):
    jac, x = ad.jacfwd(instance.on(ad), chunk_size=1), instance.x
    return lambda: jac(x)


def _forward_chunked(instance: Instance):
    jac, x = ad.jacfwd(instance.on(ad)), instance.x
    return lambda: jac(x)


def _reverse_one_row(instance: Instance):
    jac, x = ad.jacrev(instance.on(ad), chunk_size=1), instance.x
    return lambda: jac(x)


def _reverse_chunked(instance: Instance):
    jac, x = ad.jacrev(instance.on(ad)), instance.x
    return lambda: jac(x)


def _reverse_reference(instance: Instance):
    f, x = instance.on(ad), instance.x
    return lambda: reference_jacrev(f, x)


def _on_first_call(compile_work: Callable[[], Callable[[], np.ndarray]]):
    """Work that compiles on its first call and replays on every call."""
    compiled = []

    def work():
        if not compiled:
            compiled.append(compile_work())
        return compiled[0]()

    return work


def _reverse_replay(instance: Instance):
    f, x = instance.on(ad), instance.x
    if instance.m == 1:
        return _on_first_call(lambda: functools.partial(ad.compile(f, x).grad, x))
    rows = np.eye(instance.m)

    def compile_rows():
        compiled = ad.compile(lambda x, u: ad.sum(f(x) * u), x, rows[0])
        return lambda: np.stack([compiled.grad(x, u) for u in rows])

    return _on_first_call(compile_rows)


def _forward_replay(instance: Instance):
    f, x = instance.on(ad), instance.x
    return _on_first_call(lambda: functools.partial(ad.compile(f, x, mode="forward").jacobian, x))


def _finite_differences(instance: Instance):
    jac, x = finite_differences(instance.on(np)), instance.x
    return lambda: jac(x)


def _symbolic(instance: Instance):
    jac, x = ad.jacobian(instance.on(ad), mode="symbolic"), instance.x
    return lambda: jac(x)


def _eliminate(order: str):
    """The preparer of ``eliminate:order``: record, linearize, eliminate; the work keeps the
    last call's multiplications and additions as ``work.counts`` for the cell."""

    def prepare(instance: Instance):
        f, x = instance.on(ad), instance.x

        def work():
            done = eliminate(linearize(f, x), order)
            work.counts = {"multiplications": done.multiplications, "additions": done.additions}
            return done.jacobian

        return work

    return prepare


def _exact_search_unavailable(instance: Instance) -> str | None:
    found = len(linearize(instance.on(ad), instance.x).intermediates)
    if found <= MAX_EXACT:
        return None
    return f"the exact search takes at most {MAX_EXACT} intermediates (here {found})"


def _elimination_modes() -> list[Mode]:
    return [
        Mode(f"eliminate:{order}", f"eliminate, {order}", _eliminate(order), by_default=False)
        for order in ORDERS
    ]


def _second_order_modes() -> list[Mode]:
    preparers = {"hvp": second_order.prepare_hvp, "hessian": second_order.prepare_hessian}
    return [
        Mode(
            f"{kind}:{composition}",
            f"{label}, {composition}",
            preparers[kind](composition),
            order=2,
        )
        for kind, label in second_order.KINDS.items()
        for composition in HESSIAN_MODES
    ]


MODES: dict[str, Mode] = {
    m.name: m
    for m in [
        Mode("f", "f (numpy)", _plain, derivative=False, order=0),
        Mode("forward1", "forward, 1 lane", _forward_one_lane),
        Mode("forward", "forward, chunked", _forward_chunked),
        Mode("reverse1", "reverse, 1 row", _reverse_one_row),
        Mode("reverse", "reverse", _reverse_chunked),
        Mode("reverse-reference", "reverse, reference sweep", _reverse_reference, by_default=False),
        Mode(
            "reverse-replay", "reverse, replayed", _reverse_replay, counted=False, by_default=False
        ),
        Mode(
            "forward-replay", "forward, replayed", _forward_replay, counted=False, by_default=False
        ),
        Mode("fd", "finite differences", _finite_differences),
        Mode("symbolic", "symbolic", _symbolic),
        *_second_order_modes(),
        *_elimination_modes(),
    ]
}

#: Measured only when named (alone or by the ``per-example`` and ``ode`` groups): no
#: other problem has examples to map over, or an ODE to solve.
NAMED_MODES: dict[str, Mode] = {
    name: Mode(name, label, prepare)
    for name, (label, prepare) in (per_example.PREPARERS | ode.PREPARERS).items()
}

#: Names that stand for several modes on the command line.
MODE_GROUPS: dict[str, tuple[str, ...]] = {
    "hvp": second_order.second_order_mode_names("hvp"),
    "hessian": second_order.second_order_mode_names("hessian"),
    "second-order": second_order.second_order_mode_names("hvp")
    + second_order.second_order_mode_names("hessian"),
    "per-example": per_example.MODE_NAMES,
    "ode": ode.MODE_NAMES,
    "eliminate": tuple(f"eliminate:{order}" for order in ORDERS),
}


def expand_modes(names: list[str]) -> list[str]:
    """Mode names with each group replaced by its modes, in order, without repeats.

    >>> expand_modes(["reverse", "hvp"])
    ['reverse', 'hvp:fwd-over-rev', 'hvp:rev-over-rev', 'hvp:fwd-over-fwd', 'hvp:rev-over-fwd']
    """
    expanded = [mode for name in names for mode in MODE_GROUPS.get(name, (name,))]
    return list(dict.fromkeys(expanded))


def get_mode(name: str) -> Mode | PeerMode:
    """The mode called ``name`` (adcompare's or a peer's), with a clear error for an
    unknown one.

    >>> get_mode("reverse").label, get_mode("torch:reverse").library
    ('reverse', 'torch')
    """
    found = MODES.get(name) or NAMED_MODES.get(name) or PEER_MODES.get(name)
    if found is None:
        load_peer_entry_points()
        found = PEER_MODES.get(name)
    if found is None:
        raise ValueError(
            f"unknown mode {name!r}; the modes are {', '.join([*MODES, *NAMED_MODES])}, "
            f"the groups "
            f"{', '.join(MODE_GROUPS)}, and the peers' {', '.join(PEER_MODES)}"
            + "".join(f"; {failure}" for failure in FAILED_PEERS.values())
        )
    return found


def mode_label(name: str) -> str:
    """The label of the mode called ``name``; the name itself for an unknown one.

    >>> mode_label("forward1"), mode_label("jax:grad+jit"), mode_label("retired")
    ('forward, 1 lane', 'JAX grad + jit', 'retired')
    """
    found = MODES.get(name) or NAMED_MODES.get(name) or PEER_MODES.get(name)
    return found.label if found else name
