"""Measure the targets' entries as cells of a results file, then read the table off them.

Each entry (:func:`~adcompare.bench.targets.cases.target_cases`) is one cell,
measured by the harness (:func:`~adcompare.bench.harness.measure.measure_cell`:
warm-up, derivative check, counts, timed repeats) and added to a
:class:`~adcompare.bench.harness.results.Results` as it ends, with its target
and library. An entry whose derivative disagrees with adcompare's is checked
before it is timed and gets no time: its cell ends in an error that says so.
Times are medians of repeats with one BLAS thread (and one torch thread);
every ratio comes from the same run. glibc's allocator is pinned first
(:func:`~adcompare.bench.harness.env.pin_allocator`) and recorded with the
machine.
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
from adcompare.bench.targets.cases import FULL, TargetSizes, target_cases
from adcompare.bench.targets.view import WRONG, entry, target_rows

__all__ = ["Settings", "measure_cells", "measure_entry", "measure_targets", "target_cell"]


@dataclass(frozen=True)
class Settings:
    """How hard to time each entry: ``repeats`` timed repeats within ``budget`` seconds."""

    repeats: int = 7
    budget: float = 4.0
    min_repeat_time: float = 0.01


def target_cell(
    instance: Instance, mode: Mode | PeerMode, library: str, settings: Settings, target: str = ""
) -> dict:
    """One entry as a results cell: checked first, then timed.

    ``status`` is ``ok``, ``skipped`` (its library is missing) or ``error``
    (it raised, or its derivative disagrees: error type :data:`WRONG`, no time).

    >>> from adcompare.bench.harness.modes import MODES
    >>> from adcompare.bench.targets.problems import chain
    >>> cell = target_cell(chain(4), MODES["reverse"], "adcompare", Settings(repeats=1), "a")
    >>> cell["status"], cell["check"]["ok"], cell["time"]["median"] > 0, cell["target"]
    ('ok', True, True, 'a')
    """
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
        return {**cell, "status": "skipped", "reason": reason}
    try:
        measured = measure_cell(
            instance,
            mode,
            repeats=settings.repeats,
            budget=settings.budget,
            min_repeat_time=settings.min_repeat_time,
            memory=False,
            interleaved=True,
        )
        timer = measured.pop("timer")
        cell.update(measured, first_call=timer.warmup)
        if cell["check"] and not cell["check"]["ok"]:
            message = f"disagrees with adcompare's derivative (error {cell['check']['error']:.1e})"
            return {**cell, "status": "error", "error": {"type": WRONG, "message": message}}
        while timer.remaining > 0:
            timer.time_repeat()
        cell["time"] = timer.summary()
    except Exception as error:
        return {**cell, "status": "error", "error": describe_error(error)}
    return {**cell, "status": "ok"}


def measure_entry(
    instance: Instance, mode: Mode | PeerMode, library: str, settings: Settings
) -> dict:
    """One entry measured (:func:`target_cell`) and read as the table reads it
    (:func:`~adcompare.bench.targets.view.entry`): ``status`` ``ok``, ``skipped``,
    ``wrong`` (no time) or ``error``.

    >>> from adcompare.bench.harness.modes import MODES
    >>> from adcompare.bench.targets.problems import chain
    >>> measured = measure_entry(chain(4), MODES["reverse"], "adcompare", Settings(repeats=1))
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
    """Measure every target's entries into ``results`` (saved as each cell ends).

    >>> from adcompare.bench.targets.cases import SMALL
    >>> results = measure_cells(SMALL, Settings(repeats=1, budget=0.1))
    >>> sorted({cell["target"] for cell in results.cells})
    ['a', 'b', 'c', 'd', 'e1', 'e2', 'e3']
    """
    results = results if results is not None else Results()
    with threadpool_limits(limits=1, user_api="blas"):
        pin_allocator()
        description = describe()
        env = environment_key(description)
        results.add_environment(env, description)
        results.start_run({"targets": {"sizes": asdict(sizes), "settings": asdict(settings)}})
        for target, case in target_cases(sizes).items():
            for library, mode in case.choices:
                cell = target_cell(case.instance, mode, library, settings, target)
                results.add({**cell, "env": env, "finished": now()})
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
    >>> result = measure_targets(SMALL, Settings(repeats=1, budget=0.1))
    >>> [row["id"] for row in result["rows"]]
    ['a', 'b', 'c', 'd', 'e1', 'e2', 'e3']
    >>> result["allocator"] == pin_allocator()
    True
    """
    return target_rows(measure_cells(sizes, settings, results, progress=progress))
