"""Sweeps: every chosen problem at geometric sizes, by every chosen mode.

The sweep walks each problem's sizes from small to large and measures each
mode there; the timed repeats of one size's modes are taken in turn (round
robin), so their ratios to f are taken under the same load, and half of them
are taken again in a second round after the problem's largest size. A size's
cells are added to the results once its turns end. Each cell records its CPU
time beside its wall time; :func:`busy_flags` flags a cell that waited for
the CPU or whose ratio to f moved between the rounds. glibc's allocator is
pinned for the whole sweep. A time budget per cell keeps it bounded: a mode
is skipped at a size when

- a smaller size (every size parameter ≤) of the same mode took longer
  than the budget, or
- extrapolating its last two measured sizes on the log-log scale predicts
  that even a minimal cell (warm-up, one timed call, the count run and the
  memory run: :data:`MIN_CALLS_PER_CELL` calls) would take longer; the
  first call (the warm-up) is extrapolated on its own, since symbolic mode
  traces and differentiates there and grows much faster than later calls;
  times flagged as taken under load are not extrapolated,

- plain f's time at the same size says the mode cannot fit: finite
  differences evaluate f 2n times, one-lane forward mode makes n passes
  each at least as dear as f (:data:`CALLS_OF_F`),

and the skipped cell records why. A cell that raises records its error and
the sweep goes on. Cells already in the results (measured or skipped) are
not measured again, which is how ``--resume`` continues an interrupted run.

numpy's BLAS runs with ``blas_threads`` threads, one by default: the
engines are single-threaded Python, and on a busy machine idle BLAS threads
spin and can make a matrix-vector product tens of times slower.
"""

from __future__ import annotations

import contextlib
import math
import os
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from adcompare.bench.harness.env import describe, environment_key, pin_allocator
from adcompare.bench.harness.measure import RATIO_SHIFT, WALL_OVER_CPU, Timer, measure_cell
from adcompare.bench.harness.modes import MODES, expand_modes, get_mode
from adcompare.bench.harness.progress import Progress
from adcompare.bench.harness.results import Results, cell_key, now
from adcompare.bench.problems import PROBLEMS, Problem, default_problems, get_problem
from adcompare.bench.report.text import format_time
from adcompare.symbolic import SymbolicSizeError

__all__ = [
    "PRESETS",
    "SweepConfig",
    "budget_reason",
    "busy_flags",
    "plan",
    "preset",
    "run_sweep",
    "sizes_for",
]

#: Calls a cell makes even with a single timed repeat: warm-up, the timed
#: call, the count run and the (slower, traced) memory run.
MIN_CALLS_PER_CELL = 4

#: Instances with at most this many input elements keep their prepared calls for
#: a second round of repeats after the problem's largest size.
SECOND_ROUND_LIMIT = 2**16

#: The steepest growth assumed of a first call (symbolic differentiation of the dense
#: quadratic grew with slope 2 to 2.2 from n = 4 to 64).
WARMUP_SLOPE_CAP = 3.0

#: Modes whose one call costs at least this many calls of plain f, given n.
CALLS_OF_F = {"fd": lambda n: 2 * n, "forward1": lambda n: n}


def geometric(start: int, stop: int, factor: int = 4) -> list[int]:
    """``start, start·factor, ...`` up to ``stop``.

    >>> geometric(4, 1024)
    [4, 16, 64, 256, 1024]
    """
    sizes = []
    size = start
    while size <= stop:
        sizes.append(size)
        size *= factor
    return sizes


@dataclass
class SweepConfig:
    """What to measure and how hard.

    ``sizes`` are the values of the swept parameter (n, or m for one-input
    problems); ``grid`` the values of both n and m for Jacobian problems.
    ``second_order_sizes`` are the swept values at which second-order modes
    (HVPs, Hessians) are measured, ``None`` for every size. ``modes`` may
    name groups such as ``"hvp"`` (see :func:`~adcompare.bench.harness.modes.expand_modes`).
    """

    problems: list[str] = field(default_factory=default_problems)
    modes: list[str] = field(default_factory=lambda: [n for n, m in MODES.items() if m.by_default])
    sizes: list[int] = field(default_factory=lambda: geometric(4, 1024))
    grid: list[int] = field(default_factory=lambda: geometric(4, 256))
    second_order_sizes: list[int] | None = None
    repeats: int = 5
    budget: float = 1.0
    min_repeat_time: float = 0.002
    memory: bool = True
    blas_threads: int | None = 1

    def __post_init__(self):
        for name in self.problems:
            get_problem(name)
        self.modes = expand_modes(self.modes)
        for name in self.modes:
            get_mode(name)
        if self.repeats < 1:
            raise ValueError(f"repeats must be at least 1, not {self.repeats}")
        if not self.budget > 0:
            raise ValueError(f"the budget must be a positive number of seconds, not {self.budget}")
        for values in (self.sizes, self.grid, self.second_order_sizes or []):
            if any(s < 1 for s in values):
                raise ValueError(f"sizes must be positive whole numbers, not {values}")

    def as_dict(self) -> dict:
        """The configuration as JSON-ready values."""
        return asdict(self)


PRESETS: dict[str, dict] = {
    "quick": {
        "problems": default_problems(),
        "sizes": geometric(4, 1024),
        "grid": geometric(4, 256),
        "second_order_sizes": [4, 64, 1024],
        "repeats": 3,
        "budget": 1.0,
        "min_repeat_time": 0.005,
    },
    "full": {
        "problems": list(PROBLEMS),
        "sizes": geometric(4, 2**20),
        "grid": geometric(4, 4096),
        "second_order_sizes": None,
        "repeats": 7,
        "budget": 30.0,
        "min_repeat_time": 0.01,
    },
}


def preset(name: str, **overrides) -> SweepConfig:
    """A preset configuration (``"quick"`` or ``"full"``) with ``overrides``.

    >>> preset("quick").sizes[-1], preset("full").sizes[-1]
    (1024, 1048576)
    """
    settings = dict(PRESETS[name])
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return SweepConfig(**settings)


def sizes_for(problem: Problem, config: SweepConfig) -> list[dict]:
    """The sizes ``problem`` is measured at, small to large.

    A grid is ordered by n·m, so both neighbours of a cell come before it;
    a problem of fixed size has the one empty size.

    >>> sizes_for(get_problem("tanh_map"), SweepConfig(grid=[1, 2]))
    [{'n': 1, 'm': 1}, {'n': 1, 'm': 2}, {'n': 2, 'm': 1}, {'n': 2, 'm': 2}]
    """
    if not problem.sweeps:
        return [{}]
    if len(problem.sweeps) == 1:
        return [{problem.sweeps[0]: s} for s in sorted(set(config.sizes))]
    grid = sorted(set(config.grid))
    pairs = [(n, m) for n in grid for m in grid]
    return [{"n": n, "m": m} for n, m in sorted(pairs, key=lambda p: (p[0] * p[1], p[0]))]


def _planned(config: SweepConfig, size: dict, mode: str) -> bool:
    if get_mode(mode).order < 2 or config.second_order_sizes is None:
        return True
    return all(value in config.second_order_sizes for value in size.values())


def plan(config: SweepConfig) -> list[tuple[Problem, dict, str]]:
    """Every cell of the sweep as ``(problem, size, mode)``, in measuring order.

    Second-order modes come only at ``config.second_order_sizes``.

    >>> config = SweepConfig(problems=["rosenbrock"], modes=["reverse", "hvp:fwd-over-rev"],
    ...                      sizes=[4, 16], second_order_sizes=[16])
    >>> [(size["n"], mode) for _, size, mode in plan(config)]
    [(4, 'reverse'), (16, 'reverse'), (16, 'hvp:fwd-over-rev')]
    """
    return [
        (problem, size, mode)
        for problem in map(get_problem, config.problems)
        for size in sizes_for(problem, config)
        for mode in config.modes
        if _planned(config, size, mode)
    ]


def _size_text(size: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in size.items())


def budget_reason(
    results: Results,
    problem: Problem,
    mode: str,
    size: dict,
    budget: float,
    *,
    plain: dict | None = None,
):
    """Why ``mode`` should skip ``size`` given the cells measured so far, or ``None``.

    ``plain`` stands for plain f's cell at ``size`` while that cell is not
    in ``results`` yet (its repeats are still being taken in turn).
    """
    measured = [
        c
        for c in results.cells
        if c["problem"] == problem.name and c["mode"] == mode and c["status"] == "ok"
    ]
    for cell in measured:
        smaller = all(cell["size"][k] <= v for k, v in size.items()) and cell["size"] != size
        if smaller and cell.get("seconds", 0.0) > budget:
            return (
                f"{mode} took {cell['seconds']:.3g} s at {_size_text(cell['size'])}, over the "
                f"{budget:g} s budget per cell, so larger sizes are skipped"
            )
    if mode in CALLS_OF_F:
        reason = _calls_of_f_reason(results, problem, mode, size, budget, plain)
        if reason:
            return reason
    for key, value in size.items():
        line = sorted(
            (
                c
                for c in measured
                # A time flagged as taken under load would extrapolate the load, not the mode.
                if not c.get("flags")
                and c["size"][key] < value
                and all(c["size"][k] == v for k, v in size.items() if k != key)
            ),
            key=lambda c: c["size"][key],
        )
        if len(line) < 2:
            continue
        (x1, t1), (x2, t2) = [(c["size"][key], c["time"]["median"]) for c in line[-2:]]
        slope = min(3.0, max(0.0, math.log(t2 / t1) / math.log(x2 / x1)))
        predicted = t2 * (value / x2) ** slope
        if predicted * MIN_CALLS_PER_CELL > budget:
            return (
                f"{mode} is predicted to take {predicted:.2g} s a call at {_size_text(size)} "
                f"(log-log slope {slope:.2f} from {key}={x1} and {key}={x2}), so a cell would "
                f"exceed the {budget:g} s budget"
            )
        warmups = [c["time"].get("warmup") for c in line[-2:]]
        if all(warmups) and _distinct_first_call(warmups[-1], t2, budget):
            # The first call can cost far more than the rest (symbolic mode traces and
            # differentiates it), and it grows faster: extrapolate it on its own.
            (w1, w2), cap = warmups, WARMUP_SLOPE_CAP
            warmup_slope = min(cap, max(0.0, math.log(w2 / w1) / math.log(x2 / x1)))
            first = w2 * (value / x2) ** warmup_slope
            if first + predicted * (MIN_CALLS_PER_CELL - 1) > budget:
                return (
                    f"{mode}'s first call is predicted to take {first:.2g} s at "
                    f"{_size_text(size)} (log-log slope {warmup_slope:.2f} from {key}={x1} and "
                    f"{key}={x2}), so a cell would exceed the {budget:g} s budget"
                )
    return None


def _distinct_first_call(warmup: float, median: float, budget: float) -> bool:
    """Whether a first call costs enough on its own to be extrapolated apart from the rest:
    ten times a later call and a twentieth of the budget (noise in a call of a few
    milliseconds must not skip a cell)."""
    return warmup >= 10 * median and warmup >= budget / 20


def _calls_of_f_reason(
    results: Results, problem: Problem, mode: str, size: dict, budget: float, plain
):
    """Why a mode costing at least ``CALLS_OF_F[mode](n)`` calls of f cannot fit, or ``None``."""
    plain = results.get((problem.name, "f", tuple(sorted(size.items())))) or plain
    if plain is None or plain["status"] != "ok" or not plain.get("time"):
        return None
    estimate = plain["time"]["median"]
    calls = CALLS_OF_F[mode](plain["n"])
    predicted = calls * estimate
    if predicted * MIN_CALLS_PER_CELL <= budget:
        return None
    return (
        f"{mode} costs at least {calls} calls of f ({format_time(estimate)} each), "
        f"{predicted:.2g} s a call, so a cell would exceed the {budget:g} s budget"
    )


def _load() -> float | None:
    """The one-minute load average: how busy the machine was."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _cell(problem: Problem, size: dict, mode: str, env: str) -> dict:
    return {
        "problem": problem.name,
        "family": problem.family,
        "mode": mode,
        "size": dict(size),
        "n": None,
        "m": None,
        "env": env,
    }


def run_sweep(
    config: SweepConfig,
    results: Results | None = None,
    *,
    progress: Progress | None = None,
) -> Results:
    """Measure every cell of ``config`` not yet in ``results``, adding each as it ends.

    Cells that already ended measured or skipped are kept; cells that ended
    in an error are measured again. ``KeyboardInterrupt`` is not caught: the
    results keep every cell that finished before it. glibc's allocator is
    pinned first (:func:`~adcompare.bench.harness.env.pin_allocator`) and recorded
    with the machine.

    >>> results = run_sweep(SweepConfig(problems=["fourier"], modes=["f", "forward"],
    ...                                 sizes=[4], repeats=1, memory=False))
    >>> [(c["mode"], c["status"], c["m"]) for c in results.cells]
    [('f', 'ok', 4), ('forward', 'ok', 4)]
    """
    results = results if results is not None else Results()
    cells = plan(config)
    progress = progress or Progress(len(cells), quiet=True)
    limits = (
        threadpool_limits(limits=config.blas_threads, user_api="blas")
        if config.blas_threads
        else contextlib.nullcontext()
    )
    with limits:
        pin_allocator()
        description = describe()
        env = environment_key(description)
        results.add_environment(env, description)
        results.start_run(config.as_dict())
        try:
            for problem, groups in _groups(cells):
                _measure_problem(config, results, problem, groups, progress, env)
        finally:
            progress.close()
    return results


def _groups(cells: list) -> list[tuple[Problem, list[tuple[dict, list[str]]]]]:
    """The plan as ``(problem, [(size, [mode, ...]), ...])``, keeping its order."""
    grouped: dict[str, tuple[Problem, dict]] = {}
    for problem, size, mode in cells:
        sizes = grouped.setdefault(problem.name, (problem, {}))[1]
        sizes.setdefault(tuple(size.items()), (size, []))[1].append(mode)
    return [(problem, list(sizes.values())) for problem, sizes in grouped.values()]


@dataclass
class _Timed:
    """A cell measured but for its timed repeats, which its size's modes take in turn."""

    cell: dict
    timer: Timer
    label: str


def _measure_problem(config, results, problem, groups, progress, env) -> None:
    """Every size of one problem: a first round at each size, then a second round.

    The first round measures each mode at a size (warm-up, check, counts,
    memory), then takes the timed repeats of all the size's modes in turn,
    so their ratios to f are taken under the same load. The second round,
    after the problem's largest size, takes the rest of the repeats in turn
    again, minutes later; a ratio to f that moved between the two rounds
    flags the cell. Instances larger than :data:`SECOND_ROUND_LIMIT`
    elements take all their repeats in the first round.
    """
    second_round = []
    for size, mode_names in groups:
        timed = _first_round(config, results, problem, size, mode_names, progress, env)
        if timed:
            second_round.append(timed)
    for timed in second_round:
        for entry in timed.values():
            entry.timer.round = 1
        _take_turns(timed)
        _finish(results, timed, progress=None)


def _first_round(config, results, problem, size, mode_names, progress, env) -> dict:
    """Measure one size's cells; returns those kept for the second round."""
    timed: dict[str, _Timed] = {}
    instance = adjusted = None
    for mode_name in mode_names:
        label = f"{problem.name} {mode_name} {_size_text(size)}"
        cell = _cell(problem, size, mode_name, env)
        existing = results.get(cell_key(cell))
        if existing is not None and existing["status"] in ("ok", "skipped"):
            progress.advance(label, measured=False, group=problem.name)
            continue
        progress.start(label)
        plain = timed.get("f")
        reason = problem.too_large(size) or budget_reason(
            results,
            problem,
            mode_name,
            size,
            config.budget,
            plain={**plain.cell, "time": {"median": plain.timer.calibration}} if plain else None,
        )
        try:
            if reason is None:
                if instance is None:
                    instance = problem.build(**size)
                    adjusted = _adjustment(problem, size, instance)
                    if adjusted:
                        progress.note(adjusted)
                cell["n"], cell["m"] = instance.n, instance.m
                if adjusted:
                    cell["adjusted"] = adjusted
                mode = get_mode(mode_name)
                reason = mode.unavailable(instance)
                if reason is None:
                    measured = measure_cell(
                        instance,
                        mode,
                        repeats=config.repeats,
                        budget=config.budget,
                        min_repeat_time=config.min_repeat_time,
                        memory=config.memory,
                        interleaved=True,
                    )
                    timer = measured.pop("timer", None)
                    cell.update(measured)
                    cell["status"] = "ok"
                    if timer is not None:
                        timed[mode_name] = _Timed(cell, timer, label)
                        continue
        except SymbolicSizeError as refusal:
            # SymPy refuses instances too large to trace: a documented limit, not a failure.
            reason = str(refusal)
        except Exception as error:
            cell["status"] = "error"
            cell["error"] = _error(error)
        if reason is not None:
            cell["status"] = "skipped"
            cell["reason"] = reason
        _add(results, cell)
        progress.advance(label, measured=cell["status"] != "skipped", group=problem.name)
    keep = instance is not None and instance.x.size <= SECOND_ROUND_LIMIT
    wanted = {mode: entry.timer.wanted for mode, entry in timed.items()}
    if keep:
        for entry in timed.values():
            entry.timer.wanted = (entry.timer.wanted + 1) // 2
    _take_turns(timed)
    _finish(results, timed, progress=progress)
    later = {}
    for mode, entry in timed.items():
        entry.timer.wanted = wanted[mode]
        if entry.cell["status"] == "ok" and entry.timer.remaining > 0:
            later[mode] = entry
    return later


def _take_turns(timed: dict) -> None:
    """Time one repeat of each cell in turn until each has its wanted repeats."""
    while True:
        waiting = [e for e in timed.values() if e.cell["status"] == "ok" and e.timer.remaining]
        if not waiting:
            return
        for entry in waiting:
            try:
                entry.timer.time_repeat()
            except Exception as error:
                entry.cell["status"] = "error"
                entry.cell["error"] = _error(error)


def _finish(results: Results, timed: dict, *, progress: Progress | None) -> None:
    """Write the timed cells' times and flags and add them to the results."""
    plain = timed.get("f")
    timings = {mode: entry.timer.summary() for mode, entry in timed.items()}
    usual = _usual_wall_over_cpu(results, list(timings.values()))
    for mode, entry in timed.items():
        cell = entry.cell
        if cell["status"] == "ok":
            cell["time"] = timings[mode]
            flags = busy_flags(cell["time"], timings["f"] if plain else None, usual)
            if flags:
                cell["flags"] = flags
            else:
                cell.pop("flags", None)
        _add(results, cell)
        if progress is not None:
            progress.advance(entry.label, group=cell["problem"])


def _worst_wall_over_cpu(timing: dict) -> float:
    return max([timing.get("wall_over_cpu") or 0.0, *(timing.get("round_wall_over_cpu") or [])])


def _usual_wall_over_cpu(results: Results, timings: list[dict]) -> float:
    """How much wall time exceeds CPU time on this machine today: the lower quartile
    over the cells timed so far (at least 1). On a machine shared all along, every
    cell waits; a burst of load is what lifts some cells above the rest."""
    seen = [_worst_wall_over_cpu(t) for t in timings]
    seen += [
        _worst_wall_over_cpu(c["time"])
        for c in results.cells
        if c["status"] == "ok" and (c.get("time") or {}).get("wall_over_cpu")
    ]
    return max(1.0, float(np.percentile(seen, 25))) if seen else 1.0


def busy_flags(timing: dict, plain: dict | None, usual: float = 1.0) -> list[str]:
    """Why a timing may be disturbed by other load, as sentences; empty if not.

    A timing is flagged when its wall time exceeds its CPU time by more than
    :data:`~adcompare.bench.harness.measure.WALL_OVER_CPU` times the ``usual``
    excess of this run (overall or in one round: a burst of load may hit one
    round only), or when its ratio to plain f's time (``plain``, timed in
    the same rounds) moved by more than
    :data:`~adcompare.bench.harness.measure.RATIO_SHIFT` between rounds.

    >>> busy_flags({"wall_over_cpu": 2.0, "round_medians": [1.0]}, None)
    ['wall time 2× the CPU time: the process waited for a CPU']
    >>> busy_flags({"wall_over_cpu": 2.0, "round_medians": [1.0]}, None, usual=1.8)
    []
    >>> busy_flags({"wall_over_cpu": 6.0, "round_medians": [1.0]}, None, usual=2.0)
    ["wall time 6× the CPU time, 3× this run's usual 2×: a burst of load"]
    >>> busy_flags({"wall_over_cpu": 1.0, "round_medians": [2.0, 4.0]},
    ...            {"wall_over_cpu": 1.0, "round_medians": [1.0, 1.0]})
    ["time ÷ f's moved from 2× to 4× between rounds"]
    """
    flags = []
    ratio = _worst_wall_over_cpu(timing)
    if ratio > WALL_OVER_CPU * usual and usual > 1.0:
        flags.append(
            f"wall time {ratio:.3g}× the CPU time, {ratio / usual:.3g}× this run's usual "
            f"{usual:.3g}×: a burst of load"
        )
    elif ratio > WALL_OVER_CPU * usual:
        flags.append(f"wall time {ratio:.3g}× the CPU time: the process waited for a CPU")
    if plain is None or plain is timing:
        return flags
    key = "round_cpu_medians" if timing.get("round_cpu_medians") else "round_medians"
    rounds = list(zip(timing.get(key) or [], plain.get(key) or []))
    ratios = [mine / theirs for mine, theirs in rounds if mine and theirs]
    if len(ratios) >= 2 and max(ratios) / min(ratios) > RATIO_SHIFT:
        flags.append(f"time ÷ f's moved from {ratios[0]:.3g}× to {ratios[-1]:.3g}× between rounds")
    return flags


def _add(results: Results, cell: dict) -> None:
    cell["finished"] = now()
    cell["load"] = _load()
    results.add(cell)


def _error(error: Exception) -> dict:
    return {
        "type": type(error).__name__,
        "message": str(error),
        "traceback": traceback.format_exc(limit=-4),
    }


def _adjustment(problem: Problem, size: dict, instance) -> str | None:
    """Why ``instance`` has another size than ``size`` asked for, or ``None``."""
    built = {key: getattr(instance, key) for key in size}
    if built == size:
        return None
    asked = ", ".join(f"{k} = {v}" for k, v in size.items())
    made = ", ".join(f"{k} = {v}" for k, v in built.items())
    why = problem.sizing or "it cannot be built at the size asked for"
    return f"{problem.name} is measured at {made} for {asked}: {why}"
