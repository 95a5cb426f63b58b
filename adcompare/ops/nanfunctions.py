"""numpy's reductions that skip NaN (``nansum``, ``nanmean``, ``nanvar``, ``nanstd``,
``nanmax``, ``nanmin``), as composites.

Each replaces the NaN entries by a value that leaves the reduction unchanged
(0 for a sum, ``-inf`` for a maximum) with ``where``, so a NaN entry gets
derivative 0 and the others the derivative of the reduction over the entries
that are numbers. A slice of NaN only gives NaN, as numpy's does.
"""

from __future__ import annotations

import numpy as np

from adcompare.ops.complex_parts import refuse_complex
from adcompare.ops.elementwise import divide, multiply, sqrt, subtract, where
from adcompare.ops.reductions import max, min, sum
from adcompare.ops.registry import array_of, composite, ndim_of, normalize_axes

_CASES = [(((3, 4),), {}), (((3, 4),), {"axis": 0, "keepdims": True})]


def _numbers(x, fill: float, name: str):
    """``x`` with ``fill`` in place of NaN, and the mask of its NaN entries."""
    x = array_of(x)
    refuse_complex(x, name)
    missing = np.isnan(x)
    return where(missing, fill, x), missing


def _counts(missing, axis, keepdims: bool) -> np.ndarray:
    # numpy's functions, not an array conversion: inside vmap the mask has a batch axis
    return np.sum(np.logical_not(missing), axis=axis, keepdims=keepdims).astype(float)


@composite(cases=_CASES)
def nansum(x, axis=None, keepdims: bool = False):
    """The sum over ``axis`` of the entries that are numbers, as ``np.nansum``.

    >>> print(nansum(np.array([1.0, np.nan, 2.0])))
    3.0
    """
    numbers, _ = _numbers(x, 0.0, "nansum")
    return sum(numbers, axis=normalize_axes(axis, ndim_of(numbers)), keepdims=keepdims)


@composite(cases=_CASES)
def nanmean(x, axis=None, keepdims: bool = False):
    """The mean over ``axis`` of the entries that are numbers, as ``np.nanmean``.

    >>> print(nanmean(np.array([1.0, np.nan, 2.0])))
    1.5
    """
    numbers, missing = _numbers(x, 0.0, "nanmean")
    axes = normalize_axes(axis, ndim_of(numbers))
    return divide(sum(numbers, axis=axes, keepdims=keepdims), _counts(missing, axes, keepdims))


@composite(cases=[*_CASES, (((5,),), {"ddof": 1})])
def nanvar(x, axis=None, ddof: int = 0, keepdims: bool = False):
    """The variance over ``axis`` of the entries that are numbers, as ``np.nanvar``.

    >>> print(nanvar(np.array([1.0, np.nan, 3.0])))
    1.0
    """
    numbers, missing = _numbers(x, 0.0, "nanvar")
    axes = normalize_axes(axis, ndim_of(numbers))
    counts = _counts(missing, axes, True)
    centred = where(
        missing, 0.0, subtract(numbers, divide(sum(numbers, axis=axes, keepdims=True), counts))
    )
    total = sum(multiply(centred, centred), axis=axes, keepdims=keepdims)
    return divide(total, _counts(missing, axes, keepdims) - ddof)


@composite(cases=_CASES)
def nanstd(x, axis=None, ddof: int = 0, keepdims: bool = False):
    """The standard deviation over ``axis`` of the entries that are numbers, as ``np.nanstd``.

    >>> print(nanstd(np.array([1.0, np.nan, 3.0])))
    1.0
    """
    return sqrt(nanvar(x, axis=axis, ddof=ddof, keepdims=keepdims))


def _extreme(x, axis, keepdims: bool, reduce, fill: float, name: str):
    numbers, missing = _numbers(x, fill, name)
    axes = normalize_axes(axis, ndim_of(numbers))
    out = reduce(numbers, axis=axes, keepdims=keepdims)
    return where(np.all(missing, axis=axes, keepdims=keepdims), np.nan, out)


@composite(cases=_CASES)
def nanmax(x, axis=None, keepdims: bool = False):
    """The largest entry over ``axis`` that is a number, as ``np.nanmax`` (ties share the
    derivative, as ``max``'s do).

    >>> print(nanmax(np.array([1.0, np.nan, 3.0])))
    3.0
    """
    return _extreme(x, axis, keepdims, max, -np.inf, "nanmax")


@composite(cases=_CASES)
def nanmin(x, axis=None, keepdims: bool = False):
    """The smallest entry over ``axis`` that is a number, as ``np.nanmin``.

    >>> print(nanmin(np.array([1.0, np.nan, 3.0])))
    1.0
    """
    return _extreme(x, axis, keepdims, min, np.inf, "nanmin")
