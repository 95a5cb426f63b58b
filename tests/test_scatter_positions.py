"""``scatter_add`` at distinct positions places its values, with ``np.add.at``'s numbers.

``np.add.at`` is the plain way (it accumulates repeats); the placement must give its
result bit for bit, signed zeros and NaN included, and only where no position repeats.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.adbench.gmm import lower_positions
from adcompare.ops import scatter_add
from adcompare.ops.scattering import _PLACE_FROM, distinct_positions

ROWS, COLS = lower_positions(32)  # 496 distinct positions below a diagonal
DIAGONAL = np.arange(32)

# (index, shape, v's shape): each addresses distinct positions, v has ≥ _PLACE_FROM values.
DISTINCT = [
    ((slice(None), ROWS, COLS), (10, 32, 32), (10, 496)),  # GMM's factors
    ((slice(None), DIAGONAL, DIAGONAL), (200, 32, 32), (200, 32)),
    ((ROWS, slice(None), COLS), (32, 12, 32), (496, 12)),  # arrays apart: moved in front
    ((Ellipsis, ROWS - 32, COLS), (9, 32, 32), (9, 496)),  # negative rows
    ((None, slice(None), ROWS, COLS), (9, 32, 32), (1, 9, 496)),
    ((slice(None), ROWS, COLS), (10, 32, 32), (496,)),  # v broadcast over the first axis
]


def _plain(v, index, shape):
    out = np.zeros(shape)
    np.add.at(out, index, v)
    return out


@pytest.mark.parametrize("index,shape,v_shape", DISTINCT)
def test_a_scatter_to_distinct_positions_gives_add_ats_numbers_bit_for_bit(index, shape, v_shape):
    v = np.random.default_rng(len(v_shape)).normal(size=v_shape)
    v.flat[:4] = [-0.0, 0.0, np.nan, -np.inf]  # add.at makes −0.0 a +0.0
    assert max(v.size, np.broadcast_to(v, np.zeros(shape)[index].shape).size) >= _PLACE_FROM
    assert distinct_positions(index, shape)
    placed, plain = scatter_add(v, index=index, shape=shape), _plain(v, index, shape)
    np.testing.assert_array_equal(placed, plain)
    assert not np.signbit(placed[plain == 0]).any()


def test_repeated_positions_still_accumulate():
    rows = np.concatenate([ROWS, ROWS[:7]])
    cols = np.concatenate([COLS, COLS[:7]])
    index, shape = (slice(None), rows, cols), (10, 32, 32)
    assert not distinct_positions(index, shape)
    v = np.random.default_rng(1).normal(size=(10, rows.size))
    np.testing.assert_array_equal(scatter_add(v, index=index, shape=shape), _plain(v, index, shape))


@pytest.mark.parametrize(
    "index,shape,expected",
    [
        ((np.array([0, 3, 1]),), (4,), True),
        ((np.array([0, -4]),), (4,), False),  # -4 names 0 again
        ((np.array([[0], [1]]), np.array([0, 0])), (2, 2), False),  # broadcast: (0,0) twice
        ((np.array([[0], [1]]), np.array([0, 1])), (2, 2), True),
        ((np.array([True, False]),), (2,), False),  # a mask: not read, so not known
        ((slice(None), 2), (3, 4), True),  # basic indexing never repeats
        ((np.arange(5000) * 7919 % 10**9,), (10**9,), True),  # sparse in a large axis
    ],
)
def test_distinct_positions_reads_the_broadcast_integer_arrays(index, shape, expected):
    assert distinct_positions(index, shape) is expected


def test_gmm_factors_scatter_keeps_its_gradient():
    # The placement is the value; the derivative of a scatter is still the gather,
    # checked against central differences through the lower triangle it fills.
    lower = np.random.default_rng(2).normal(size=(10, 496))
    weights = np.random.default_rng(3).normal(size=(10, 32, 32))

    def f(values):
        return ad.sum(
            scatter_add(values, index=(slice(None), ROWS, COLS), shape=(10, 32, 32)) ** 2 * weights
        )

    gradient = ad.grad(f)(lower)
    np.testing.assert_allclose(gradient, 2.0 * lower * weights[:, ROWS, COLS], rtol=1e-13)
    step = np.zeros_like(lower)
    step[3, 17] = 1e-6
    central = (f(lower + step) - f(lower - step)) / 2e-6
    np.testing.assert_allclose(gradient[3, 17], central, rtol=1e-7)
