"""Conversions: ``nan_to_num`` and ``astype``."""

from __future__ import annotations

import numpy as np

from adcompare.ops.elementwise.piecewise import where
from adcompare.ops.registry import ARRAY_ONLY, HOLOMORPHIC, LEADING_AXIS, defop, raw


def _prepare_nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    return {"nan": nan, "posinf": posinf, "neginf": neginf}


def _finite(x):
    return np.isfinite(raw(x))


nan_to_num = defop(
    "nan_to_num",
    lambda x, nan, posinf, neginf: np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    elementwise=True,
    saves=("args",),
    prepare=_prepare_nan_to_num,
    test_params=lambda shape, rng: {"nan": 0.0, "posinf": None, "neginf": None},
    sym=lambda x, nan, posinf, neginf: x,
    jvp=lambda out, x, x_dot, **limits: where(_finite(x), x_dot, 0.0),
    vjp=lambda out, x, out_bar, **limits: where(_finite(x), out_bar, 0.0),
    doc="NaN and infinities replaced by constants, as ``np.nan_to_num``: derivative 1 "
    "where ``x`` is finite, 0 where it was replaced.",
    example="nan_to_num(float('nan')) -> 0.0",
)


def _prepare_astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    target = np.dtype(dtype)
    if not np.issubdtype(target, np.floating):
        kind = "complex" if np.issubdtype(target, np.complexfloating) else "non-float"
        raise TypeError(
            f"astype({target}): a {kind} dtype cannot carry a real derivative; convert to a "
            "float dtype (float16, float32, float64), round with adcompare.round or floor "
            "first if you want integers (derivative 0), or detach the value"
        )
    return {"dtype": target, "source": np.result_type(raw(x), np.float16)}


astype = defop(
    "astype",
    lambda x, dtype, source: np.asarray(x).astype(dtype),
    replay=ARRAY_ONLY,
    complex="converts between real float dtypes only",
    saves=(),
    prepare=_prepare_astype,
    method="astype",
    numpy=(),  # the method; np.astype takes dtype positionally only
    batch=LEADING_AXIS,  # no axes: a batch axis passes through
    cases=(([(2, 3)], {"dtype": np.float64}), ([()], {"dtype": "float64"})),
    sym=lambda x, dtype, source: x,
    # The cotangent takes the input's dtype back, so float32 inputs get float32 gradients.
    linear=lambda out, x, out_bar, dtype, source: astype(out_bar, source),
    doc="The value in another float dtype, as ``ndarray.astype``; the derivative is "
    "converted alike and the gradient comes back in the input's dtype.",
    example="astype(1.5, 'float32').dtype -> float32",
)
