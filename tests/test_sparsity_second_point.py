"""A global pattern holds at every input: traced at one point, it contains the nonzeros of
the dense Jacobian at other points, for every op of the registry.

The other points are one where every decision the op's record declares
(``sort``'s permutation, ``slogdet``'s sign) differs from the traced point's,
and random ones, where masks and branches differ too. ``sparse_jacobian``
keeps a plan per input shape, so a second call at such a point must give
the dense Jacobian.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import adcompare as ad
from adcompare.sparsity import DenseFallbackWarning, jacobian_pattern, sparse_jacobian
from tests.opcases import EVERY_OP, second_point

RANDOM_POINTS = (101, 102)


def _packed(call, shapes, params):
    """The op as a function of one flat vector holding all its arrays; every float
    output flattened and joined."""
    starts = np.cumsum([0, *(math.prod(s) for s in shapes)])

    def f(v):
        parts = [ad.reshape(v[a:b], s) for a, b, s in zip(starts, starts[1:], shapes)]
        out = call(*parts, **params)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return ad.concatenate([ad.reshape(ad.real(o), (-1,)) for o in outs])

    return f


def _points(name):
    call, arguments, decisions = EVERY_OP[name]
    first, second, index_names, indices, _, static = second_point(arguments, decisions)
    params = {**static, **dict(zip(index_names, indices))}
    others = [second] + [arguments(seed)[0] for seed in RANDOM_POINTS]
    flat = lambda arrays: np.concatenate([np.ravel(a) for a in arrays])
    f = _packed(call, [np.shape(a) for a in first], params)
    return f, flat(first), [flat(a) for a in others]


@pytest.mark.parametrize("name", sorted(EVERY_OP))
def test_a_pattern_traced_at_one_point_holds_at_others(name):
    f, traced_at, others = _points(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DenseFallbackWarning)
        pattern = jacobian_pattern(f, traced_at).toarray()
    for x in others:
        jacobian = np.asarray(ad.jacfwd(f)(x))
        # Entries at rounding level are zeros an algorithm did not cancel exactly (as in
        # test_sparsity_patterns: a Cholesky entry gets 1e-20 of an input it does not read).
        nonzero = np.abs(jacobian) > 1e-12 * max(1.0, float(np.abs(jacobian).max(initial=0.0)))
        missing = nonzero & ~pattern
        assert not missing.any(), f"{name}: nonzeros outside the pattern at {np.argwhere(missing)}"


@pytest.mark.parametrize("name", ["sort", "partition", "median", "quantile", "percentile"])
def test_sparse_jacobian_at_a_second_point_of_the_same_shape_is_the_dense_jacobian(name):
    f, traced_at, others = _points(name)
    jacobian = sparse_jacobian(f)
    jacobian(traced_at)
    for x in others:
        np.testing.assert_allclose(jacobian(x).toarray(), ad.jacfwd(f)(x), rtol=1e-12, atol=0)


def test_a_sorted_vector_depends_on_every_element_at_every_point():
    jacobian = sparse_jacobian(lambda x: ad.sort(x) * np.array([1.0, 10.0, 100.0]))
    weights = np.diag([1.0, 10.0, 100.0])
    np.testing.assert_array_equal(jacobian(np.array([1.0, 2.0, 3.0])).toarray(), weights)
    np.testing.assert_array_equal(jacobian(np.array([3.0, 2.0, 1.0])).toarray(), weights[:, ::-1])


def test_a_selection_by_a_mask_of_x_has_no_global_pattern():
    f = lambda x: x[x > 0] * 2.0
    with pytest.raises(ValueError, match=r"depends on x.*where\(mask, x, 0\).*local=True"):
        jacobian_pattern(f, np.array([1.0, -1.0, 2.0]))
    jacobian = sparse_jacobian(f, local=True)
    for x in (np.array([1.0, -1.0, 2.0]), np.array([-1.0, 1.0, 2.0])):
        np.testing.assert_array_equal(jacobian(x).toarray(), ad.jacfwd(f)(x))


def test_a_mask_of_x_given_to_where_keeps_the_global_pattern_elementwise():
    pattern = jacobian_pattern(lambda x: ad.where(x > 0, x, x**2), np.array([1.0, -1.0]))
    np.testing.assert_array_equal(pattern.toarray(), np.eye(2, dtype=bool))
