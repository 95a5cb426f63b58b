"""The performance targets, measured side by side in one run.

Five targets, each a set of entries (adcompare's modes, hand-written numpy,
the installed peers) computing the same derivative of the same problem:

a. reverse mode on a 200-op elementwise chain on a size-1 array, forward
   plus backward time per op, eager and as a replayed tape
   (:func:`adcompare.compile`, also shown in b and d);
b. Rosenbrock's gradient at n = 10⁶, time ÷ plain numpy f's time;
c. Rosenbrock's full gradient by forward mode at n = 1000, in ms;
d. the MLP loss's gradient over all weights ÷ its numpy forward time;
e. ``jacobian(mode="auto")`` against ``jacfwd`` and ``jacrev`` at three
   shapes, auto ÷ the faster of the two.

Every entry's result is checked against adcompare's derivative before it
is timed (:func:`~adcompare.bench.harness.measure.check_derivative`); an entry that
disagrees is reported as wrong, with no time. Times are medians of repeats
with one BLAS thread (and one torch thread); every ratio comes from this
run.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass

from threadpoolctl import threadpool_limits

import adcompare as ad
from adcompare.bench.harness.measure import check_derivative, time_calls
from adcompare.bench.harness.modes import MODES, Mode
from adcompare.bench.peers import PEER_MODES, PeerMode
from adcompare.bench.problems import Instance, get_problem
from adcompare.bench.problems.mlp import make_mlp
from adcompare.bench.targets import problems as target_problems

__all__ = [
    "SMALL",
    "Settings",
    "TargetCase",
    "TargetSizes",
    "measure_entry",
    "measure_targets",
    "replay_mode",
    "target_cases",
]


@dataclass(frozen=True)
class TargetSizes:
    """The sizes of the five targets (the issue's by default)."""

    chain_ops: int = 200
    rosenbrock_n: int = 10**6
    forward_n: int = 1000
    mlp: tuple[int, int, int, int] = (64, 784, 128, 10)
    jacobian: tuple[tuple[int, int], ...] = ((1000, 1), (1, 1000), (100, 100))


#: Tiny sizes: a smoke run of every target in seconds.
SMALL = TargetSizes(
    chain_ops=20,
    rosenbrock_n=64,
    forward_n=16,
    mlp=(4, 8, 6, 3),
    jacobian=((16, 1), (1, 16), (4, 4)),
)


@dataclass(frozen=True)
class Settings:
    """How hard to time each entry: ``repeats`` timed repeats within ``budget`` seconds."""

    repeats: int = 7
    budget: float = 4.0
    min_repeat_time: float = 0.01


def replay_mode() -> Mode:
    """adcompare's replayed tape (:func:`adcompare.compile`) as a mode.

    The recording happens in ``prepare``, once, like a jit's compilation; the
    work is one replay of the forward and reverse sweeps.

    >>> replay_mode().label
    'adcompare replayed tape'
    """

    def prepare(instance: Instance) -> Callable:
        f, x = instance.on(ad), instance.x
        compiled = ad.compile(f, x)
        return lambda: compiled.value_and_grad(x)[1]

    return Mode("replay", "adcompare replayed tape", prepare)


def _handwritten(label: str, gradient: Callable) -> Mode:
    return Mode("handwritten", label, lambda instance: lambda: gradient(instance.x))


def _auto_mode() -> Mode:
    def prepare(instance: Instance) -> Callable:
        jacobian, x = ad.jacobian(instance.on(ad), mode="auto"), instance.x
        return lambda: jacobian(x)

    return Mode("auto", 'jacobian(mode="auto")', prepare)


def measure_entry(
    instance: Instance, mode: Mode | PeerMode, library: str, settings: Settings
) -> dict:
    """One entry: checked first, then timed. ``status`` is ``ok``, ``skipped``
    (its library is missing), ``wrong`` (its derivative disagrees: no time
    is reported) or ``error``.

    >>> from adcompare.bench.targets.problems import chain
    >>> entry = measure_entry(chain(4), MODES["reverse"], "adcompare", Settings(repeats=1))
    >>> entry["status"], entry["check"]["ok"], entry["seconds"] > 0
    ('ok', True, True)
    """
    entry = {"mode": mode.name, "label": mode.label, "library": library}
    reason = mode.unavailable(instance)
    if reason:
        return {**entry, "status": "skipped", "reason": reason}
    try:
        work = mode.prepare(instance)
        start = time.perf_counter()
        result = work()
        entry["first_call"] = time.perf_counter() - start
        entry["check"] = check_derivative(instance, mode, result)
        if entry["check"] and not entry["check"]["ok"]:
            return {**entry, "status": "wrong"}
        timing, _ = time_calls(
            work,
            repeats=settings.repeats,
            budget=settings.budget,
            min_repeat_time=settings.min_repeat_time,
        )
    except Exception as error:
        return {
            **entry,
            "status": "error",
            "error": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc(limit=-3),
        }
    return {
        **entry,
        "status": "ok",
        "seconds": timing["median"],
        "iqr": timing["iqr"],
        "repeats": timing["repeats"],
    }


def _entries(instance: Instance, choices, settings: Settings) -> list[dict]:
    return [measure_entry(instance, mode, library, settings) for library, mode in choices]


def _peers(*names: str) -> list[tuple[str, PeerMode]]:
    return [(PEER_MODES[name].library, PEER_MODES[name]) for name in names]


def _seconds(entries: list[dict], mode: str) -> float | None:
    for entry in entries:
        if entry["mode"] == mode and entry["status"] == "ok":
            return entry["seconds"]
    return None


def _with_values(entries: list[dict], scale: Callable[[float], float]) -> list[dict]:
    return [
        {**entry, "value": scale(entry["seconds"])} if entry["status"] == "ok" else entry
        for entry in entries
    ]


def _claim(text: str, met: bool | None) -> dict:
    return {"claim": text, "met": met}


@dataclass(frozen=True)
class TargetCase:
    """One target's problem and its entries, as ``(library, mode)`` pairs; the
    ratio targets (b, d) divide by plain numpy f, which is not an entry."""

    instance: Instance
    choices: list[tuple[str, Mode | PeerMode]]


def target_cases(sizes: TargetSizes = TargetSizes()) -> dict[str, TargetCase]:
    """Every target's case by id (``a``, ``b``, ``c``, ``d``, ``e1``, ...), for
    :func:`measure_targets` and the pytest-benchmark suite alike.

    >>> cases = target_cases(SMALL)
    >>> list(cases), cases["c"].instance.n
    (['a', 'b', 'c', 'd', 'e1', 'e2', 'e3'], 16)
    """
    mlp, mlp_gradient = make_mlp(*sizes.mlp)
    cases = {
        "a": TargetCase(
            target_problems.chain(sizes.chain_ops),
            [
                ("adcompare", MODES["reverse"]),
                ("adcompare", replay_mode()),
                *_peers("torch:reverse", "autograd:grad", "jax:grad", "jax:grad+jit"),
            ],
        ),
        "b": TargetCase(
            target_problems.rosenbrock(sizes.rosenbrock_n),
            [
                ("adcompare", MODES["reverse"]),
                ("adcompare", replay_mode()),
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
                ("adcompare", MODES["reverse"]),
                ("adcompare", replay_mode()),
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
    return cases


def _chain_row(case: TargetCase, sizes: TargetSizes, settings: Settings) -> dict:
    instance, choices = case.instance, case.choices
    entries = _with_values(
        _entries(instance, choices, settings), lambda s: 1e6 * s / sizes.chain_ops
    )
    per_op = {e["mode"]: e["value"] for e in entries if "value" in e}
    claims = []
    if "reverse" in per_op and "torch:reverse" in per_op:
        limit = per_op["torch:reverse"] / 2
        claims.append(
            _claim(
                f"adcompare reverse {per_op['reverse']:.3g} µs, "
                f"limit {limit:.3g} µs (½ torch eager)",
                per_op["reverse"] <= limit,
            )
        )
    if "replay" in per_op:
        claims.append(
            _claim(f"replayed tape {per_op['replay']:.3g} µs, limit 2 µs", per_op["replay"] <= 2.0)
        )
    return {
        "id": "a",
        "what": f"reverse mode, {sizes.chain_ops}-op elementwise chain on size-1 arrays, "
        "forward + backward time per op",
        "unit": "µs/op",
        "target": "at most half of torch eager's per-op time (replayed tape ≤ 2 µs)",
        "entries": entries,
        "claims": claims,
    }


def _ratio_row(row_id: str, what: str, case: TargetCase, settings: Settings, limit: float) -> dict:
    """A target measured as time ÷ plain numpy f's time, adcompare's reverse ≤ ``limit``."""
    baseline = measure_entry(case.instance, MODES["f"], "numpy", settings)
    entries = _entries(case.instance, case.choices, settings)
    claims = []
    if baseline["status"] == "ok":
        entries = _with_values(entries, lambda s: s / baseline["seconds"])
        ratio = next((e["value"] for e in entries if e["mode"] == "reverse" and "value" in e), None)
        if ratio is not None:
            claims.append(_claim(f"adcompare reverse {ratio:.3g}, limit {limit:g}", ratio <= limit))
    return {
        "id": row_id,
        "what": what,
        "unit": "× numpy f",
        "target": f"≤ {limit:g}",
        "baseline": baseline,
        "entries": entries,
        "claims": claims,
    }


def _rosenbrock_row(case: TargetCase, sizes: TargetSizes, settings: Settings) -> dict:
    what = f"Rosenbrock gradient at n = {case.instance.n:,}, time ÷ numpy f time"
    return _ratio_row("b", what, case, settings, 2.5)


def _mlp_row(case: TargetCase, sizes: TargetSizes, settings: Settings) -> dict:
    batch, inputs, hidden, classes = sizes.mlp
    what = (
        f"MLP loss (batch {batch}, {inputs}-{hidden}-{classes}, tanh, softmax cross-entropy) "
        f"gradient over all {case.instance.n:,} weights ÷ numpy forward time"
    )
    return _ratio_row("d", what, case, settings, 3.0)


def _forward_row(case: TargetCase, sizes: TargetSizes, settings: Settings) -> dict:
    n = case.instance.n
    entries = _with_values(_entries(case.instance, case.choices, settings), lambda s: 1e3 * s)
    ours, torch = _seconds(entries, "forward"), _seconds(entries, "torch:jacfwd")
    claims = []
    if ours is not None and torch is not None:
        claims.append(
            _claim(
                f"adcompare jacfwd {1e3 * ours:.3g} ms, torch.func.jacfwd {1e3 * torch:.3g} ms",
                ours < torch,
            )
        )
    return {
        "id": "c",
        "what": f"Rosenbrock full gradient by forward mode at n = {n:,} (lanes)",
        "unit": "ms",
        "target": "faster than torch.func.jacfwd",
        "entries": entries,
        "claims": claims,
    }


def _jacobian_row(row_id: str, case: TargetCase, settings: Settings) -> dict:
    instance = case.instance
    entries = _with_values(_entries(instance, case.choices, settings), lambda s: 1e3 * s)
    auto, forward, reverse = (_seconds(entries, mode) for mode in ("auto", "forward", "reverse"))
    row = {
        "id": row_id,
        "what": f'jacobian(mode="auto") on tanh_map at (n, m) = ({instance.n}, {instance.m})',
        "unit": "ms",
        "target": "auto within 10 % of the faster of forward and reverse",
        "entries": entries,
        "claims": [],
    }
    if None not in (auto, forward, reverse):
        row["ratio"] = auto / min(forward, reverse)
        row["claims"].append(
            _claim(f"auto ÷ min(fwd, rev) = {row['ratio']:.3f}, limit 1.10", row["ratio"] <= 1.10)
        )
    return row


def measure_targets(
    sizes: TargetSizes = TargetSizes(),
    settings: Settings = Settings(),
    *,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Measure every target; returns ``{"sizes", "settings", "rows"}``, JSON-ready.

    >>> result = measure_targets(SMALL, Settings(repeats=1, budget=0.1))
    >>> [row["id"] for row in result["rows"]]
    ['a', 'b', 'c', 'd', 'e1', 'e2', 'e3']
    """
    builders = {"a": _chain_row, "b": _rosenbrock_row, "c": _forward_row, "d": _mlp_row}
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for row_id, case in target_cases(sizes).items():
            if row_id in builders:
                rows.append(builders[row_id](case, sizes, settings))
            else:
                rows.append(_jacobian_row(row_id, case, settings))
            if progress:
                progress(f"measured target {row_id}")
    return {"sizes": asdict(sizes), "settings": asdict(settings), "rows": rows}
