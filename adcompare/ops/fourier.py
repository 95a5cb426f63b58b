"""Discrete Fourier transforms of ``numpy.fft``.

Four primitives carry the derivative rules: ``fftn`` and ``ifftn`` (complex
to complex, holomorphic), ``rfftn`` (real to the non-negative half of the
spectrum) and ``irfftn`` (its inverse, to real). The 1-D and 2-D forms are
composites of them, and ``fftshift``/``ifftshift`` are built from slicing
and joining.

Every transform is linear. In JAX's and autograd's convention (see
:mod:`adcompare.ops.complex_parts`) the VJP of a linear map is its
transpose, not its conjugate transpose; the unnormalised DFT matrix ``F`` is
symmetric, so the cotangent of ``y = fftn(x)`` is ``fftn(ȳ)`` with the same
``norm``, cropped or zero-padded back to ``x``'s shape where ``s`` changed it.
``rfftn`` keeps the first ``n // 2 + 1`` frequencies along its last axis, so
its cotangent is ``real(fftn(ȳ padded with zeros to n))``. ``irfftn`` reads
``y_t = c Σ_k w_k Re(X_k e^{2πikt/n})`` along its last axis (``w_k = 2``
strictly between 0 and ``n/2``, 1 at 0 and at ``n/2`` for even ``n``; ``c``
the ``norm`` factor), so ``∂L/∂Re X - i ∂L/∂Im X = w · ifftn(ȳ)`` restricted
to the kept frequencies.

Sparsity: a transform along axis ``k`` is dense along ``k`` (over the part of
the input it reads) and diagonal across the other axes; no DFT coefficient is
0, so that is exact, but for ``irfftn`` of a real input, whose coefficients
are cosines, some of which are 0.

>>> import numpy as np
>>> import adcompare as ad
>>> x = np.array([1.0, 2.0, 0.5, -1.0])
>>> print(ad.grad(lambda x: ad.sum(ad.abs(np.fft.fft(x)) ** 2))(x))  # Parseval: 2 n x
[ 8. 16.  4. -8.]
"""

from __future__ import annotations

import numpy as np
import sympy

from adcompare.ops.complex_parts import real
from adcompare.ops.composite import composite
from adcompare.ops.elementwise import multiply
from adcompare.ops.joining import concatenate
from adcompare.ops.links import Links, element_numbers
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    LEADING_AXIS,
    WIRTINGER,
    ComplexNotSupportedError,
    defop,
    ndim_of,
    normalize_axes,
    raw,
    shape_of,
)
from adcompare.ops.shape import getitem

NORMS = ("backward", "ortho", "forward")


def _prepare(x, s=None, axes=None, norm=None, *, half_input=False):
    """Normalise ``s``, ``axes`` (negative, in the caller's order) and ``norm``.

    ``half_input``: ``x`` holds the half spectrum of ``irfftn``, whose default
    length along the last axis is ``2 * (m - 1)``.
    """
    shape = shape_of(x)
    ndim = len(shape)
    if axes is None:
        axes = range(-len(s), 0) if s is not None else range(-ndim, 0)
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    axes = tuple(normalize_axes(a, ndim)[0] for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes {axes!r} name the same axis twice; name each axis once")
    if not axes:
        raise ValueError("a Fourier transform needs at least one axis; pass axes=(-1,)")
    if s is None:
        s = [shape[a] for a in axes]
        if half_input:
            s[-1] = 2 * (s[-1] - 1)
    s = (s,) if isinstance(s, (int, np.integer)) else tuple(int(n) for n in s)
    if len(s) != len(axes) or min(s) < 1:
        raise ValueError(
            f"s={s!r} needs one positive length per transformed axis {axes!r}; "
            "pass as many lengths as axes"
        )
    norm = "backward" if norm is None else norm
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r} is not one of {NORMS}")
    return {"s": s, "axes": axes, "norm": norm}


def _prepare_half(x, s=None, axes=None, norm=None):
    return _prepare(x, s, axes, norm, half_input=True)


def _fit(x, axis: int, length: int):
    """``x`` cropped, or padded with zeros at the end, to ``length`` along ``axis``."""
    shape = shape_of(x)
    n = shape[axis]
    if n > length:
        return getitem(x, (Ellipsis, slice(0, length)) + (slice(None),) * (-axis - 1))
    if n < length:
        zeros_shape = shape[:axis] + (length - n,) + shape[axis:][1:]
        zeros = np.zeros(zeros_shape, np.result_type(raw(x)))
        return concatenate([x, zeros], axis=axis)
    return x


def _fit_to(x, axes, shape):
    """``x`` cropped or zero-padded to ``shape`` along ``axes`` (the shape's last axes)."""
    for axis in axes:
        x = _fit(x, axis, shape[axis])
    return x


def _as_input(cotangent, x):
    """A real input's cotangent is the real part of what reaches it."""
    return cotangent if np.result_type(raw(x)).kind == "c" else real(cotangent)


def _half_weights(n: int, m: int, dtype) -> np.ndarray:
    """``w_k``, shaped to broadcast over the last axis: how often frequency ``k`` of the half
    spectrum counts in a real signal of length ``n`` (1 at 0 and at ``n/2``, else 2)."""
    weights = np.full(m, 2.0, dtype)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    return weights


# --- the SymPy oracle: the DFT as sums of exponentials --------------------------------


def _sym_fit(x, axis: int, length: int):
    n = x.shape[axis]
    if n >= length:
        return np.take(x, range(length), axis=axis)
    zeros_shape = x.shape[:axis] + (length - n,) + x.shape[axis:][1:]
    return np.concatenate([x, np.full(zeros_shape, sympy.Integer(0), dtype=object)], axis=axis)


def _scale(n: int, norm: str, inverse: bool):
    """The factor a transform of length ``n`` multiplies by under ``norm``."""
    if norm == "ortho":
        return 1 / sympy.sqrt(n)
    return sympy.Rational(1, n) if (norm == "forward") != inverse else sympy.Integer(1)


def _sym_dft(x, axis: int, n: int, norm: str, inverse: bool):
    x = _sym_fit(x, axis, n)
    sign = 1 if inverse else -1
    matrix = np.array(
        [
            [sympy.exp(sign * 2 * sympy.pi * sympy.I * j * k / n) for k in range(n)]
            for j in range(n)
        ],
        dtype=object,
    )
    return np.moveaxis(np.tensordot(x, matrix * _scale(n, norm, inverse), ([axis], [0])), -1, axis)


def _sym_fftn(x, s, axes, norm, inverse=False):
    x = np.asarray(x, dtype=object)
    for axis, n in zip(axes, s):
        x = _sym_dft(x, axis % x.ndim, n, norm, inverse)
    return x


def _sym_rfftn(x, s, axes, norm):
    full = _sym_fftn(x, s, axes, norm)
    return np.take(full, range(s[-1] // 2 + 1), axis=axes[-1] % full.ndim)


def _sym_irfftn(x, s, axes, norm):
    z = _sym_fftn(x, s[:-1], axes[:-1], norm, inverse=True)
    axis, n = axes[-1] % z.ndim, s[-1]
    z = np.moveaxis(_sym_fit(z, axis, n // 2 + 1), axis, -1)
    weights = _half_weights(n, n // 2 + 1, float).astype(int)
    out = np.empty(z.shape[:-1] + (n,), dtype=object)
    for index in np.ndindex(z.shape[:-1]):
        for t in range(n):
            terms = (
                int(w) * sympy.re(zk * sympy.exp(2 * sympy.pi * sympy.I * k * t / n))
                for k, (w, zk) in enumerate(zip(weights, z[index]))
            )
            out[index + (t,)] = _scale(n, norm, inverse=True) * sympy.Add(*terms)
    return np.moveaxis(out, -1, axis)


# --- sparsity: dense along the transformed axes, diagonal across the others ----------


def _fft_links(out, x, axes, reads, keep=None) -> Links:
    """Output element ``o`` depends on the elements ``i`` of ``x`` with ``i = o`` along the
    axes not transformed and ``i < reads[k]`` along transformed axis ``axes[k]`` (the part
    of ``x`` the transform reads after cropping or padding to ``s``). ``keep(grid)``, given
    the output's and the read axes' coordinates, may drop links whose coefficient is 0."""
    x_shape, out_shape = shape_of(x), shape_of(out)
    nd, count = len(x_shape), len(axes)
    used = [min(x_shape[axis], length) for axis, length in zip(axes, reads)]
    grid = out_shape + tuple(used)
    coordinates = [
        np.arange(size).reshape([-1 if k == position else 1 for k in range(nd + count)])
        for position, size in enumerate(grid)
    ]
    index = [
        coordinates[nd + axes.index(axis - nd)] if axis - nd in axes else coordinates[axis]
        for axis in range(nd)
    ]
    rows = np.broadcast_to(element_numbers(out_shape).reshape(out_shape + (1,) * count), grid)
    cols = np.broadcast_to(element_numbers(x_shape)[tuple(index)], grid)
    if keep is None:
        return Links(((rows.ravel(), cols.ravel()),))
    chosen = np.broadcast_to(keep(coordinates), grid)
    return Links(((rows[chosen], cols[chosen]),))


def _fft_sparsity(out, x, *, local, s, axes, norm):
    """Every coefficient of a DFT is a root of unity, so none is 0: exact."""
    return _fft_links(out, x, axes, s)


def _irfftn_sparsity(out, x, *, local, s, axes, norm):
    """Along the last axis ``irfftn`` reads ``s[-1] // 2 + 1`` frequencies. A complex input
    reaches every output; a real one only where the cosine its coefficient holds is not
    0: with ``φ = Σ_k u_k t_k / s_k`` over the output's (``t``) and input's (``u``)
    coordinates, ``y_t`` reads ``Re(x_u e^{2πiφ})``, which is 0 for real ``x_u`` when
    ``φ`` is an odd multiple of 1/4 (``n = 4``: ``y_1`` does not read ``x_1``)."""
    reads = s[:-1] + (s[-1] // 2 + 1,)
    if np.iscomplexobj(raw(x)):
        return _fft_links(out, x, axes, reads)
    nd, common = len(shape_of(out)), int(np.lcm.reduce(s))

    def cosine_not_zero(coordinates):
        # 4 φ · common is an integer; cos(2πφ) = 0 exactly when it is ≡ common (mod 2 common).
        turns = sum(
            coordinates[axis % nd] * coordinates[nd + k] * (common // length)
            for k, (axis, length) in enumerate(zip(axes, s))
        )
        return (4 * turns) % (2 * common) != common

    return _fft_links(out, x, axes, reads, keep=cosine_not_zero)


# --- the primitives -----------------------------------------------------------------


_CASES = [
    (((5,),), {}),
    (((3, 4),), {"s": (4, 6), "axes": (0, 1), "norm": "ortho"}),
    (((2, 6),), {"s": (4,), "axes": (-1,), "norm": "forward"}),
]

fftn = defop(
    "fftn",
    lambda x, s, axes, norm: np.fft.fftn(x, s=s, axes=axes, norm=norm),
    numpy=("fft.fftn",),
    prepare=_prepare,
    complex=HOLOMORPHIC,
    replay=ARRAY_ONLY,
    batch=LEADING_AXIS,
    saves=("args",),
    cases=_CASES,
    sparsity=_fft_sparsity,
    sym=_sym_fftn,
    # The DFT matrix is symmetric: the transpose of fftn is fftn, then undo s.
    linear=lambda out, x, out_bar, s, axes, norm: _as_input(
        _fit_to(fftn(out_bar, axes=axes, norm=norm), axes, shape_of(x)), x
    ),
    doc="The N-D discrete Fourier transform over ``axes``, as ``np.fft.fftn``.",
    example="fftn([[1.0, 2.0], [3.0, 4.0]]) -> [[10.+0.j -2.+0.j]\n [-4.+0.j  0.+0.j]]",
)

ifftn = defop(
    "ifftn",
    lambda x, s, axes, norm: np.fft.ifftn(x, s=s, axes=axes, norm=norm),
    numpy=("fft.ifftn",),
    prepare=_prepare,
    complex=HOLOMORPHIC,
    replay=ARRAY_ONLY,
    batch=LEADING_AXIS,
    saves=("args",),
    cases=_CASES,
    sparsity=_fft_sparsity,
    sym=lambda x, s, axes, norm: _sym_fftn(x, s, axes, norm, inverse=True),
    linear=lambda out, x, out_bar, s, axes, norm: _as_input(
        _fit_to(ifftn(out_bar, axes=axes, norm=norm), axes, shape_of(x)), x
    ),
    doc="The N-D inverse discrete Fourier transform over ``axes``, as ``np.fft.ifftn``.",
    example="ifftn([4.0, 0.0]) -> [2.+0.j 2.+0.j]",
)


def _rfftn_value(x, s, axes, norm):
    if np.iscomplexobj(x):
        raise ComplexNotSupportedError(
            "rfftn transforms real input only; use fftn (np.fft.fftn) for complex input"
        )
    return np.fft.rfftn(x, s=s, axes=axes, norm=norm)


def _rfftn_vjp(out, x, out_bar, s, axes, norm):
    # rfftn is fftn followed by keeping the first n // 2 + 1 frequencies of the last axis:
    # its transpose pads the cotangent back to n with zeros and applies fftn.
    padded = _fit(out_bar, axes[-1], s[-1])
    return real(_fit_to(fftn(padded, axes=axes, norm=norm), axes, shape_of(x)))


rfftn = defop(
    "rfftn",
    _rfftn_value,
    numpy=("fft.rfftn",),
    prepare=_prepare,
    # Its value refuses complex input; the complex step cannot differentiate it.
    complex=WIRTINGER,
    replay=ARRAY_ONLY,
    batch=LEADING_AXIS,
    saves=(),  # the transpose reads only the input's shape
    cases=_CASES,
    sparsity=_fft_sparsity,
    sym=_sym_rfftn,
    linear=_rfftn_vjp,
    doc="The N-D discrete Fourier transform of real input, keeping the non-negative "
    "frequencies of the last axis, as ``np.fft.rfftn``.",
    example="rfftn([1.0, 2.0, 3.0, 4.0]) -> [10.+0.j -2.+2.j -2.+0.j]",
)


def _irfftn_vjp(out, x, out_bar, s, axes, norm):
    # Along the last axis y_t = c Σ_k w_k Re(X_k e^{2πikt/n}), so ∂L/∂Re X - i ∂L/∂Im X is
    # w_k c Σ_t ȳ_t e^{2πikt/n}: ifftn of the cotangent, weighted, on the kept frequencies.
    n, m = s[-1], s[-1] // 2 + 1
    spectrum = _fit(ifftn(out_bar, axes=axes, norm=norm), axes[-1], m)
    weights = _half_weights(n, m, np.result_type(raw(out_bar)))
    weighted = multiply(spectrum, weights.reshape((m,) + (1,) * (-axes[-1] - 1)))
    return _as_input(_fit_to(weighted, axes, shape_of(x)), x)


_HALF_CASES = [
    (((4,),), {}),
    (((3, 4),), {"s": (2, 5), "axes": (0, 1), "norm": "ortho"}),
    (((2, 3),), {"s": (6,), "axes": (-1,), "norm": "forward"}),
]

irfftn = defop(
    "irfftn",
    lambda x, s, axes, norm: np.fft.irfftn(x, s=s, axes=axes, norm=norm),
    numpy=("fft.irfftn",),
    prepare=_prepare_half,
    complex=WIRTINGER,
    replay=ARRAY_ONLY,
    batch=LEADING_AXIS,
    saves=("args",),
    cases=_HALF_CASES,
    sparsity=_irfftn_sparsity,
    sym=_sym_irfftn,
    linear=_irfftn_vjp,
    doc="The inverse of :func:`rfftn`: a real signal from the non-negative frequencies of "
    "its last axis, as ``np.fft.irfftn``.",
    example="irfftn([10.0, -2.0 + 2.0j, -2.0]) -> [1. 2. 3. 4.]",
)


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


# --- the 1-D and 2-D forms --------------------------------------------------------------


def _one(n):
    return None if n is None else (n,)


@composite(numpy=("fft.fft",), cases=[(((6,),), {}), (((3, 4),), {"n": 6, "axis": 0})])
def fft(x, n=None, axis=-1, norm=None):
    """The 1-D discrete Fourier transform along ``axis``, as ``np.fft.fft``.

    >>> print(fft([1.0, 0.0, -1.0, 0.0]))
    [0.+0.j 2.+0.j 0.+0.j 2.+0.j]
    """
    return fftn(x, s=_one(n), axes=(axis,), norm=norm)


@composite(numpy=("fft.ifft",), cases=[(((6,),), {}), (((3, 4),), {"n": 3, "norm": "ortho"})])
def ifft(x, n=None, axis=-1, norm=None):
    """The 1-D inverse discrete Fourier transform along ``axis``, as ``np.fft.ifft``.

    >>> print(ifft([0.0, 2.0, 0.0, 2.0]))
    [ 1.+0.j  0.+0.j -1.+0.j  0.+0.j]
    """
    return ifftn(x, s=_one(n), axes=(axis,), norm=norm)


@composite(numpy=("fft.rfft",), cases=[(((5,),), {}), (((4, 3),), {"n": 4, "axis": 0})])
def rfft(x, n=None, axis=-1, norm=None):
    """The 1-D transform of real input, non-negative frequencies only, as ``np.fft.rfft``.

    >>> print(rfft([1.0, 0.0, -1.0, 0.0]))
    [0.+0.j 2.+0.j 0.+0.j]
    """
    return rfftn(x, s=_one(n), axes=(axis,), norm=norm)


@composite(numpy=("fft.irfft",), cases=[(((4,),), {}), (((3, 4),), {"n": 7, "norm": "forward"})])
def irfft(x, n=None, axis=-1, norm=None):
    """The inverse of :func:`rfft`: a real signal of length ``n``, as ``np.fft.irfft``.

    >>> print(irfft([0.0, 2.0, 0.0]))
    [ 1.  0. -1.  0.]
    """
    return irfftn(x, s=_one(n), axes=(axis,), norm=norm)


@composite(numpy=("fft.fft2",), cases=[(((3, 4),), {}), (((2, 3, 2),), {"s": (4, 2)})])
def fft2(x, s=None, axes=(-2, -1), norm=None):
    """The 2-D discrete Fourier transform, as ``np.fft.fft2``.

    >>> print(fft2([[1.0, 0.0], [0.0, 0.0]]))
    [[1.+0.j 1.+0.j]
     [1.+0.j 1.+0.j]]
    """
    return fftn(x, s=s, axes=axes, norm=norm)


@composite(numpy=("fft.ifft2",), cases=[(((3, 4),), {}), (((2, 3, 2),), {"norm": "ortho"})])
def ifft2(x, s=None, axes=(-2, -1), norm=None):
    """The 2-D inverse discrete Fourier transform, as ``np.fft.ifft2``.

    >>> print(ifft2([[4.0, 0.0], [0.0, 0.0]]))
    [[1.+0.j 1.+0.j]
     [1.+0.j 1.+0.j]]
    """
    return ifftn(x, s=s, axes=axes, norm=norm)


@composite(numpy=("fft.rfft2",), cases=[(((3, 4),), {}), (((2, 3, 2),), {"axes": (0, 1)})])
def rfft2(x, s=None, axes=(-2, -1), norm=None):
    """The 2-D transform of real input, as ``np.fft.rfft2``.

    >>> print(rfft2([[1.0, 0.0], [0.0, 0.0]]))
    [[1.+0.j 1.+0.j]
     [1.+0.j 1.+0.j]]
    """
    return rfftn(x, s=s, axes=axes, norm=norm)


@composite(numpy=("fft.irfft2",), cases=[(((3, 3),), {}), (((2, 3),), {"s": (2, 5)})])
def irfft2(x, s=None, axes=(-2, -1), norm=None):
    """The inverse of :func:`rfft2`, as ``np.fft.irfft2``.

    >>> print(irfft2([[4.0, 0.0], [0.0, 0.0]]))
    [[1. 1.]
     [1. 1.]]
    """
    return irfftn(x, s=s, axes=axes, norm=norm)
