"""Measure the targets' entries as cells of a results file, then read the table off them.

Each target's entries (:func:`~adcompare.bench.targets.cases.target_cases`)
are measured together:

1. each entry is prepared by the harness
   (:func:`~adcompare.bench.harness.measure.measure_cell`: a first call, a check
   of its derivative against adcompare's, its counts). An entry whose
   derivative disagrees gets no time: its cell ends in an error that says so;
2. each entry left is warmed up (a replayed or jitted one to
   :attr:`Settings.warm_up` calls) and calibrated to samples of at least
   :attr:`Settings.sample_time` seconds of CPU time
   (:class:`~adcompare.bench.targets.rounds.Sampler`);
3. the entries are timed in interleaved rounds, one sample of each in turn
   (:func:`~adcompare.bench.targets.rounds.take_rounds`), so every ratio of the
   target divides medians taken under the same load;
4. its cells are added to a :class:`~adcompare.bench.harness.results.Results`,
   with their target and library, even when the rounds are interrupted
   (with the samples taken so far).

Times run with one BLAS thread (and one torch thread). glibc's allocator is
pinned first (:func:`~adcompare.bench.harness.env.pin_allocator`) and recorded
with the machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from threadpoolctl import threadpool_limits

from adcompare.bench.harness.env import describe, environment_key, pin_allocator
from adcompare.bench.harness.measure import describe_error, measure_cell
from adcompare.bench.harness.modes import Mode
from adcompare.bench.harness.results import Results, now
from adcompare.bench.peers import PeerMode
from adcompare.bench.problems import Instance
from adcompare.bench.targets.cases import FULL, TargetSizes, replayed, target_cases
from adcompare.bench.targets.rounds import CLOCK, Sampler, take_rounds
from adcompare.bench.targets.view import WRONG, entry, target_rows

__all__ = [
    "Settings",
    "measure_cells",
    "measure_entry",
    "measure_row",
    "measure_targets",
    "target_cell",
]


@dataclass(frozen=True)
class Settings:
    """How each target's entries are timed: ``rounds`` interleaved rounds (fewer once a
    target's rounds have taken ``budget`` seconds), each one sample of every entry of at
    least ``sample_time`` seconds of CPU time; replayed and jitted entries are called
    ``warm_up`` times before they are timed."""

    rounds: int = 15
    sample_time: float = 0.02
    warm_up: int = 10
    budget: float = 60.0


def _prepare(
    instance: Instance, mode: Mode | PeerMode, library: str, settings: Settings, target: str
) -> tuple[dict, Sampler | None]:
    """An entry's cell, checked, and its sampler (``None``: not to be timed)."""
    cell = {
        "problem": instance.problem,
        "family": instance.family,
        "mode": mode.name,
        "size": dict(instance.size),
        "n": instance.n,
        "m": instance.m,
        "target": target,
        "library": library,
        "label": mode.label,
    }
    reason = mode.unavailable(instance)
    if reason:
        return {**cell, "status": "skipped", "reason": reason}, None
    try:
        measured = measure_cell(
            instance, mode, repeats=1, min_repeat_time=0.0, memory=False, interleaved=True
        )
        timer = measured.pop("timer")
        cell.update(measured, first_call=timer.warmup)
        if cell["check"] and not cell["check"]["ok"]:
            message = f"disagrees with adcompare's derivative (error {cell['check']['error']:.1e})"
            return {**cell, "status": "error", "error": {"type": WRONG, "message": message}}, None
        sampler = Sampler(
            timer.work,
            sample_time=settings.sample_time,
            warm_up=settings.warm_up if replayed(mode) else 0,
            calls_made=2,  # the harness timer's first and calibration calls
        )
    except Exception as error:
        return {**cell, "status": "error", "error": describe_error(error)}, None
    return cell, sampler


def _finished(cell: dict, sampler: Sampler | None) -> dict | None:
    """The cell with its samples' times; ``None`` for an entry interrupted before any."""
    if sampler is None:
        return cell
    if not sampler.cpu:
        return None
    return {**cell, "time": {**sampler.summary(), "warmup": cell["first_call"]}, "status": "ok"}


def measure_row(
    instance: Instance,
    choices: list[tuple[str, Mode | PeerMode]],
    settings: Settings,
    target: str = "",
    keep: Callable[[dict], None] | None = None,
) -> list[dict]:
    """One target's entries as results cells: each prepared and checked, then all timed
    in interleaved rounds. ``keep`` receives each cell as it is final, also when the
    rounds are interrupted (an entry with no sample yet is left out).

    ``status`` is ``ok``, ``skipped`` (its library is missing, or it cannot run the
    problem) or ``error`` (it raised, or its derivative disagrees: error type
    :data:`~adcompare.bench.targets.view.WRONG`, no time).

    >>> from adcompare.bench.harness.modes import MODES
    >>> from adcompare.bench.targets.problems import chain
    >>> choices = [("adcompare", MODES["reverse"]), ("adcompare", MODES["reverse-replay"])]
    >>> cells = measure_row(chain(4), choices, Settings(rounds=3, sample_time=0.001), "a")
    >>> [(c["status"], c["time"]["repeats"], c["time"]["warm_up_calls"]) for c in cells]
    [('ok', 3, 2), ('ok', 3, 10)]
    """
    prepared, cells = [], []
    try:
        for library, mode in choices:
            prepared.append(_prepare(instance, mode, library, settings, target))
        take_rounds([s for _, s in prepared if s is not None], settings.rounds, settings.budget)
    finally:
        for cell, sampler in prepared:
            finished = _finished(cell, sampler)
            if finished is not None:
                cells.append(finished)
                if keep is not None:
                    keep(finished)
    return cells


def target_cell(
    instance: Instance, mode: Mode | PeerMode, library: str, settings: Settings, target: str = ""
) -> dict:
    """One entry measured alone as a results cell (:func:`measure_row` of one entry).

    >>> from adcompare.bench.harness.modes import MODES
    >>> from adcompare.bench.targets.problems import chain
    >>> cell = target_cell(chain(4), MODES["reverse"], "adcompare", Settings(rounds=1), "a")
    >>> cell["status"], cell["check"]["ok"], cell["time"]["cpu_median"] > 0, cell["target"]
    ('ok', True, True, 'a')
    """
    return measure_row(instance, [(library, mode)], settings, target)[0]


def measure_entry(
    instance: Instance, mode: Mode | PeerMode, library: str, settings: Settings
) -> dict:
    """One entry measured (:func:`target_cell`) and read as the table reads it
    (:func:`~adcompare.bench.targets.view.entry`): ``status`` ``ok``, ``skipped``,
    ``wrong`` (no time) or ``error``.

    >>> from adcompare.bench.harness.modes import MODES
    >>> from adcompare.bench.targets.problems import chain
    >>> measured = measure_entry(chain(4), MODES["reverse"], "adcompare", Settings(rounds=1))
    >>> measured["status"], measured["check"]["ok"], measured["seconds"] > 0
    ('ok', True, True)
    """
    return entry(target_cell(instance, mode, library, settings))


def measure_cells(
    sizes: TargetSizes = FULL,
    settings: Settings = Settings(),
    results: Results | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> Results:
    """Measure every target's entries into ``results`` (saved as each target ends).

    >>> from adcompare.bench.targets.cases import SMALL
    >>> results = measure_cells(SMALL, Settings(rounds=1, sample_time=0.0))
    >>> sorted({cell["target"] for cell in results.cells})
    ['a', 'b', 'c', 'd', 'e1', 'e2', 'e3', 'f', 'g']
    """
    results = results if results is not None else Results()
    with threadpool_limits(limits=1, user_api="blas"):
        pin_allocator()
        description = describe()
        env = environment_key(description)
        results.add_environment(env, description)
        config = {"sizes": asdict(sizes), "settings": {**asdict(settings), "clock": CLOCK}}
        results.start_run({"targets": config})
        for target, case in target_cases(sizes).items():
            measure_row(
                case.instance,
                case.choices,
                settings,
                target,
                keep=lambda cell: results.add({**cell, "env": env, "finished": now()}),
            )
            if progress:
                progress(f"measured target {target}")
    return results


def measure_targets(
    sizes: TargetSizes = FULL,
    settings: Settings = Settings(),
    results: Results | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Measure every target and read the table off the cells
    (:func:`~adcompare.bench.targets.view.target_rows`):
    ``{"sizes", "settings", "allocator", "rows"}``, JSON-ready.

    >>> from adcompare.bench.targets.cases import SMALL
    >>> result = measure_targets(SMALL, Settings(rounds=1, sample_time=0.0))
    >>> [row["id"] for row in result["rows"]]
    ['a', 'b', 'c', 'd', 'e1', 'e2', 'e3', 'f', 'g']
    >>> result["allocator"] == pin_allocator()
    True
    """
    return target_rows(measure_cells(sizes, settings, results, progress=progress))
