"""GradBench's rule for judging a tool's output against the reference, made stricter.

GradBench compares JSON values with ``compare_json_objects``: an int meets a
float as a float, the types must then be equal (a bool is not an int),
objects must have the same keys, lists the same length, floats must satisfy
|a − b| / max(1, |a| + |b|) ≤ 1e-4 (ADBench's measure), and anything else
must be equal. Its Python form lets NaN and infinity through (a NaN
difference is not greater than the tolerance); this one rejects them.

>>> mismatches({"x": [1, 2.0]}, {"x": [1.00001, 2.0]})
[]
>>> mismatches({"x": [1.0, 2.0]}, {"x": [1.0]})
['$.x: got 1 entries, expected 2']
"""

from __future__ import annotations

import math

__all__ = ["TOLERANCE", "mismatches"]

#: GradBench's tolerance on |a − b| / max(1, |a| + |b|).
TOLERANCE = 1e-4

#: How many mismatches are described before the rest are only counted.
_SHOWN = 20


def mismatches(expected, actual, *, tolerance: float = TOLERANCE) -> list[str]:
    """Every place where ``actual`` fails GradBench's rule against ``expected``, as
    ``"<JSON path>: <what differs>"`` sentences; empty when ``actual`` is valid.

    Non-finite floats on either side are mismatches. After 20 mismatches the
    rest are summed up in one last entry.

    >>> mismatches(1, 1.0), mismatches(True, 1), mismatches({"a": 1}, {"b": 1})
    ([], ['$: got int, expected bool'], ['$: missing key a', '$: unexpected key b'])
    >>> mismatches([0.5], [float("nan")])
    ['$[0]: nan is not a finite number']
    >>> mismatches(1000.0, 1000.1), mismatches(1000.0, 1001.0)
    ([], ['$: 1001.0 differs from 1000.0 by 0.0005 > 0.0001 (relative to max(1, |a|+|b|))'])
    """
    found: list[str] = []
    _walk(expected, actual, "$", tolerance, found)
    if len(found) > _SHOWN:
        found[_SHOWN:] = [f"and {len(found) - _SHOWN} more mismatches"]
    return found


def _type_name(value) -> str:
    names = {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _walk(expected, actual, path: str, tolerance: float, found: list[str]) -> None:
    """Append the mismatches of ``actual`` against ``expected`` at ``path`` to ``found``."""
    if isinstance(expected, float) and _is_int(actual):
        actual = float(actual)
    elif isinstance(actual, float) and _is_int(expected):
        expected = float(expected)
    if type(expected) is not type(actual):
        found.append(f"{path}: got {_type_name(actual)}, expected {_type_name(expected)}")
    elif isinstance(expected, dict):
        _walk_object(expected, actual, path, tolerance, found)
    elif isinstance(expected, list):
        if len(expected) != len(actual):
            found.append(f"{path}: got {len(actual)} entries, expected {len(expected)}")
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            _walk(e, a, f"{path}[{i}]", tolerance, found)
    elif isinstance(expected, float):
        _compare_floats(expected, actual, path, tolerance, found)
    elif expected != actual:
        found.append(f"{path}: got {actual!r}, expected {expected!r}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _walk_object(expected: dict, actual: dict, path: str, tolerance: float, found: list) -> None:
    found.extend(f"{path}: missing key {key}" for key in expected if key not in actual)
    found.extend(f"{path}: unexpected key {key}" for key in actual if key not in expected)
    for key in expected:
        if key in actual:
            _walk(expected[key], actual[key], f"{path}.{key}", tolerance, found)


def _compare_floats(expected: float, actual: float, path: str, tolerance: float, found: list):
    for value in (actual, expected):
        if not math.isfinite(value):
            found.append(f"{path}: {value} is not a finite number")
            return
    error = abs(expected - actual) / max(1.0, abs(expected) + abs(actual))
    if error > tolerance:
        found.append(
            f"{path}: {actual!r} differs from {expected!r} by {error:.2g} > {tolerance:g} "
            "(relative to max(1, |a|+|b|))"
        )
