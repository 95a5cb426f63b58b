"""What the performance targets measure: each target's problem and its entries.

The targets, each a set of entries (adcompare's modes, hand-written
numpy, the installed peers) computing the same derivative of the same problem:

a. reverse mode on a 200-op elementwise chain on a size-1 array, forward
   plus backward time per op, eager and as a replayed tape
   (:func:`adcompare.compile`); the replay also as a plain ``compiled.grad``
   call, as ``compiled.value_and_grad`` and as the recorded program alone, to
   show where a replayed call's time goes;
b. Rosenbrock's gradient at n = 10⁶, time ÷ plain numpy f's time;
c. Rosenbrock's full gradient by forward mode at n = 1000, in ms;
d. the MLP loss's gradient over all weights ÷ its numpy forward time;
e. ``jacobian(mode="auto")`` against ``jacfwd`` and ``jacrev`` at three
   shapes, auto ÷ the faster of the two;
f. GradBench's GMM gradient ÷ its objective in plain numpy, eager and
   replayed, reverse and forward;
g. ADBench's LSTM gradient ÷ its objective in plain numpy, eager and replayed.

The ratio targets (:data:`RATIO_TARGETS`) have plain numpy f first; f and g
also time their objective run through adcompare's op set. The peers cannot
run f and g (their objectives are written against adcompare's op set): those
entries are skipped, saying so.

:mod:`~adcompare.bench.targets.measure` measures every entry as a cell of a
results file; :mod:`~adcompare.bench.targets.view` reads the targets' table
off those cells.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import adcompare as ad
from adcompare.bench.harness.modes import MODES, Mode
from adcompare.bench.peers import PEER_MODES, PeerMode
from adcompare.bench.problems import Instance, get_problem
from adcompare.bench.problems.mlp import make_mlp
from adcompare.bench.targets import problems as target_problems

__all__ = [
    "FULL",
    "RATIO_TARGETS",
    "SMALL",
    "TargetCase",
    "TargetSizes",
    "replayed",
    "target_cases",
]

#: The targets measured as time ÷ plain numpy f's time: f is one of their entries.
RATIO_TARGETS = ("b", "d", "f", "g")


@dataclass(frozen=True)
class TargetSizes:
    """The sizes of the targets (the full sizes by default); ``lstm_characters`` cuts the
    LSTM's sequence short (``None``: all of it)."""

    chain_ops: int = 200
    rosenbrock_n: int = 10**6
    forward_n: int = 1000
    mlp: tuple[int, int, int, int] = (64, 784, 128, 10)
    jacobian: tuple[tuple[int, int], ...] = ((1000, 1), (1, 1000), (100, 100))
    lstm_characters: int | None = None  # all 1024


#: The full sizes, measured by ``adcompare targets``.
FULL = TargetSizes()

#: Tiny sizes: a smoke run of every target in seconds.
SMALL = TargetSizes(
    chain_ops=20,
    rosenbrock_n=64,
    forward_n=16,
    mlp=(4, 8, 6, 3),
    jacobian=((16, 1), (1, 16), (4, 4)),
    lstm_characters=3,
)


def _handwritten(label: str, gradient: Callable) -> Mode:
    return Mode("handwritten", label, lambda instance: lambda: gradient(instance.x), counted=False)


def _op_set_objective() -> Mode:
    def prepare(instance: Instance) -> Callable:
        f, x = instance.on(ad), instance.x
        return lambda: f(x)

    return Mode("f-op-set", "f through the op set", prepare, derivative=False, order=0)


def _replay_call(name: str, label: str, call: Callable) -> Mode:
    """A replayed gradient called another way: ``call(compiled, x)`` is the work,
    compiled while preparing (not timed)."""

    def prepare(instance: Instance) -> Callable:
        return call(ad.compile(instance.on(ad), instance.x), instance.x)

    return Mode(f"reverse-replay:{name}", f"replayed, {label}", prepare, counted=False)


#: The replayed chain's gradient called three ways besides the harness's mode: the gap
#: from the program alone to the harness's figure is the per-call work around the replay.
REPLAY_CALLS = [
    _replay_call("grad", "compiled.grad(x)", lambda c, x: functools.partial(c.grad, x)),
    _replay_call(
        "value_and_grad", "compiled.value_and_grad(x)", lambda c, x: lambda: c.value_and_grad(x)[1]
    ),
    _replay_call("program", "program alone", lambda c, x: lambda: c.program.run(x)[1]),
]


def replayed(mode: Mode | PeerMode) -> bool:
    """Whether ``mode`` replays a recording or runs jitted code: such an entry is
    warmed up before it is timed (CPython specialises bytecode after 8 calls).

    >>> replayed(MODES["reverse-replay"]), replayed(MODES["reverse"]), replayed(REPLAY_CALLS[0])
    (True, False, True)
    """
    return "replay" in mode.name or getattr(mode, "jit", False)


def _auto_mode() -> Mode:
    def prepare(instance: Instance) -> Callable:
        jacobian, x = ad.jacobian(instance.on(ad), mode="auto"), instance.x
        return lambda: jacobian(x)

    return Mode("auto", 'jacobian(mode="auto")', prepare)


def _peers(*names: str) -> list[tuple[str, PeerMode]]:
    return [(PEER_MODES[name].library, PEER_MODES[name]) for name in names]


@dataclass(frozen=True)
class TargetCase:
    """One target's problem and its entries, as ``(library, mode)`` pairs; the
    ratio targets (:data:`RATIO_TARGETS`) have plain numpy f first."""

    instance: Instance
    choices: list[tuple[str, Mode | PeerMode]]


def _real_cases(sizes: TargetSizes) -> dict[str, TargetCase]:
    """f and g: the GMM and LSTM gradients ÷ their objectives in plain numpy."""
    gradient_peers = _peers("torch:reverse", "autograd:grad", "jax:grad", "jax:grad+jit")
    objectives = [("numpy", MODES["f"]), ("adcompare", _op_set_objective())]
    reverse = [("adcompare", MODES[name]) for name in ("reverse", "reverse-replay")]
    forward = [("adcompare", MODES[name]) for name in ("forward", "forward-replay")]
    return {
        "f": TargetCase(target_problems.gmm(), objectives + reverse + forward + gradient_peers),
        "g": TargetCase(
            target_problems.lstm(sizes.lstm_characters), objectives + reverse + gradient_peers
        ),
    }


def target_cases(sizes: TargetSizes = FULL) -> dict[str, TargetCase]:
    """Every target's case by id (``a``, ``b``, ``c``, ``d``, ``e1``, ...), for
    ``adcompare targets`` and the pytest-benchmark suite alike.

    >>> cases = target_cases(SMALL)
    >>> list(cases), cases["c"].instance.n
    (['a', 'b', 'c', 'd', 'e1', 'e2', 'e3', 'f', 'g'], 16)
    """
    mlp, mlp_gradient = make_mlp(*sizes.mlp)
    cases = {
        "a": TargetCase(
            target_problems.chain(sizes.chain_ops),
            [
                ("adcompare", MODES["reverse"]),
                ("adcompare", MODES["reverse-replay"]),
                *(("adcompare", mode) for mode in REPLAY_CALLS),
                *_peers("torch:reverse", "autograd:grad", "jax:grad", "jax:grad+jit"),
            ],
        ),
        "b": TargetCase(
            target_problems.rosenbrock(sizes.rosenbrock_n),
            [
                ("numpy", MODES["f"]),
                ("adcompare", MODES["reverse"]),
                ("adcompare", MODES["reverse-replay"]),
                ("numpy", _handwritten("numpy by hand", target_problems.rosenbrock_gradient)),
                *_peers("torch:reverse", "autograd:grad", "jax:grad", "jax:grad+jit"),
            ],
        ),
        "c": TargetCase(
            target_problems.rosenbrock(sizes.forward_n),
            [
                ("adcompare", MODES["forward"]),
                *_peers("torch:jacfwd", "jax:jacfwd+jit", "autograd:jvp-loop"),
            ],
        ),
        "d": TargetCase(
            mlp,
            [
                ("numpy", MODES["f"]),
                ("adcompare", MODES["reverse"]),
                ("adcompare", MODES["reverse-replay"]),
                ("numpy", _handwritten("numpy backprop by hand", mlp_gradient)),
                *_peers("torch:reverse", "autograd:grad"),
            ],
        ),
    }
    for index, (n, m) in enumerate(sizes.jacobian, start=1):
        cases[f"e{index}"] = TargetCase(
            get_problem("tanh_map").build(n=n, m=m),
            [("adcompare", mode) for mode in (_auto_mode(), MODES["forward"], MODES["reverse"])],
        )
    return cases | _real_cases(sizes)
