"""The dtypes derivatives take, shared by every engine and transform.

An input's derivative has the input's own inexact dtype: float16 stays
float16 and float32 stays float32 (as PyTorch and JAX keep them), while
integers and bools become float64. :func:`as_float` makes a plain value such
an input, :func:`float_dtype` names the dtype and :func:`in_dtype` casts a
derivative back to it.
"""

from __future__ import annotations

import numpy as np

from adcompare.runtime.boxes import Box, raw

__all__ = ["as_float", "float_dtype", "in_dtype"]


def as_float(value):
    """A plain value as a floating numpy array (integers and bools become float64).

    Boxes pass as they are.

    >>> as_float(3), as_float(np.float32(0.5)).dtype
    (array(3.), dtype('float32'))
    """
    if isinstance(value, Box):
        return value
    value = np.asarray(value)
    if value.dtype.kind not in "fc":  # np.issubdtype(dtype, np.inexact), for less
        value = value.astype(np.float64)
    return value


def float_dtype(value) -> np.dtype:
    """The dtype of derivatives with respect to ``value``: its own inexact dtype.

    float16 stays float16 and float32 stays float32 (as PyTorch and JAX keep
    them); integers and bools become float64, as :func:`as_float` makes them.

    >>> float_dtype(np.float16(0.5)), float_dtype(np.arange(3)), float_dtype(2.0)
    (dtype('float16'), dtype('float64'), dtype('float64'))
    """
    dtype = np.result_type(raw(value))
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)  # inexact stays


def in_dtype(derivative, dtype: np.dtype):
    """``derivative`` in ``dtype``, the input's dtype, where the derivative is real floating.

    A wider constant in the function (a float64 array times a float16 input)
    widens the derivative; it comes back in the input's dtype, as
    ``Tensor.backward`` gives it. A complex input's derivative is complex even
    where its imaginary part is zero (the gradient of ``real(z)`` is ``1 + 0j``,
    as in autograd and JAX). Boxes and complex values pass unchanged (casting a
    complex value to a real dtype would drop its imaginary part).

    >>> in_dtype(np.ones(2), np.dtype(np.float32)).dtype
    dtype('float32')
    >>> in_dtype(np.ones(2, complex), np.dtype(np.float32)).dtype
    dtype('complex128')
    >>> in_dtype(np.float64(2.0), np.dtype(np.float32)).dtype  # a 0-d result, as numpy's
    dtype('float32')
    >>> in_dtype(np.ones(2), np.dtype(np.complex128)).dtype
    dtype('complex128')
    """
    if (
        (type(derivative) is np.ndarray or isinstance(derivative, np.floating))
        and derivative.dtype != dtype
        and derivative.dtype.kind == "f"
        and dtype.kind in "fc"
    ):
        return derivative.astype(dtype)
    if isinstance(derivative, Box) and dtype.kind == "c" and raw(derivative).dtype.kind == "f":
        return derivative + np.zeros((), dtype)  # a box of the next order: complex too
    return derivative
