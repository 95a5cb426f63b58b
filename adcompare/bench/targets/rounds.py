"""Interleaved rounds: the entries of one target timed under the same load.

A ratio of two times taken minutes apart measures the machine's load as much as
the code: on a shared machine another process may run during one and not the
other. So every entry of a target gets a :class:`Sampler`, and
:func:`take_rounds` takes one sample of each in turn, round after round; a
ratio is then a ratio of medians over the same rounds.

A sample is enough calls of the entry for at least ``sample_time`` seconds of
CPU time (:func:`calls_per_sample`, calibrated after the warm-up), timed with
the garbage collector off, as :mod:`timeit` does. CPU time is the whole
process's (:func:`time.process_time`), so a peer computing on its own worker
threads is charged for them, and a process on another core does not count;
the wall time of the same calls is kept beside it.

A sampler first calls its entry until it has been called ``warm_up`` times in
all: CPython specialises a function's bytecode only after its eighth call,
and a replayed tape is one long function called once per gradient, so its
first calls run unspecialised, about twice as slowly.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["CLOCK", "Sampler", "calls_per_sample", "take_rounds"]

#: The name of the clock the samples' CPU times are read from, as results record it.
CLOCK = "time.process_time"

#: The clocks sampling reads; tests may replace them.
cpu_clock = time.process_time
wall_clock = time.perf_counter


def _cpu_seconds(work: Callable[[], object], calls: int) -> float:
    start = cpu_clock()
    for _ in range(calls):
        work()
    return cpu_clock() - start


def calls_per_sample(work: Callable[[], object], seconds: float) -> int:
    """How many calls of ``work`` take at least ``seconds`` of CPU time.

    Times 1, 10, 100, ... calls until a batch takes a tenth of ``seconds``,
    then scales up: one call of an entry slower than ``seconds`` is enough.

    >>> calls_per_sample(lambda: None, 0.0)
    1
    >>> calls_per_sample(lambda: sum(range(1000)), 0.002) > 1
    True
    """
    calls = 1
    while True:
        used = _cpu_seconds(work, calls)
        if used >= seconds / 10 or calls >= 10**7:
            return max(1, math.ceil(calls * seconds / max(used, 1e-9)))
        calls *= 10


class Sampler:
    """Samples of one entry: ``calls`` calls each, CPU and wall seconds per call.

    ``calls_made`` counts the calls the entry already had (a first call, a
    check); the sampler calls it until ``warm_up`` calls in all, then
    calibrates ``calls`` for ``sample_time`` seconds of CPU time.

    >>> sampler = Sampler(lambda: sum(range(100)), sample_time=0.001, warm_up=10)
    >>> sampler.sample(); sampler.sample()
    >>> summary = sampler.summary()
    >>> summary["repeats"], summary["warm_up_calls"], summary["cpu_median"] > 0
    (2, 10, True)
    """

    def __init__(
        self,
        work: Callable[[], object],
        *,
        sample_time: float,
        warm_up: int = 0,
        calls_made: int = 0,
    ):
        self.work = work
        for _ in range(warm_up - calls_made):
            work()
        self.warm_up_calls = max(warm_up, calls_made)
        self.calls = calls_per_sample(work, sample_time)
        self.cpu: list[float] = []
        self.wall: list[float] = []

    def sample(self) -> None:
        """Time one sample of ``calls`` calls."""
        work, calls = self.work, self.calls
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            wall, cpu = wall_clock(), cpu_clock()
            for _ in range(calls):
                work()
            cpu, wall = cpu_clock() - cpu, wall_clock() - wall
        finally:
            if gc_was_enabled:
                gc.enable()
        self.cpu.append(cpu / calls)
        self.wall.append(wall / calls)

    def summary(self) -> dict:
        """The samples as a results cell's ``time``: wall ``median`` (with IQR, min, max,
        samples) and ``cpu_median`` (with its IQR and samples), seconds per call."""
        wall_q25, wall_median, wall_q75 = np.percentile(self.wall, [25, 50, 75])
        cpu_q25, cpu_median, cpu_q75 = np.percentile(self.cpu, [25, 50, 75])
        return {
            "median": float(wall_median),
            "iqr": float(wall_q75 - wall_q25),
            "min": float(min(self.wall)),
            "max": float(max(self.wall)),
            "samples": [float(t) for t in self.wall],
            "cpu_median": float(cpu_median),
            "cpu_iqr": float(cpu_q75 - cpu_q25),
            "cpu_samples": [float(t) for t in self.cpu],
            "clock": CLOCK,
            "repeats": len(self.cpu),
            "loops": self.calls,
            "warm_up_calls": self.warm_up_calls,
            "wall_over_cpu": float(sum(self.wall) / max(sum(self.cpu), 1e-12)),
        }


def take_rounds(samplers: Sequence[Sampler], rounds: int, budget: float = math.inf) -> int:
    """Take up to ``rounds`` rounds, each one sample of every sampler in turn; stop
    after the round that passes ``budget`` seconds. Returns the rounds taken.

    >>> samplers = [Sampler(lambda: None, sample_time=0.0) for _ in range(3)]
    >>> take_rounds(samplers, 4), [len(s.cpu) for s in samplers]
    (4, [4, 4, 4])
    >>> take_rounds(samplers, 4, budget=0.0)
    1
    """
    start = wall_clock()
    for taken in range(1, rounds + 1):
        for sampler in samplers:
            sampler.sample()
        if wall_clock() - start >= budget:
            return taken
    return rounds
