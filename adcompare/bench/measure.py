"""Measure one cell: one problem, at one size, computed by one mode.

A cell gets, each in its own run so that one measurement does not disturb
another:

- wall time: a warm-up call, then ``repeats`` timed repeats of ``loops``
  calls each (loops chosen so a repeat lasts at least ``min_repeat_time``,
  repeats cut down to fit the time budget); median, IQR, min and the
  samples;
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
import tracemalloc
from collections.abc import Callable

import numpy as np

import adcompare as ad
from adcompare.bench.modes import Mode, as_matrix, plain_cost
from adcompare.bench.problems import Instance
from adcompare.bench.second_order import check_second_order
from adcompare.runtime import buffers

__all__ = ["check_derivative", "count_work", "measure_cell", "peak_memory", "time_calls"]

#: Largest relative error a derivative may have against the other engine.
TOLERANCE = {"fd": 1e-5}
EXACT_TOLERANCE = 1e-8


def time_calls(
    work: Callable[[], object],
    *,
    repeats: int = 5,
    budget: float = 2.0,
    min_repeat_time: float = 0.002,
) -> tuple[dict, object]:
    """Time ``work()``; returns the timing summary and the warm-up's result.

    Timed repeats get at most half of ``budget`` seconds; at least one
    repeat always runs. The garbage collector is off while timing, as in
    :mod:`timeit`.

    >>> timing, result = time_calls(lambda: 42, repeats=3)
    >>> result, timing["repeats"], timing["median"] < 0.01
    (42, 3, True)
    """
    start = time.perf_counter()
    result = work()
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    work()
    calibration = time.perf_counter() - start
    loops = max(1, math.ceil(min_repeat_time / max(calibration, 1e-9)))
    allowed = int(0.5 * budget // (loops * max(calibration, 1e-9)))
    count = max(1, min(repeats, allowed))
    samples = [calibration] if loops == 1 else []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while len(samples) < count:
            start = time.perf_counter()
            for _ in range(loops):
                work()
            samples.append((time.perf_counter() - start) / loops)
    finally:
        if gc_was_enabled:
            gc.enable()
    q25, median, q75 = np.percentile(samples, [25, 50, 75])
    timing = {
        "median": float(median),
        "iqr": float(q75 - q25),
        "min": float(min(samples)),
        "max": float(max(samples)),
        "repeats": len(samples),
        "loops": loops,
        "warmup": warmup,
        "samples": [float(s) for s in samples],
    }
    return timing, result


def count_work(instance: Instance, mode: Mode, work: Callable[[], object]) -> dict:
    """The deterministic counts of one call, as plain JSON-ready values.

    >>> from adcompare.bench.problems import get_problem
    >>> from adcompare.bench.modes import get_mode
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
    return cost.as_dict()


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
    >>> from adcompare.bench.modes import get_mode
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
    if mode.name == "reverse":
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


def measure_cell(
    instance: Instance,
    mode: Mode,
    *,
    repeats: int = 5,
    budget: float = 2.0,
    min_repeat_time: float = 0.002,
    memory: bool = True,
) -> dict:
    """Everything measured for one cell, as a JSON-ready dict.

    >>> from adcompare.bench.problems import get_problem
    >>> from adcompare.bench.modes import get_mode
    >>> cell = measure_cell(get_problem("rosenbrock").build(n=8), get_mode("forward1"))
    >>> cell["counts"]["passes"], cell["check"]["ok"]
    (8, True)
    """
    # Preparing is set-up, not the cell's cost: a peer's first prepare imports its library.
    work = mode.prepare(instance)
    start = time.perf_counter()
    timing, result = time_calls(
        work, repeats=repeats, budget=budget, min_repeat_time=min_repeat_time
    )
    check = check_derivative(instance, mode, result)
    del result
    counts = count_work(instance, mode, work) if mode.counted else None
    peak = peak_memory(work) if memory and mode.memory_traced else None
    return {
        "time": timing,
        "counts": counts,
        "memory": {"peak_bytes": peak},
        "check": check,
        "seconds": time.perf_counter() - start,
    }
