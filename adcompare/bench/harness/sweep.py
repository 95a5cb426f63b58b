"""Sweeps: every chosen problem at geometric sizes, by every chosen mode.

The sweep walks each problem's sizes from small to large and measures each
mode there; the timed repeats of one size's modes are taken in turn (round
robin), so their ratios to f are taken under the same load, and half of them
are taken again in a second round after the problem's largest size. A size's
cells are added to the results once its turns end. Each cell records its CPU
time beside its wall time; :func:`busy_flags` flags a cell that waited for
the CPU or whose ratio to f moved between the rounds
(:mod:`~adcompare.bench.harness.flags`). glibc's allocator is pinned for the
whole sweep. A time budget per cell keeps it bounded
(:mod:`~adcompare.bench.harness.budget`): a mode is skipped at a size when

- a smaller size (every size parameter ≤) of the same mode took longer
  than the budget, or
- extrapolating its last two measured sizes on the log-log scale predicts
  that even a minimal cell (warm-up, one timed call, the count run and the
  memory run) would take longer; the first call (the warm-up) is
  extrapolated on its own, since symbolic mode traces and differentiates
  there and grows much faster than later calls; times flagged as taken
  under load are not extrapolated,

- plain f's time at the same size says the mode cannot fit: finite
  differences evaluate f 2n times, one-lane forward mode makes n passes
  each at least as dear as f,

and the skipped cell records why. A cell that raises records its error and
the sweep goes on. A :class:`~adcompare.bench.problems.ProblemError` (a function that raises,
returns the wrong shape, or whose derivative is not finite) stops the sweep
once the cells measured at that size are added, and is raised with its one
sentence. Cells already in the results (measured or skipped) are
not measured again, which is how ``--resume`` continues an interrupted run.

numpy's BLAS runs with ``blas_threads`` threads, one by default: the
engines are single-threaded Python, and on a busy machine idle BLAS threads
spin and can make a matrix-vector product tens of times slower.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from threadpoolctl import threadpool_limits

from adcompare.bench.harness.budget import budget_reason, size_text
from adcompare.bench.harness.env import describe, environment_key, pin_allocator
from adcompare.bench.harness.flags import busy_flags, usual_wall_over_cpu
from adcompare.bench.harness.measure import (
    Timer,
    describe_error,
    measure_cell,
)
from adcompare.bench.harness.modes import MODES, expand_modes, get_mode
from adcompare.bench.harness.progress import Progress
from adcompare.bench.harness.results import Results, cell_key, now
from adcompare.bench.problems import (
    PROBLEMS,
    Problem,
    ProblemError,
    default_problems,
    get_problem,
)
from adcompare.symbolic import SymbolicSizeError

__all__ = [
    "PRESETS",
    "SweepConfig",
    "budget_reason",
    "busy_flags",
    "measure_size",
    "measuring",
    "plan",
    "preset",
    "run_sweep",
    "sizes_for",
]

#: Instances with at most this many input elements keep their prepared calls for
#: a second round of repeats after the problem's largest size.
SECOND_ROUND_LIMIT = 2**16


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

    ``problems`` are names (registered problems) or :class:`Problem` objects
    (a user's own, from :func:`~adcompare.bench.problems.problem`). ``sizes``
    are the values of the swept parameter (n, or m for one-input problems);
    ``grid`` the values of both n and m for Jacobian problems.
    ``second_order_sizes`` are the swept values at which second-order modes
    (HVPs, Hessians) are measured, ``None`` for every size. ``modes`` may
    name groups such as ``"hvp"`` (see :func:`~adcompare.bench.harness.modes.expand_modes`).
    ``per_host``: on a cluster, how many workers of one machine measure at a time
    (0: all of them; see :mod:`~adcompare.bench.harness.cluster`).
    """

    problems: list[str | Problem] = field(default_factory=default_problems)
    modes: list[str] = field(default_factory=lambda: [n for n, m in MODES.items() if m.by_default])
    sizes: list[int] = field(default_factory=lambda: geometric(4, 1024))
    grid: list[int] = field(default_factory=lambda: geometric(4, 256))
    second_order_sizes: list[int] | None = None
    repeats: int = 5
    budget: float = 1.0
    min_repeat_time: float = 0.002
    memory: bool = True
    blas_threads: int | None = 1
    per_host: int = 1

    def __post_init__(self):
        self.problem_objects()
        self.modes = expand_modes(self.modes)
        for name in self.modes:
            get_mode(name)
        if self.repeats < 1:
            raise ValueError(f"repeats must be at least 1, not {self.repeats}")
        if self.per_host < 0:
            raise ValueError(
                f"per_host must be 0 (no limit) or a number of workers, not {self.per_host}"
            )
        if not self.budget > 0:
            raise ValueError(f"the budget must be a positive number of seconds, not {self.budget}")
        for values in (self.sizes, self.grid, self.second_order_sizes or []):
            if any(s < 1 for s in values):
                raise ValueError(f"sizes must be positive whole numbers, not {values}")

    def problem_objects(self) -> list[Problem]:
        """The problems, each given by name or as itself."""
        return [p if isinstance(p, Problem) else get_problem(p) for p in self.problems]

    def as_dict(self) -> dict:
        """The configuration as JSON-ready values (each problem by its name)."""
        return asdict(self) | {"problems": [p.name for p in self.problem_objects()]}


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
        for problem in config.problem_objects()
        for size in sizes_for(problem, config)
        for mode in config.modes
        if _planned(config, size, mode)
    ]


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
        "description": problem.description,
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
    client=None,
) -> Results:
    """Measure every cell of ``config`` not yet in ``results``, adding each as it ends.

    Cells that already ended measured or skipped are kept; cells that ended
    in an error are measured again. ``KeyboardInterrupt`` is not caught: the
    results keep every cell that finished before it. glibc's allocator is
    pinned first (:func:`~adcompare.bench.harness.env.pin_allocator`) and recorded
    with the machine. Given a Dask ``client`` (``distributed.Client``), the
    sizes are measured on its workers instead
    (:func:`~adcompare.bench.harness.cluster.run_on_cluster`).

    >>> results = run_sweep(SweepConfig(problems=["fourier"], modes=["f", "forward"],
    ...                                 sizes=[4], repeats=1, memory=False))
    >>> [(c["mode"], c["status"], c["m"]) for c in results.cells]
    [('f', 'ok', 4), ('forward', 'ok', 4)]
    """
    results = results if results is not None else Results()
    if client is not None:
        from adcompare.bench.harness.cluster import run_on_cluster

        return run_on_cluster(config, results, client, progress=progress)
    cells = plan(config)
    progress = progress or Progress(len(cells), quiet=True)
    with measuring(config) as (env, description):
        results.add_environment(env, description)
        results.start_run(config.as_dict())
        try:
            for problem, groups in _groups(cells):
                _measure_problem(config, results, problem, groups, progress, env)
        finally:
            progress.close()
    return results


@contextlib.contextmanager
def measuring(config: SweepConfig) -> Iterator[tuple[str, dict]]:
    """Inside the block BLAS runs with ``config.blas_threads`` threads, and glibc's
    allocator is pinned; gives this process's environment key and description.

    >>> with measuring(SweepConfig(blas_threads=1)) as (env, description):
    ...     env.startswith("env-"), description["allocator"]["library"] is not None
    (True, True)
    """
    limits = (
        threadpool_limits(limits=config.blas_threads, user_api="blas")
        if config.blas_threads
        else contextlib.nullcontext()
    )
    with limits:
        pin_allocator()
        description = describe()
        yield environment_key(description), description


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
        _second_round(results, timed)


def _second_round(results: Results, timed: dict) -> None:
    for entry in timed.values():
        entry.timer.round = 1
    _take_turns(timed)
    _finish(results, timed, progress=None)


def measure_size(
    config: SweepConfig,
    results: Results,
    problem: Problem,
    size: dict,
    modes: list[str],
    env: str,
    progress: Progress | None = None,
) -> None:
    """Measure one size of ``problem`` by ``modes`` into ``results``: a cluster's unit of work.

    As :func:`run_sweep` measures each size, but the second round of repeats
    follows the first at once (a worker keeps no prepared calls between
    tasks), so a ratio to f that moved between the rounds shows a burst of
    load within the cell, not minutes apart. ``results`` holds the cells of
    ``problem`` measured before, which the budget extrapolates from and which
    are not measured again. Raises :class:`~adcompare.bench.problems.ProblemError`
    as the sweep does, once the size's cells are added.

    >>> results = Results()
    >>> measure_size(SweepConfig(repeats=1, memory=False), results, get_problem("fourier"),
    ...              {"m": 4}, ["f", "reverse"], env="env-here")
    >>> [(c["mode"], c["status"], c["env"]) for c in results.cells]
    [('f', 'ok', 'env-here'), ('reverse', 'ok', 'env-here')]
    """
    progress = progress or Progress(len(modes), quiet=True)
    timed = _first_round(config, results, problem, size, modes, progress, env)
    if timed:
        _second_round(results, timed)


class _Built:
    """A size's instance, built the first time a mode needs it, and why its size differs."""

    def __init__(self, problem: Problem, size: dict, progress: Progress):
        self.problem, self.size, self.progress = problem, size, progress
        self.instance = None
        self.adjusted: str | None = None

    def get(self):
        if self.instance is None:
            self.instance = self.problem.build(**self.size)
            self.adjusted = _adjustment(self.problem, self.size, self.instance)
            if self.adjusted:
                self.progress.note(self.adjusted)
        return self.instance


def _first_round(config, results, problem, size, mode_names, progress, env) -> dict:
    """Measure one size's cells; returns those kept for the second round."""
    timed: dict[str, _Timed] = {}
    built = _Built(problem, size, progress)
    failure = None
    for mode_name in mode_names:
        label = f"{problem.name} {mode_name} {size_text(size)}"
        cell = _cell(problem, size, mode_name, env)
        existing = results.get(cell_key(cell))
        if existing is not None and existing["status"] in ("ok", "skipped"):
            progress.advance(label, measured=False, group=problem.name)
            continue
        progress.start(label)
        try:
            timer = _measure_mode(config, results, built, cell, timed.get("f"))
        except ProblemError as error:
            # The function cannot be measured: keep what was, then say why.
            failure = error
            _add(results, cell)
            break
        if timer is not None:
            timed[mode_name] = _Timed(cell, timer, label)
            continue
        _add(results, cell)
        progress.advance(label, measured=cell["status"] != "skipped", group=problem.name)
    keep = built.instance is not None and built.instance.x.size <= SECOND_ROUND_LIMIT
    wanted = {mode: entry.timer.wanted for mode, entry in timed.items()}
    if keep:
        for entry in timed.values():
            entry.timer.wanted = (entry.timer.wanted + 1) // 2
    _take_turns(timed)
    _finish(results, timed, progress=progress)
    if failure is not None:
        raise failure
    later = {}
    for mode, entry in timed.items():
        entry.timer.wanted = wanted[mode]
        if entry.cell["status"] == "ok" and entry.timer.remaining > 0:
            later[mode] = entry
    return later


def _measure_mode(config, results, built: _Built, cell: dict, plain: _Timed | None):
    """Measure one cell but for its timed repeats; returns its :class:`Timer`, or ``None``
    when the cell ended skipped or in an error (its status and why are in ``cell``)."""
    problem, size, mode_name = built.problem, built.size, cell["mode"]
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
            instance = built.get()
            cell["n"], cell["m"] = instance.n, instance.m
            if built.adjusted:
                cell["adjusted"] = built.adjusted
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
                return timer
    except ProblemError as error:
        cell["status"] = "error"
        cell["error"] = describe_error(error)
        raise
    except SymbolicSizeError as refusal:
        # SymPy refuses instances too large to trace: a documented limit, not a failure.
        reason = str(refusal)
    except Exception as error:
        cell["status"] = "error"
        cell["error"] = describe_error(error)
    if reason is not None:
        cell["status"] = "skipped"
        cell["reason"] = reason
    return None


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
                entry.cell["error"] = describe_error(error)


def _finish(results: Results, timed: dict, *, progress: Progress | None) -> None:
    """Write the timed cells' times and flags and add them to the results."""
    plain = timed.get("f")
    timings = {mode: entry.timer.summary() for mode, entry in timed.items()}
    usual = usual_wall_over_cpu(results, list(timings.values()))
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


def _add(results: Results, cell: dict) -> None:
    cell["finished"] = now()
    cell["load"] = _load()
    results.add(cell)


def _adjustment(problem: Problem, size: dict, instance) -> str | None:
    """Why ``instance`` has another size than ``size`` asked for, or ``None``."""
    built = {key: getattr(instance, key) for key in size}
    if built == size:
        return None
    asked = ", ".join(f"{k} = {v}" for k, v in size.items())
    made = ", ".join(f"{k} = {v}" for k, v in built.items())
    why = problem.sizing or "it cannot be built at the size asked for"
    return f"{problem.name} is measured at {made} for {asked}: {why}"
