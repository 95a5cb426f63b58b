"""Tolerances by dtype and reference, and ADBench's error measure."""

from __future__ import annotations

import math
import numbers

import numpy as np

# Relative tolerance by the dtype of the differentiated inputs (and the order).
_DTYPE_RTOL = {
    np.dtype(np.float64): {1: 1e-8, 2: 1e-8},
    np.dtype(np.float32): {1: 1e-4, 2: 1e-3},
    np.dtype(np.float16): {1: 1e-2, 2: 3e-2},
}
# How accurate the numeric references are (order 1 and 2) in float64.
_REFERENCE_RTOL = {"fd": {1: 1e-6, 2: 1e-4}, "complex_step": {1: 1e-8, 2: 1e-6}}


def default_tolerance(dtype, against: str = "symbolic", order: int = 1) -> float:
    """The default ``rtol`` for inputs of ``dtype`` checked against ``against``.

    >>> default_tolerance("float64"), default_tolerance("float32")
    (1e-08, 0.0001)
    >>> default_tolerance("float64", against="fd")
    1e-06
    """
    dtype = np.dtype(dtype)
    by_order = _DTYPE_RTOL.get(dtype, _DTYPE_RTOL[np.dtype(np.float64)])
    rtol = by_order[order]
    if against in _REFERENCE_RTOL:
        rtol = max(rtol, _REFERENCE_RTOL[against][order])
    return rtol


def relative_error(a, b) -> np.ndarray:
    """ADBench's ρ = |a − b| / max(1, |a| + |b|), elementwise; 0 where a and b are equal.

    Two infinities of the same sign, or two NaNs, count as equal; any other
    non-finite entry gives ρ = inf.

    >>> relative_error([1.0, 100.0], [1.5, 101.0]).round(5).tolist()
    [0.2, 0.00498]
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    diff, scale = _difference(a, b)
    return diff / scale


def _difference(a: np.ndarray, b: np.ndarray):
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(all="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
        scale = np.maximum(1.0, np.abs(a) + np.abs(b))
    bad = ~same & ~(np.isfinite(a) & np.isfinite(b))
    diff = np.where(bad, np.inf, diff)
    scale = np.where(np.isfinite(scale), scale, 1.0)
    return diff, scale


def checked_tolerance(value, name: str) -> float | None:
    """``value`` as a float (``None``, the default, passes); refuses NaN, inf and negatives.

    With a NaN tolerance no entry fails, with inf every entry passes, and
    with a negative one none can: each would report a check that was not made.

    >>> checked_tolerance(1e-6, "rtol")
    1e-06
    >>> checked_tolerance(float("nan"), "rtol")
    Traceback (most recent call last):
    ...
    ValueError: rtol must be a finite number >= 0, not nan (NaN or inf would pass ...
    """
    if value is None:
        return None
    if not (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    ):
        raise ValueError(
            f"{name} must be a finite number >= 0, not {value!r} (NaN or inf would pass "
            "every entry, a negative one none); leave it out for the default, set by the "
            "dtype and the reference"
        )
    return float(value)


def _checked_tolerances(rtol, atol, what: str) -> tuple[float | None, float | None]:
    return checked_tolerance(rtol, f"{what}: rtol"), checked_tolerance(atol, f"{what}: atol")
