"""Reductions over axes: sum, max, min, prod (mean is a composite).

``axis`` is normalised to a tuple of negative axes before dispatch, so that
the same number names the same axis of a primal and of its lane-carrying
tangent. ``max`` and ``min`` share the derivative evenly among tied maxima
(as PyTorch's ``amax`` and JAX do).
"""

from __future__ import annotations

import numpy as np
import sympy

from adcompare.ops.elementwise import exp, multiply, subtract, where
from adcompare.ops.links import Links, element_numbers, reduction_links
from adcompare.ops.registry import (
    ARRAY_ONLY,
    HOLOMORPHIC,
    LEADING_AXIS,
    REAL_ONLY,
    defop,
    keep_number,
    ndim_of,
    normalize_axes,
    public_face,
    raw,
    shape_of,
    sum_number,
)
from adcompare.ops.shape import broadcast_to, getitem, reshape


def _prepare_axes(x, axis=None, keepdims=False):
    return {"axis": normalize_axes(axis, ndim_of(x)), "keepdims": bool(keepdims)}


def _kept_shape(shape, axis):
    """``shape`` with the reduced axes kept as size 1."""
    n = len(shape)
    return tuple(1 if i - n in axis else d for i, d in enumerate(shape))


def _aligned(out_bar, shape, axis, keepdims):
    """A reduced cotangent shaped to broadcast against an array of ``shape``.

    With ``keepdims`` it already does; so does a reduction over the leading
    axes only, since broadcasting pads on the left. Otherwise the reduced
    axes are put back as size 1.
    """
    if keepdims:
        return out_bar
    n = len(shape)
    if axis == tuple(range(-n, -n + len(axis))):
        return out_bar
    return reshape.prepared(out_bar, shape=_kept_shape(shape, axis))


def _spread(out_bar, shape, axis, keepdims):
    """Broadcast a reduced cotangent back over the reduced axes of an array of ``shape``."""
    return broadcast_to.prepared(_aligned(out_bar, shape, axis, keepdims), shape=shape)


def _sympy_over(reducer):
    """Apply a SymPy reducer of a list over axes of an object array of symbols."""

    def sym(x, axis, keepdims):
        x = np.asarray(x, dtype=object)
        moved = np.moveaxis(x, axis, tuple(range(-len(axis), 0)))
        lead = moved.shape[: moved.ndim - len(axis)]
        flat = moved.reshape(lead + (-1,))
        out = np.empty(lead, dtype=object)
        for index in np.ndindex(lead):
            out[index] = reducer(list(flat[index]))
        if keepdims:
            out = out.reshape(_kept_shape(x.shape, axis))
        return out

    return sym


def _sum_sparsity(out, x, *, local, axis, keepdims):
    return reduction_links(out, x, axis, keepdims)


#: From this many elements a sum that numpy would run with a short inner loop is
#: rearranged first; below it, numpy's per-call overhead dominates anyway.
_REARRANGE_FROM = 4096
#: An inner loop over fewer elements than this is short.
_SHORT_RUN = 8


def _sum_value(x, axis: tuple[int, ...], keepdims: bool):
    """``np.add.reduce(x, axis, keepdims=keepdims)``, without numpy's short inner loops.

    numpy's reduction runs its inner loop over the trailing axes that are all
    reduced or all kept. When that run is short and other axes precede it
    (GMM's ``(5, 1000, 2)`` summed over its last axis, or over its middle one
    to undo a broadcast), each output element costs a loop call of its own:
    100 µs where the same additions take 6 µs. Such a sum is rearranged: a
    short reduced run is added up slice by slice, and a short kept run is
    moved in front of the reduced axes in a contiguous copy. The additions
    are the same; only their order may differ (pairwise in place of
    sequential), within rounding.

    >>> x = np.arange(24.0).reshape(3, 4, 2)
    >>> bool(np.allclose(_sum_value(x, (-2,), False), x.sum(axis=1)))
    True
    """
    if (
        type(x) is not np.ndarray
        or x.size < _REARRANGE_FROM
        or x.dtype.kind not in "fc"
        or x.dtype.itemsize < 4  # float16: numpy sums in float32, slice by slice would not
        or len(axis) == x.ndim
    ):
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    shape = x.shape
    n = len(shape)
    last_reduced = -1 in axis
    start, run = n, 1  # the trailing axes of the last axis's kind: shape[start:]
    while start > 0 and ((start - 1 - n) in axis) == last_reduced:
        start -= 1
        run *= shape[start]
    if run >= _SHORT_RUN:
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    if last_reduced:
        flat = x.reshape(shape[:start] + (run,))
        out = flat[..., 0].copy() if run == 1 else flat[..., 0] + flat[..., 1]
        for j in range(2, run):
            out += flat[..., j]
        rest = tuple(a + n - start for a in axis if a < start - n)  # reduced axes in front
        if rest:
            out = _sum_value(out, rest, False)
    else:
        reduced = [a + n for a in axis]
        kept = [i for i in range(n) if i not in reduced]
        moved = np.ascontiguousarray(x.transpose(kept + reduced))
        out = np.add.reduce(moved.reshape(moved.shape[: len(kept)] + (-1,)), axis=-1)
    if keepdims:
        out = out.reshape(_kept_shape(shape, axis))
    return out


sum = defop(
    "sum",
    _sum_value,
    batch=LEADING_AXIS,
    replay=sum_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_axes,
    method="sum",
    cases=[
        (((3, 4),), {}),
        (((3, 4),), {"axis": 0}),
        (((2, 3, 4),), {"axis": (0, 2), "keepdims": True}),
        (((),), {}),
    ],
    domain=(-2.0, 2.0),
    sym=_sympy_over(sympy.Add.fromiter),
    linear=lambda out, x, out_bar, axis, keepdims: _spread(out_bar, shape_of(x), axis, keepdims),
    doc="Sum over ``axis`` (all axes by default), as ``np.sum``.",
    example="sum([[1.0, 2.0], [3.0, 4.0]], axis=0) -> [4. 6.]",
    sparsity=_sum_sparsity,
)


def _stop_max(x, axis):
    """The maximum along ``axis`` as a constant, replaced by 0 where infinite.

    Subtracting a constant before ``exp`` changes nothing mathematically, so
    the shift needs no derivative; it only keeps ``exp`` from overflowing.
    """
    shift = np.maximum.reduce(raw(x), axis=axis, keepdims=True)  # np.max, less overhead
    return np.where(np.isfinite(shift), shift, 0.0)


def _logsumexp_value(x, axis, keepdims):
    """``log(sum(exp(x)))`` over ``axis``, shifted by the maximum so nothing overflows."""
    shift = _stop_max(x, axis)
    out = np.log(_sum_value(np.exp(x - shift), axis, True)) + shift
    return out if keepdims else np.squeeze(out, axis)


def _softmax_weights(out, x, axis, keepdims):
    """``exp(x − logsumexp(x))``: each element's share, the derivative of logsumexp.

    A share below the smallest normal number (2.2e−308 in float64) is given as 0.
    Such subnormal shares make every later product with them (a mixture's
    responsibilities times its points, say) take a microcode path many times slower
    than normal arithmetic (in a mixture of 25 components in 64 dimensions, 3% of the
    shares made its derivative's matrix products 5 to 8 times slower). The change to a
    share is below 2.2e−308, and the largest share along ``axis`` is at least 1/(its
    length), so each cotangent changes by less than one unit in the last place of its
    largest entry.
    """
    shares = exp(subtract(x, _aligned(out, shape_of(x), axis, keepdims)))
    return where(shares >= np.finfo(raw(shares).dtype).tiny, shares, 0.0)


# The composite ``logsumexp`` (adcompare.ops.composite) calls this primitive for real
# input without weights: one record on the tape instead of six, and a derivative of
# three numpy calls.
_logsumexp = defop(
    "_logsumexp",
    _logsumexp_value,
    batch=LEADING_AXIS,
    replay=keep_number,
    complex=REAL_ONLY,
    saves=("args", "out"),
    prepare=_prepare_axes,
    numpy=(),
    cases=[
        (((3, 4),), {}),
        (((3, 4),), {"axis": 0}),
        (((2, 3, 4),), {"axis": (0, 2), "keepdims": True}),
        (((5,),), {"axis": -1}),
    ],
    label="LogSumExp",
    sym=_sympy_over(lambda terms: sympy.log(sympy.Add.fromiter(sympy.exp(t) for t in terms))),
    jvp=lambda out, x, x_dot, axis, keepdims: sum(
        multiply(_softmax_weights(out, x, axis, keepdims), x_dot), axis=axis, keepdims=keepdims
    ),
    vjp=lambda out, x, out_bar, axis, keepdims: multiply(
        _aligned(out_bar, shape_of(x), axis, keepdims), _softmax_weights(out, x, axis, keepdims)
    ),
    doc="``log(sum(exp(x)))`` over ``axis``, stable for large values (real input).",
    sparsity=lambda out, x, *, local, axis, keepdims: _slice_sparsity(
        out, x, axis, keepdims, with_itself=True
    ),
)


def _winners(x, out, axis, keepdims):
    """Share of each element in a max/min: 1/(number of ties) where it wins."""
    x = raw(x)
    out = raw(out)
    if not keepdims:
        out = np.reshape(out, _kept_shape(np.shape(x), axis))
    hit = x == out
    share = hit / np.add.reduce(hit, axis=axis, keepdims=True)
    return share.astype(np.result_type(x, np.float32), copy=False)


_SELECT_CASES = [
    (((5,),), {}),
    (((3, 4),), {"axis": 1}),
    (((2, 3, 4),), {"axis": (0, 2), "keepdims": True}),
]


def _max_jvp(out, x, x_dot, axis, keepdims):
    return sum(_winners(x, out, axis, keepdims) * x_dot, axis=axis, keepdims=keepdims)


def _max_vjp(out, x, out_bar, axis, keepdims):
    # The x-shaped shares broadcast the cotangent: no separate broadcast_to.
    return _winners(x, out, axis, keepdims) * _aligned(out_bar, shape_of(x), axis, keepdims)


def _select_sparsity(out, x, *, local, axis, keepdims):
    """The whole slice; with ``local``, only the elements that win at this point."""
    winners = _winners(x, out, axis, keepdims) > 0 if local else None
    return reduction_links(out, x, axis, keepdims, keep=winners)


def _extreme(name, ufunc, **fields):
    """The largest or smallest element over ``axis`` (``ufunc`` is ``np.maximum`` or
    ``np.minimum``); tied elements share the derivative evenly."""
    return defop(
        name,
        lambda x, axis, keepdims: ufunc.reduce(x, axis=axis, keepdims=keepdims),
        batch=LEADING_AXIS,
        numpy=(name, f"a{name}"),
        replay=ARRAY_ONLY,
        complex="compares complex numbers",
        prepare=_prepare_axes,
        method=name,
        cases=_SELECT_CASES,
        label=f"A{name}",
        jvp=_max_jvp,
        vjp=_max_vjp,
        sparsity=_select_sparsity,
        **fields,
    )


max = _extreme(
    "max",
    np.maximum,
    sym=_sympy_over(lambda items: sympy.Max(*items)),
    doc="Maximum over ``axis``; tied maxima share the derivative evenly.",
    example="max([1.0, 3.0, 2.0]) -> 3.0",
)

min = _extreme(
    "min",
    np.minimum,
    sym=_sympy_over(lambda items: sympy.Min(*items)),
    doc="Minimum over ``axis``; tied minima share the derivative evenly.",
    example="min([1.0, 3.0, 2.0]) -> 1.0",
)


def _product_of_others(x, axis):
    """For each element, the product of the other elements along ``axis``.

    Written without dividing by ``x`` where ``x`` is zero, and so that its own
    derivative (prod's second) is exact there too. With ``P`` the product of a
    slice's non-zeros and ``z`` the sum of its zeros (0, but carrying their
    derivative): with no zero it is ``P / x``; with one zero, ``P`` at the zero
    and ``z P / x`` elsewhere; with two, ``(z - x) P`` at each zero (the other
    zero times ``P``) and 0 elsewhere; with more, 0.
    """
    zero = raw(x) == 0
    count = np.broadcast_to(np.sum(zero, axis=axis, keepdims=True), zero.shape)
    nonzero = where(zero, 1.0, x)
    product = prod(nonzero, axis=axis, keepdims=True)
    zeros = sum(where(zero, x, 0.0), axis=axis, keepdims=True)
    at_zero = where(count == 1, product, where(count == 2, (zeros - x) * product, 0.0))
    share = product / nonzero
    elsewhere = where(count == 0, share, where(count == 1, zeros * share, 0.0))
    return where(zero, at_zero, elsewhere)


def _slice_sparsity(out, x, axis, keepdims, *, with_itself: bool) -> Links:
    """The slice, and every two elements of a slice interact (each element with
    itself too if ``with_itself``)."""
    links = reduction_links(out, x, axis, keepdims)
    rows, cols = links.inputs[0]
    order = np.argsort(rows, kind="stable")
    slices = cols[order].reshape(np.size(out), -1)  # one row of element numbers per slice
    a = np.repeat(slices, slices.shape[1], axis=1)
    b = np.tile(slices, (1, slices.shape[1]))
    chosen = np.ones(a.shape, dtype=bool) if with_itself else a != b
    slice_rows = np.broadcast_to(np.arange(np.size(out))[:, None], a.shape)
    pairs = (0, 0, slice_rows[chosen], a[chosen], b[chosen])
    return Links(links.inputs, (pairs,))


def _prod_sparsity(out, x, *, local, axis, keepdims):
    """The slice, and every two distinct elements of a slice interact."""
    return _slice_sparsity(out, x, axis, keepdims, with_itself=False)


prod = defop(
    "prod",
    lambda x, axis, keepdims: np.multiply.reduce(x, axis=axis, keepdims=keepdims),
    batch=LEADING_AXIS,
    replay=ARRAY_ONLY,
    complex=HOLOMORPHIC,
    saves=("args",),
    prepare=_prepare_axes,
    method="prod",
    cases=[
        (((3, 4),), {"axis": 0}),
        (((2, 3),), {}),
        (((2, 3, 2),), {"axis": -1, "keepdims": True}),
    ],
    domain=(-1.5, 1.5),
    sym=_sympy_over(sympy.Mul.fromiter),
    jvp=lambda out, x, x_dot, axis, keepdims: sum(
        _product_of_others(x, axis) * x_dot, axis=axis, keepdims=keepdims
    ),
    vjp=lambda out, x, out_bar, axis, keepdims: (
        _product_of_others(x, axis) * _aligned(out_bar, shape_of(x), axis, keepdims)
    ),
    doc="Product over ``axis``; exact where elements are zero (no division by x).",
    example="prod([2.0, 3.0, 4.0]) -> 24.0",
    sparsity=_prod_sparsity,
)


# --- scans -------------------------------------------------------------------------------


def _prepare_scan(x, axis):
    (axis,) = normalize_axes(axis, ndim_of(x))
    return {"axis": axis}


def _reversed(x, axis):
    return getitem(x, (Ellipsis, slice(None, None, -1)) + (slice(None),) * (-1 - axis))


def _cumsum_sparsity(out, x, *, local, axis):
    """Element ``j`` of a running sum depends on elements ``0..j`` along the axis."""
    lines = np.moveaxis(element_numbers(shape_of(x)), axis, -1)
    lines = lines.reshape(-1, lines.shape[-1])
    later, earlier = np.tril_indices(lines.shape[1])
    return Links(((lines[:, later].ravel(), lines[:, earlier].ravel()),))


_cumsum = defop(
    "cumsum",
    lambda x, axis: np.cumsum(x, axis=axis),
    batch=LEADING_AXIS,
    replay=keep_number,
    complex=HOLOMORPHIC,
    saves=(),
    prepare=_prepare_scan,
    cases=[(((5,),), {"axis": 0}), (((3, 4),), {"axis": 1}), (((2, 3, 2),), {"axis": 0})],
    label="Cumsum",
    sym=lambda x, axis: np.cumsum(np.asarray(x, dtype=object), axis=axis),
    # The adjoint of a running sum is a running sum from the other end.
    linear=lambda out, x, out_bar, axis: _reversed(_cumsum(_reversed(out_bar, axis), axis), axis),
    doc="Running sum along one axis (see ``cumsum``).",
    sparsity=_cumsum_sparsity,
)


@public_face(_cumsum)
def cumsum(x, axis=None):
    """Running sum along ``axis`` (of the flattened array by default), as ``np.cumsum``.

    >>> print(cumsum([1.0, 2.0, 3.0]))
    [1. 3. 6.]
    """
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return _cumsum(x, axis)
