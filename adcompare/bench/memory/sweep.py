"""The memory study's sweep: each loop problem at growing T, by each memory mode.

A cell (problem, mode, T) gets, each from its own call:

- wall time: the median of timed calls (:func:`~adcompare.bench.harness.measure.time_calls`)
  while a call is short, one timed call once it is long (``long_call`` seconds);
- the deterministic counts of :func:`adcompare.count`: the peak live tape
  bytes, the recomputed steps and ops, the most snapshots held;
- peak memory, traced by :mod:`tracemalloc`
  (:func:`~adcompare.bench.harness.measure.peak_memory`);
- a check: the gradient against forward mode's (reverse modes) or the full
  tape's (forward mode) at the same T.

A peer's cell (:mod:`~adcompare.bench.memory.peers`) first checks the peer's
gradient against adcompare's at the same T, and is timed only if it agrees
(else its status is ``"error"``); its peak memory is read by the peer's own
tool, beside the resident-set high-water mark; it has no counts. A peer
whose library is missing is skipped with a note saying how to install it.

A mode is skipped at a T when its last two T's extrapolate past the time
budget per cell; the skipped cell records why. The results are a JSON
document (``adcompare-memory-results``) rewritten as each cell finishes.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from threadpoolctl import threadpool_limits

import adcompare as ad
from adcompare.bench.harness.budget import extrapolate
from adcompare.bench.harness.env import describe
from adcompare.bench.harness.measure import peak_memory, time_calls
from adcompare.bench.harness.results import now
from adcompare.bench.memory.loops import LOOP_PROBLEMS, loop_instance, resolve
from adcompare.bench.memory.modes import MEMORY_MODES, gradient_error
from adcompare.bench.memory.peers import PeerMemoryMode, lookup_memory_mode, rss_peak_bytes

__all__ = [
    "MEMORY_PRESETS",
    "MemoryConfig",
    "MemoryResults",
    "load_memory_results",
    "measure_peer_cell",
    "memory_preset",
    "merge_cells",
    "run_memory_sweep",
]

SCHEMA = "adcompare-memory-results"
SCHEMA_VERSION = 1
#: Calls a cell makes at least: the timed one, the count run and the traced run.
CALLS_PER_CELL = 3
#: Largest relative error a gradient may have against the other engine's.
TOLERANCE = 1e-8


@dataclass
class MemoryConfig:
    """What the memory study measures: problems (names or loop problems, see
    :func:`~adcompare.bench.problems.loop_problem`), modes, the step counts T, a time budget."""

    problems: list = field(default_factory=lambda: list(LOOP_PROBLEMS))
    modes: list[str] = field(default_factory=lambda: list(MEMORY_MODES))
    steps: list[int] = field(default_factory=lambda: [10, 100, 1000])
    budget: float = 5.0
    repeats: int = 3
    long_call: float = 1.0
    memory: bool = True

    def __post_init__(self):
        for given in self.problems:
            resolve(given)
        for name in self.modes:
            lookup_memory_mode(name)
        if any(int(t) != t or t < 1 for t in self.steps):
            raise ValueError(f"steps must be positive whole numbers, not {self.steps}")
        if not self.budget > 0:
            raise ValueError(f"the budget must be a positive number of seconds, not {self.budget}")


MEMORY_PRESETS = {
    "quick": {"steps": [10, 100, 1000], "budget": 5.0, "repeats": 3},
    "full": {"steps": [10, 100, 1000, 10_000, 100_000], "budget": 600.0, "repeats": 3},
}


def memory_preset(name: str, **overrides) -> MemoryConfig:
    """A preset (``"quick"`` or ``"full"``) with ``overrides``.

    >>> memory_preset("full").steps[-1], memory_preset("quick", steps=[5]).steps
    (100000, [5])
    """
    settings = dict(MEMORY_PRESETS[name])
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return MemoryConfig(**settings)


class MemoryResults:
    """The cells measured so far, saved to ``path`` (if any) after each one."""

    def __init__(self, path: Path | None = None, data: dict | None = None):
        self.path = path
        self.data = data or {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "created": now(),
            "environment": None,
            "config": None,
            "cells": [],
        }

    @property
    def cells(self) -> list[dict]:
        return self.data["cells"]

    def add(self, cell: dict) -> None:
        self.cells.append(cell)
        self.save()

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(self.data, out, indent=1)
        os.replace(temporary, self.path)


def load_memory_results(path: Path) -> MemoryResults:
    """Read a memory study's results; a clear error for another kind of file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read memory-study results {path}: {error}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(
            f"{path} is not a memory study's results (schema {SCHEMA!r}); "
            "write one with 'adcompare memory'"
        )
    return MemoryResults(Path(path), data)


def merge_cells(*cell_lists: list[dict]) -> list[dict]:
    """The cells of several runs, one per (problem, mode, T): a measured one wins
    over a skipped one, a later one over an earlier one.

    >>> a = [{"problem": "heat", "mode": "reverse", "steps": 10, "status": "ok"}]
    >>> b = [{"problem": "heat", "mode": "reverse", "steps": 10, "status": "skipped"}]
    >>> [c["status"] for c in merge_cells(a, b)]
    ['ok']
    """
    merged: dict[tuple, dict] = {}
    for cells in cell_lists:
        for cell in cells:
            key = (cell["problem"], cell["mode"], cell["steps"])
            old = merged.get(key)
            if old is None or old["status"] != "ok" or cell["status"] == "ok":
                merged[key] = cell
    return list(merged.values())


def _skip_reason(cells: list[dict], problem: str, mode: str, steps: int, budget: float):
    line = sorted(
        (c for c in cells if c["problem"] == problem and c["mode"] == mode and c["status"] == "ok"),
        key=lambda c: c["steps"],
    )
    if len(line) < 2:
        return None
    (t1, s1), (t2, s2) = [(c["steps"], c["time"]["median"]) for c in line[-2:]]
    predicted, slope = extrapolate(t1, s1, t2, s2, steps, low=1.0, high=3.0)
    if predicted * CALLS_PER_CELL > budget:
        return (
            f"{mode} is predicted to take {predicted:.3g} s a call at T={steps} (log-log slope "
            f"{slope:.2f} from T={t1} and T={t2}), over the {budget:g} s budget per cell"
        )
    return None


def _timing(work, config: MemoryConfig):
    start = time.perf_counter()
    result = work()
    first = time.perf_counter() - start
    if first >= config.long_call:
        return {"median": first, "repeats": 1, "samples": [first]}, result
    timing, result = time_calls(work, repeats=config.repeats, budget=config.budget)
    return {k: timing[k] for k in ("median", "iqr", "min", "repeats", "samples")}, result


def measure_memory_cell(instance, mode, config: MemoryConfig) -> tuple[dict, object]:
    """Time, counts and traced peak memory of one cell, and the gradient it computed."""
    work = mode.prepare(instance)
    timing, gradient = _timing(work, config)
    with ad.count() as cost:
        work()
    counts = {
        "peak_tape_bytes": cost.peak_tape_bytes,
        "tape_records": cost.tape_records,
        "recomputed_steps": cost.recomputed_steps,
        "recomputed_ops": cost.recomputed_ops,
        "peak_snapshots": cost.peak_snapshots,
        "ops": dict(cost.ops),
    }
    peak = peak_memory(work) if config.memory else None
    cell = {"time": timing, "counts": counts, "memory": {"peak_bytes": peak}}
    return cell, gradient


def _reference(instance, measured: dict):
    """adcompare's gradient at this T: one measured already, else revolve's with ⌈√T⌉
    snapshots (its memory stays small at any T)."""
    for name in ("reverse", "revolve:sqrt", *measured):
        if measured.get(name) is not None:
            return measured[name]
    gradient = MEMORY_MODES["revolve:sqrt"].prepare(instance)()
    measured["revolve:sqrt"] = gradient
    return gradient


def measure_peer_cell(instance, mode: PeerMemoryMode, config: MemoryConfig, reference) -> dict:
    """A peer's cell: its gradient checked against adcompare's ``reference``, then, if
    it agrees, its time and peak memory (by the peer's own tool and by the resident set).
    """
    start = time.perf_counter()
    work = mode.prepare(instance)
    prepared = time.perf_counter() - start
    error = gradient_error(work(), reference)
    check = {"against": "adcompare", "error": error, "ok": error <= TOLERANCE}
    if not check["ok"]:
        return {
            "status": "error",
            "check": check,
            "reason": f"{mode.name}'s gradient differs from adcompare's by {error:.3g} "
            f"(relative), over the {TOLERANCE:g} tolerance; it was not timed",
        }
    timing, _ = _timing(work, config)
    timing["prepare"] = prepared
    memory = {"peak_bytes": None, "tool": mode.tool, "rss_peak_bytes": None}
    if config.memory:
        memory.update(peak_bytes=mode.peak_bytes(work), rss_peak_bytes=rss_peak_bytes(work))
    return {"status": "ok", "time": timing, "counts": {}, "memory": memory, "check": check}


def _checks(measured: dict) -> dict:
    """Each gradient against the other engine's: forward for reverse modes, and back."""
    checks = {}
    for name, gradient in measured.items():
        against = "reverse" if name == "forward" else "forward"
        if gradient is None or measured.get(against) is None:
            continue
        error = gradient_error(gradient, measured[against])
        checks[name] = {"against": against, "error": error, "ok": error <= TOLERANCE}
    return checks


def run_memory_sweep(
    config: MemoryConfig, results: MemoryResults | None = None, *, quiet: bool = True
) -> MemoryResults:
    """Measure every (problem, T, mode) of ``config``, adding each cell as it ends.

    >>> results = run_memory_sweep(MemoryConfig(problems=["heat"], modes=["f", "revolve:4"],
    ...                                         steps=[5], memory=False))
    >>> [(c["mode"], c["status"], c["counts"]["peak_snapshots"]) for c in results.cells]
    [('f', 'ok', 0), ('revolve:4', 'ok', 4)]
    """
    results = results if results is not None else MemoryResults()
    results.data["environment"] = describe()
    loops = [resolve(given) for given in config.problems]
    results.data["config"] = asdict(config) | {"problems": [loop.name for loop in loops]}
    with threadpool_limits(limits=1, user_api="blas"):
        for loop in loops:
            problem = loop.name
            for steps in sorted(config.steps):
                instance = loop_instance(loop, steps)
                measured, cells = {}, []
                for name in config.modes:
                    cell = {"problem": problem, "mode": name, "steps": steps}
                    mode = lookup_memory_mode(name)
                    reason = _skip_reason(results.cells, problem, name, steps, config.budget)
                    peer = isinstance(mode, PeerMemoryMode)
                    if reason is None and peer:
                        reason = mode.unavailable()
                    if reason is None and not quiet:
                        print(f"  {problem} T={steps} {name}", flush=True)
                    if reason is None and peer:
                        reference = _reference(instance, measured)
                        cell.update(measure_peer_cell(instance, mode, config, reference))
                    elif reason is None:
                        measurement, gradient = measure_memory_cell(instance, mode, config)
                        cell.update(measurement, status="ok", state_bytes=instance.state_bytes)
                        if mode.snapshots is not None:
                            cell["snapshots"] = mode.snapshots(steps)
                        if mode.derivative:
                            measured[name] = gradient
                    if reason is not None:
                        cell.update(status="skipped", reason=reason)
                    cell["finished"] = now()
                    cells.append(cell)
                    results.add(cell)
                for cell in cells:
                    check = _checks(measured).get(cell["mode"])
                    if check is not None:
                        cell["check"] = check
                results.save()
    return results
