"""Checked fields of a JSON object: GradBench's inputs, read from a file or a message.

Each check names where the object came from (``where``: a file, an eval's
input) and says what it expected, in one sentence raised as
:class:`~adcompare.adbench.tokens.FormatError`.
"""

from __future__ import annotations

import numpy as np

from adcompare.adbench.tokens import FormatError

__all__ = ["json_array", "json_integer", "json_number", "json_object"]


def json_object(value, where: str, what: str) -> dict:
    """``value`` if it is a JSON object, else a :class:`FormatError` saying ``what`` it should be.

    >>> json_object([1], "gmm", "an object with d, k, n, ...")
    Traceback (most recent call last):
    ...
    adcompare.adbench.tokens.FormatError: gmm: expected an object with d, k, n, ..., not a list
    """
    if not isinstance(value, dict):
        raise FormatError(f"{where}: expected {what}, not a {type(value).__name__}")
    return value


def json_integer(record: dict, key: str, where: str, minimum: int = 1, label: str = "") -> int:
    """``record[key]``, an integer of at least ``minimum`` (``label`` prefixes the key's name).

    >>> json_integer({"k": "five"}, "k", "gmm", label="input.")
    Traceback (most recent call last):
    ...
    adcompare.adbench.tokens.FormatError: gmm: 'input.k' is 'five'; expected a positive integer
    """
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        expected = "a positive integer" if minimum == 1 else f"an integer of at least {minimum}"
        raise FormatError(f"{where}: '{label}{key}' is {value!r}; expected {expected}")
    return value


def json_number(record: dict, key: str, where: str, positive: bool = False, label: str = ""):
    """``record[key]``, a finite number (``positive``: above 0) as a float.

    >>> json_number({"w": 0.5}, "w", "ba")
    0.5
    >>> json_number({}, "w", "ba")
    Traceback (most recent call last):
    ...
    adcompare.adbench.tokens.FormatError: ba: 'w' is None; expected a finite number
    """
    value = record.get(key)
    valid = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not valid or not np.isfinite(value) or (positive and value <= 0):
        expected = "a positive number" if positive else "a finite number"
        raise FormatError(f"{where}: '{label}{key}' is {value!r}; expected {expected}")
    return float(value)


def json_array(record: dict, key: str, shape: tuple[int, ...], where: str) -> np.ndarray:
    """``record[key]`` as a float64 array of exactly ``shape``, every entry finite.

    >>> json_array({"x": [1, 2.5]}, "x", (2,), "lse")
    array([1. , 2.5])
    >>> json_array({"x": [1, float("nan")]}, "x", (2,), "lse")
    Traceback (most recent call last):
    ...
    adcompare.adbench.tokens.FormatError: lse: 'x' holds NaN or infinite numbers; send finite ones
    """
    if key not in record:
        raise FormatError(f"{where}: the input has no {key!r}; expected an array of shape {shape}")
    try:
        value = np.array(record[key], dtype=np.float64)
    except (TypeError, ValueError):
        raise FormatError(
            f"{where}: {key!r} is not a regular array of numbers; expected shape {shape}"
        ) from None
    if value.shape != shape:
        raise FormatError(f"{where}: {key!r} has shape {value.shape}; expected shape {shape}")
    if not np.isfinite(value).all():
        raise FormatError(f"{where}: {key!r} holds NaN or infinite numbers; send finite ones")
    return value
