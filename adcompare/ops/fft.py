"""Discrete Fourier transform helpers of ``numpy.fft`` that need no complex numbers:
``fftshift`` and ``ifftshift``, built from slicing and joining."""

from __future__ import annotations

from adcompare.ops.composite import composite
from adcompare.ops.registry import ndim_of, normalize_axes, shape_of
from adcompare.ops.shape import concatenate, getitem


def _roll(x, shift: int, axis: int):
    """``np.roll(x, shift, axis)`` for one axis, as two slices joined."""
    n = shape_of(x)[axis]
    shift %= n
    if shift == 0:
        return x
    tail = (slice(None),) * (-axis - 1)
    head = getitem(x, (Ellipsis, slice(n - shift, n)) + tail)
    rest = getitem(x, (Ellipsis, slice(0, n - shift)) + tail)
    return concatenate([head, rest], axis=axis)


@composite(numpy=("fft.fftshift",), cases=[(((5,),), {}), (((4, 3),), {"axes": 0})])
def fftshift(x, axes=None):
    """Move the zero frequency to the centre, as ``np.fft.fftshift``.

    >>> print(fftshift([0.0, 1.0, 2.0, -2.0, -1.0]))
    [-2. -1.  0.  1.  2.]
    """
    for axis in normalize_axes(axes, ndim_of(x)):
        x = _roll(x, shape_of(x)[axis] // 2, axis)
    return x


@composite(numpy=("fft.ifftshift",), cases=[(((5,),), {}), (((4, 3),), {"axes": (0, 1)})])
def ifftshift(x, axes=None):
    """Undo :func:`fftshift`, as ``np.fft.ifftshift``.

    >>> print(ifftshift([-2.0, -1.0, 0.0, 1.0, 2.0]))
    [ 0.  1.  2. -2. -1.]
    """
    for axis in normalize_axes(axes, ndim_of(x)):
        x = _roll(x, -(shape_of(x)[axis] // 2), axis)
    return x
