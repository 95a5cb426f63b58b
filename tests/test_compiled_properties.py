"""Random programs with masks and index arguments: a replay equals eager execution.

Each program transforms ``x`` elementwise, then adds terms that select from
the result with masks (``z[z > c]``, ``where``, ``nonzero``, ``len`` of a
selection) or with its other arguments (an integer array, an integer, a
boolean mask). It is compiled at one point and replayed at others, chosen
so that masks flip and selections change size; value and gradient must
equal eager reverse mode's there.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import adcompare as ad

SIZE = 5

ELEMENTWISE = {
    "sin": ad.sin,
    "tanh": ad.tanh,
    "square": lambda z: z * z,
    "affine": lambda z: 1.5 * z - 0.25,
    "relu": ad.relu,
    "abs": ad.abs,
}


def _mask_select(z, c, index, k, keep):
    selected = z[z > c]
    return ad.sum(ad.sin(selected) * selected)


def _mask_count(z, c, index, k, keep):
    selected = z[z < c]
    return ad.sum(selected) / (1 + len(selected))


def _nonzero(z, c, index, k, keep):
    return ad.sum(z[np.nonzero(z >= c)] ** 2)


def _where(z, c, index, k, keep):
    return ad.sum(ad.where(z > c, ad.tanh(z), z * z))


def _integer_array(z, c, index, k, keep):
    return ad.sum(ad.exp(z[index]) * c)


def _integer(z, c, index, k, keep):
    return z[k] * z[0]


def _boolean_mask(z, c, index, k, keep):
    return ad.sum(z[keep] * z[keep][::-1])


def _maximum(z, c, index, k, keep):
    return ad.sum(ad.maximum(z, c))


TERMS = [
    _mask_select,
    _mask_count,
    _nonzero,
    _where,
    _integer_array,
    _integer,
    _boolean_mask,
    _maximum,
]

points = st.lists(
    st.floats(-2.0, 2.0, allow_nan=False).map(lambda v: round(v, 3)),
    min_size=SIZE,
    max_size=SIZE,
).map(np.array)
arguments = st.tuples(
    points,
    st.lists(st.integers(0, SIZE - 1), min_size=3, max_size=3).map(np.array),
    st.integers(-SIZE, SIZE - 1),
    st.lists(st.booleans(), min_size=SIZE, max_size=SIZE).map(np.array),
)
programs = st.tuples(
    st.lists(st.sampled_from(sorted(ELEMENTWISE)), max_size=3),
    st.lists(
        st.tuples(st.sampled_from(TERMS), st.floats(-1.0, 1.0).map(lambda v: round(v, 2))),
        min_size=1,
        max_size=4,
    ),
)


def _program(steps, terms):
    def f(x, index, k, keep):
        z = x
        for name in steps:
            z = ELEMENTWISE[name](z)
        total = 0.0
        for term, c in terms:
            total = total + term(z, c, index, k, keep)
        return total

    return f


@settings(max_examples=60, deadline=None)
@given(programs, arguments, st.lists(arguments, min_size=1, max_size=3))
def test_replay_equals_eager_execution_at_new_inputs(program, recorded_at, new_inputs):
    f = _program(*program)
    compiled = ad.compile(f, *recorded_at)
    # The recording point negated flips every mask that compares with zero.
    flipped = (-recorded_at[0], *recorded_at[1:])
    for args in [flipped, *new_inputs]:
        value, gradient = compiled.value_and_grad(*args)
        eager_value, eager_gradient = ad.value_and_grad(f)(*args)
        np.testing.assert_allclose(value, eager_value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gradient, eager_gradient, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(compiled(*args), eager_value, rtol=1e-12, atol=1e-12)
