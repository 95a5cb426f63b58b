"""What a cell of a results file may hold: its identity and the schema every cell is read against.

A cell that does not fit is left out when a file is read
(:func:`~adcompare.bench.harness.results.load_results`), with a sentence
saying why, so one corrupt cell never costs the good ones.
"""

from __future__ import annotations

import math
import re

__all__ = ["STATUSES", "ResultsError", "cell_key", "cell_problem", "describe_cell"]

STATUSES = ("ok", "skipped", "error")
_REQUIRED = ("problem", "mode", "size", "status")


class ResultsError(ValueError):
    """A results file that cannot be read: corrupt, foreign, or too new."""


def cell_key(cell: dict) -> tuple:
    """What identifies a cell: problem, mode and size.

    >>> cell_key({"problem": "mlp", "mode": "f", "size": {"n": 8}})
    ('mlp', 'f', (('n', 8),))
    """
    return cell["problem"], cell["mode"], tuple(sorted(cell["size"].items()))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value) -> bool:
    return _number(value) and math.isfinite(value)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TEXT_FIELDS = ("family", "description", "env", "finished", "source", "reason")
_TIME_FIELDS = ("iqr", "min", "max", "warmup")


def _text_problem(name: str, value) -> str | None:
    if not isinstance(value, str):
        return f"has {name} {value!r}, not text"
    if _CONTROL.search(value):
        return f"has control characters in its {name} {value!r}"
    return None


def _time_problem(timing) -> str | None:
    if not isinstance(timing, dict):
        return f"has time {timing!r}, not an object with a median"
    median = timing.get("median")
    if not _finite(median) or median <= 0:
        return f"has median time {median!r}; expected a positive number of seconds"
    for name in _TIME_FIELDS:
        value = timing.get(name)
        if value is not None and (not _finite(value) or value < 0):
            return f"has time.{name} {value!r}; expected seconds (a number, 0 or more)"
    samples = timing.get("samples")
    if samples is not None and not (
        isinstance(samples, list) and all(_finite(v) and v >= 0 for v in samples)
    ):
        return "has time.samples that are not a list of seconds"
    for name in ("repeats", "loops"):
        value = timing.get(name)
        if value is not None and not _count(value):
            return f"has time.{name} {value!r}; expected a positive whole number"
    return None


#: The counts kept per engine or per op, each an object of counts by name.
_COUNTS_BY_NAME = ("ops", "elements", "by_op")


def _counts_problem(counts) -> str | None:
    if counts is None:
        return None
    if not isinstance(counts, dict):
        return f"has counts {counts!r}, not an object"
    for name, value in counts.items():
        if name in _COUNTS_BY_NAME and not isinstance(value, dict):
            return f"has counts.{name} {value!r}; expected counts by name, like {{'numpy': 12}}"
        numbers = value.values() if isinstance(value, dict) else [value]
        if not all(_finite(v) and v >= 0 for v in numbers):
            return f"has counts.{name} {value!r}; expected counts (numbers, 0 or more)"
    return None


def _check_problem(check) -> str | None:
    if check is None:
        return None
    fits = (
        isinstance(check, dict)
        and isinstance(check.get("ok"), bool)
        and _number(check.get("error"))
        and _finite(check.get("tolerance"))
        and isinstance(check.get("against"), str)
    )
    return None if fits else f"has check {check!r}; expected ok, error, tolerance and against"


def _measured_problem(cell: dict) -> str | None:
    memory = cell.get("memory")
    peak = memory.get("peak_bytes") if isinstance(memory, dict) else None
    if memory is not None and (
        not isinstance(memory, dict) or (peak is not None and not (_finite(peak) and peak >= 0))
    ):
        return f"has memory {memory!r}; expected {{'peak_bytes': a number of bytes or null}}"
    return (
        _time_problem(cell.get("time"))
        or _counts_problem(cell.get("counts"))
        or _check_problem(cell.get("check"))
    )


def cell_problem(cell) -> str | None:
    """What makes ``cell`` unfit for the schema, as a phrase; ``None`` when it fits.

    A measured cell needs positive whole ``n`` and ``m`` and a positive finite
    median time; every optional field present has its documented type.

    >>> cell = {"problem": "mlp", "mode": "f", "size": {"n": 8}, "status": "ok", "n": 8, "m": 1}
    >>> cell_problem(cell | {"time": {"median": 1e-5}}) is None
    True
    >>> cell_problem(cell | {"time": {"median": "fast"}})
    "has median time 'fast'; expected a positive number of seconds"
    """
    if not isinstance(cell, dict):
        return f"is a {type(cell).__name__}, not an object"
    missing = [k for k in _REQUIRED if k not in cell]
    if missing:
        return f"lacks {', '.join(map(repr, missing))}"
    if cell["status"] not in STATUSES:
        return f"has status {cell['status']!r}; expected one of {STATUSES}"
    for name in ("problem", "mode"):
        problem = _text_problem(name, cell[name]) or (
            None if cell[name] else f"has an empty {name}"
        )
        if problem:
            return problem
    size = cell["size"]
    if not isinstance(size, dict) or not all(
        isinstance(k, str) and _count(v) for k, v in size.items()
    ):
        return f"has size {size!r}; expected positive whole numbers by name, like {{'n': 64}}"
    for name in _TEXT_FIELDS:
        if cell.get(name) is not None and (problem := _text_problem(name, cell[name])):
            return problem
    for name in ("n", "m"):
        value = cell.get(name)
        if (cell["status"] == "ok" or value is not None) and not _count(value):
            return f"has {name} = {value!r}; expected a positive whole number"
    for name in ("load", "seconds"):
        value = cell.get(name)
        if value is not None and (not _finite(value) or value < 0):
            return f"has {name} {value!r}; expected a number, 0 or more"
    if cell["status"] == "ok":
        return _measured_problem(cell)
    if cell["status"] == "error":
        error = cell.get("error")
        if not isinstance(error, dict) or not all(
            isinstance(error.get(k), str) for k in ("type", "message")
        ):
            return f"has error {error!r}; expected its type and message"
    return None


def describe_cell(i: int, cell) -> str:
    if isinstance(cell, dict) and isinstance(cell.get("problem"), str):
        name = " ".join(
            repr(cell[k])[:60] for k in ("problem", "mode") if isinstance(cell.get(k), str)
        )
        return f"cell {i} ({name})"
    return f"cell {i}"
