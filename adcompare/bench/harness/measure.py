"""Measure one cell: one problem, at one size, computed by one mode.

A cell gets, each in its own run so that one measurement does not disturb
another:

- wall time: a warm-up call, then ``repeats`` timed repeats of ``loops``
  calls each (loops chosen so a repeat lasts at least ``min_repeat_time``,
  repeats cut down to fit the time budget); median, IQR, min and the
  samples, and the CPU time of the same repeats (:class:`Timer`; the sweep
  takes the repeats of one size's modes in turn);
- the deterministic counts of :func:`adcompare.count` (op applications,
  element work per engine, passes, sweeps, tape records and bytes);
- peak memory, traced by :mod:`tracemalloc` in a separate, untimed call;
- a check of the derivative against the other engine at the same size: a
  forward-mode Jacobian J is compared with one reverse sweep uᵀJ, a
  reverse-mode one with one forward pass J·v; an HVP or a Hessian with an
  HVP by another composition of the two engines.

Plain f runs with numpy; its counts come from running the same code on an
untracked tensor, which reports every op as numpy work.
"""

from __future__ import annotations

import gc
import math
import time
import traceback
import tracemalloc
from collections.abc import Callable

import numpy as np

import adcompare as ad
from adcompare.bench.harness.modes import Mode, as_matrix, plain_cost
from adcompare.bench.harness.second_order import check_second_order
from adcompare.bench.problems import Instance, ProblemError, size_text
from adcompare.runtime import buffers

__all__ = [
    "RATIO_SHIFT",
    "WALL_OVER_CPU",
    "Timer",
    "check_derivative",
    "count_work",
    "describe_error",
    "measure_cell",
    "peak_memory",
    "refuse_non_finite",
    "time_calls",
]

#: Largest relative error a derivative may have against the other engine (odeint's
#: sensitivities and adjoint solve continuous equations: they meet the tape's derivative
#: to the solver's tolerance).
TOLERANCE = {"fd": 1e-5, "ode:forward": 1e-5, "ode:adjoint": 1e-5}
EXACT_TOLERANCE = 1e-8


#: A cell whose wall time exceeds its CPU time by more than this factor waited for the
#: CPU: another process ran while it was timed. One BLAS thread keeps the two equal
#: on an idle machine.
WALL_OVER_CPU = 1.5

#: A cell whose time ÷ plain f's time moved by more than this factor between two
#: rounds (taken minutes apart) was measured under changing load.
RATIO_SHIFT = 1.3

#: The clocks timing reads; tests replace them to simulate a busy machine. The CPU
#: clock is the timing thread's own, not the process's: time the timing thread spent
#: waiting, whether for a core held by another process or for the interpreter held by
#: another of this process's threads, is then wall time without CPU time. The
#: process's CPU clock would count the other thread's work as this cell's and hide
#: the wait. (A multi-threaded BLAS call still counts fully: its calling thread
#: computes a share and spins until the others finish.)
wall_clock = time.perf_counter
cpu_clock = time.thread_time


class Timer:
    """Times one callable in repeats that can be interleaved with other timers.

    Creating it makes a warm-up call (whose result is kept in ``result``)
    and a calibration call, then picks ``loops`` calls per repeat (so a
    repeat lasts at least ``min_repeat_time``) and how many repeats fit in
    half of ``budget`` (at most ``repeats``, at least one). Each
    :meth:`time_repeat` adds one repeat, in wall and CPU seconds per call,
    with the garbage collector off as in :mod:`timeit`. Calling
    :meth:`time_repeat` on several timers in turn (round-robin) puts their
    repeats under the same load.

    >>> timer = Timer(lambda: 42, repeats=3)
    >>> while timer.remaining: timer.time_repeat()
    >>> timer.result, timer.summary()["repeats"], timer.summary()["median"] < 0.01
    (42, 3, True)
    """

    def __init__(
        self,
        work: Callable[[], object],
        *,
        repeats: int = 5,
        budget: float = 2.0,
        min_repeat_time: float = 0.002,
    ):
        self.work = work
        start = wall_clock()
        self.result = work()
        self.warmup = wall_clock() - start
        start, cpu = wall_clock(), cpu_clock()
        work()
        calibration, calibration_cpu = wall_clock() - start, cpu_clock() - cpu
        self.calibration = calibration
        self.loops = max(1, math.ceil(min_repeat_time / max(calibration, 1e-9)))
        allowed = int(0.5 * budget // (self.loops * max(calibration, 1e-9)))
        self.wanted = max(1, min(repeats, allowed))
        self.samples: list[float] = []
        self.cpu_samples: list[float] = []
        self.rounds: list[int] = []  # the round each sample was taken in
        self.round = 0
        if self.loops == 1:  # the calibration call was a repeat of one call
            self.samples.append(calibration)
            self.cpu_samples.append(calibration_cpu)
            self.rounds.append(0)

    @property
    def remaining(self) -> int:
        """Repeats still wanted."""
        return self.wanted - len(self.samples)

    def time_repeat(self) -> None:
        """Time one repeat of ``loops`` calls."""
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            start, cpu = wall_clock(), cpu_clock()
            for _ in range(self.loops):
                self.work()
            wall, used = wall_clock() - start, cpu_clock() - cpu
        finally:
            if gc_was_enabled:
                gc.enable()
        self.samples.append(wall / self.loops)
        self.cpu_samples.append(used / self.loops)
        self.rounds.append(self.round)

    def round_median(self, number: int, *, cpu: bool = False) -> float | None:
        """The median wall (or ``cpu``) time of round ``number``'s samples, or ``None``."""
        samples = self.cpu_samples if cpu else self.samples
        taken = [t for t, r in zip(samples, self.rounds) if r == number]
        return float(np.median(taken)) if taken else None

    def round_wall_over_cpu(self, number: int) -> float:
        """Wall time ÷ CPU time of the repeats taken in round ``number``."""
        pairs = [
            (t, c) for t, c, r in zip(self.samples, self.cpu_samples, self.rounds) if r == number
        ]
        return float(sum(t for t, _ in pairs) / max(sum(c for _, c in pairs), 1e-12))

    def summary(self) -> dict:
        """The timing as JSON-ready values: median, IQR, min, max, CPU, per-round medians."""
        q25, median, q75 = np.percentile(self.samples, [25, 50, 75])
        cpu = float(np.median(self.cpu_samples))
        rounds = sorted(set(self.rounds))
        return {
            "median": float(median),
            "iqr": float(q75 - q25),
            "min": float(min(self.samples)),
            "max": float(max(self.samples)),
            "repeats": len(self.samples),
            "loops": self.loops,
            "warmup": self.warmup,
            "samples": [float(t) for t in self.samples],
            "cpu_median": cpu,
            "wall_over_cpu": float(sum(self.samples) / max(sum(self.cpu_samples), 1e-12)),
            "round_medians": [self.round_median(r) for r in rounds],
            "round_cpu_medians": [self.round_median(r, cpu=True) for r in rounds],
            "round_wall_over_cpu": [self.round_wall_over_cpu(r) for r in rounds],
        }


def time_calls(
    work: Callable[[], object],
    *,
    repeats: int = 5,
    budget: float = 2.0,
    min_repeat_time: float = 0.002,
) -> tuple[dict, object]:
    """Time ``work()`` in back-to-back repeats; returns the timing summary and the
    warm-up's result (see :class:`Timer`).

    >>> timing, result = time_calls(lambda: 42, repeats=3)
    >>> result, timing["repeats"], timing["median"] < 0.01
    (42, 3, True)
    """
    timer = Timer(work, repeats=repeats, budget=budget, min_repeat_time=min_repeat_time)
    while timer.remaining > 0:
        timer.time_repeat()
    return timer.summary(), timer.result


def count_work(instance: Instance, mode: Mode, work: Callable[[], object]) -> dict:
    """The deterministic counts of one call, as plain JSON-ready values.

    >>> from adcompare.bench.problems import get_problem
    >>> from adcompare.bench.harness.modes import get_mode
    >>> inst = get_problem("rosenbrock").build(n=4)
    >>> count_work(inst, get_mode("reverse"), get_mode("reverse").prepare(inst))["sweeps"]
    1
    """
    if mode.name in ("f", "fd"):
        counts = plain_cost(instance).as_dict()
        if mode.name == "fd":
            evaluations = 2 * instance.n
            counts = _scaled(counts, evaluations)
            counts["evaluations"] = evaluations
        return counts
    with ad.count() as cost:
        work()
    # an elimination mode's work keeps its own multiplications and additions
    return {**cost.as_dict(), **getattr(work, "counts", {})}


def _scaled(counts: dict, factor: int) -> dict:
    scaled = {}
    for key, value in counts.items():
        if isinstance(value, dict):
            scaled[key] = {k: v * factor for k, v in value.items()}
        else:
            scaled[key] = value * factor
    return scaled


def peak_memory(work: Callable[[], object]) -> int:
    """Peak bytes allocated during one call of ``work`` (numpy arrays included).

    Results are computed into fresh memory here, not into cached buffers
    (:mod:`adcompare.runtime.buffers`): idle buffers left by earlier calls would
    hide memory this call needs, and buffers idle during the call would count.

    >>> peak_memory(lambda: np.ones(100_000)) >= 800_000
    True
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        with buffers.disabled():
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            result = work()
            peak = tracemalloc.get_traced_memory()[1]
            del result
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return int(max(0, peak - base))


def check_derivative(instance: Instance, mode: Mode, jacobian) -> dict | None:
    """Compare a mode's Jacobian with the other engine at the same point.

    Returns ``{"against", "error", "tolerance", "ok"}``; ``None`` for plain
    f. The error is ``max|a − b| / max(1, max|b|)``.

    >>> from adcompare.bench.problems import get_problem
    >>> from adcompare.bench.harness.modes import get_mode
    >>> inst = get_problem("fourier").build(m=6)
    >>> mode = get_mode("forward")
    >>> check_derivative(inst, mode, mode.prepare(inst)())["ok"]
    True
    """
    if not mode.derivative:
        return None
    if mode.order == 2:
        return check_second_order(instance, mode.name, jacobian, EXACT_TOLERANCE)
    matrix = as_matrix(jacobian, instance)
    f, x = instance.on(ad), instance.x
    rng = np.random.default_rng(0)
    if mode.name in ("reverse", "reverse1", "reverse-reference"):
        direction = rng.standard_normal(instance.n)
        _, expected = ad.jvp(f, (x,), (direction,))
        got, against = matrix @ direction, "one forward pass J·v"
    else:
        out_shape = np.shape(instance.on(np)(x))
        cotangent = rng.standard_normal(instance.m)
        _, pullback = ad.vjp(f, x)
        expected = pullback(cotangent.reshape(out_shape))[0]
        got, against = cotangent @ matrix, "one reverse sweep uᵀJ"
    expected = np.reshape(np.asarray(expected, dtype=np.float64), -1)
    error = float(np.max(np.abs(got - expected)) / max(1.0, float(np.max(np.abs(expected)))))
    tolerance = TOLERANCE.get(mode.name, EXACT_TOLERANCE)
    return {"against": against, "error": error, "tolerance": tolerance, "ok": error <= tolerance}


def refuse_non_finite(instance: Instance, mode: str, derivative) -> None:
    """Raise a :class:`ProblemError` when ``derivative`` holds NaN or inf: f, finite at
    the point (its instance checked that), is not differentiable there.

    >>> from adcompare.bench.problems import problem
    >>> inst = problem(lambda x: np.sqrt(x), name="root", inputs=lambda n: np.zeros(n)).build(n=2)
    >>> try:
    ...     refuse_non_finite(inst, "forward", np.array([np.inf, 0.0]))
    ... except ProblemError as error:
    ...     print(str(error)[:62])
    the derivative of root by forward is NaN or inf at n = 2, wher
    """
    try:
        values = np.asarray(derivative, dtype=np.float64)
    except (TypeError, ValueError):
        return
    if not np.all(np.isfinite(values)):
        name = instance.problem
        raise ProblemError(
            f"the derivative of {name} by {mode} is NaN or inf at {size_text(instance.size)}, "
            f"where {name} itself is finite: it is not differentiable at that point; give it "
            "inputs away from the kink or singularity (inputs=... in Python, --inputs on the "
            "command line)"
        )


def describe_error(error: Exception) -> dict:
    """An exception as a cell records it: its type, message and the last frames.

    >>> describe_error(ValueError("no"))["type"]
    'ValueError'
    """
    return {
        "type": type(error).__name__,
        "message": str(error),
        "traceback": traceback.format_exc(limit=-4),
    }


def measure_cell(
    instance: Instance,
    mode: Mode,
    *,
    repeats: int = 5,
    budget: float = 2.0,
    min_repeat_time: float = 0.002,
    memory: bool = True,
    interleaved: bool = False,
) -> dict:
    """Everything measured for one cell, as a JSON-ready dict.

    With ``interleaved``, the timed repeats are left to the caller: the
    dict holds a :class:`Timer` under ``"timer"`` (warmed up and
    calibrated) instead of ``"time"``, so the repeats of several cells can
    be taken in turn (see :mod:`adcompare.bench.harness.sweep`).

    >>> from adcompare.bench.problems import get_problem
    >>> from adcompare.bench.harness.modes import get_mode
    >>> cell = measure_cell(get_problem("rosenbrock").build(n=8), get_mode("forward1"))
    >>> cell["counts"]["passes"], cell["check"]["ok"]
    (8, True)
    """
    # Preparing is set-up, not the cell's cost: a peer's first prepare imports its library.
    work = mode.prepare(instance)
    start = time.perf_counter()
    timer = Timer(work, repeats=repeats, budget=budget, min_repeat_time=min_repeat_time)
    if mode.derivative:
        refuse_non_finite(instance, mode.name, timer.result)
    check = check_derivative(instance, mode, timer.result)
    timer.result = None
    counts = count_work(instance, mode, work) if mode.counted else None
    peak = peak_memory(work) if memory and mode.memory_traced else None
    cell = {"counts": counts, "memory": {"peak_bytes": peak}, "check": check}
    if interleaved:
        cell["timer"] = timer
    else:
        while timer.remaining > 0:
            timer.time_repeat()
        cell["time"] = timer.summary()
    cell["seconds"] = time.perf_counter() - start
    return cell
