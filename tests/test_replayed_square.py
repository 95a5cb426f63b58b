"""A replayed square under a sum doubles the sum's cotangent, not the squared values.

The eager sweep already does (``test_eager_fast_paths.py``); these tests hold the
same rule to it when the cotangent is a traced value, as it is in a recording
whenever the sum's cotangent depends on the inputs (GMM's responsibilities).
"""

from __future__ import annotations

import re

import numpy as np
from scipy.special import softmax

import adcompare as ad


def _log_partition(y):
    """Σ_n logsumexp_k(Σ_d y[k, n, d]²): the sum's cotangent is the softmax over k."""
    return ad.sum(ad.logsumexp(ad.sum(y * y, axis=2), axis=0))


def _by_hand(y: np.ndarray) -> np.ndarray:
    """d/dy of :func:`_log_partition`: 2·y·softmax_k(Σ_d y²), written out in numpy."""
    shares = softmax(np.sum(y * y, axis=2), axis=0)
    return 2.0 * y * shares[:, :, None]


def test_a_replayed_square_under_a_traced_sum_never_doubles_the_values():
    y = np.random.default_rng(3).normal(scale=0.3, size=(4, 300, 128))  # 153,600 elements
    compiled = ad.compile(_log_partition, y)
    sweep = compiled.program.source.split("# reverse sweep")[1]
    # Doubling y (a constant times the input) is a full pass the rule avoids: the
    # doubling is done on the (4, 300) cotangent before its one product with y.
    assert re.search(r"multiply\(c(_\d+)?, y\b", sweep) is None
    assert len(re.findall(r"multiply\([^)]*\by\b", sweep)) == 1
    for point in (y, 1.5 * y[::-1]):  # the recorded input and another one
        gradient = compiled.grad(point)
        np.testing.assert_array_equal(gradient, ad.grad(_log_partition)(point))
        np.testing.assert_allclose(gradient, _by_hand(point), rtol=1e-12, atol=1e-15)


def test_a_small_replayed_square_keeps_the_one_full_multiplication():
    # Below the size where scaling the distinct values pays (three op calls for one),
    # the rule multiplies out in full; the numbers are the same either way.
    y = np.random.default_rng(4).normal(size=(3, 5, 2))
    compiled = ad.compile(_log_partition, y)
    assert re.search(r"multiply\(c(_\d+)?, y\b", compiled.program.source) is not None
    np.testing.assert_array_equal(compiled.grad(y), ad.grad(_log_partition)(y))
    np.testing.assert_allclose(compiled.grad(y), _by_hand(y), rtol=1e-12)


def test_a_nested_sweep_through_a_boxed_broadcast_cotangent_gives_the_hessian_product():
    # Under a second derivative the sum's cotangent (the softmax) is a dual number or
    # a taped value; the rule looks through it to its broadcast view, which changes
    # the work, never the Hessian-vector product, checked against its closed form:
    # H·v = 2·v·p + 2·y·p·(s − Σ_k p·s), with p the softmax and s = Σ_d 2·y·v.
    rng = np.random.default_rng(5)
    y = rng.normal(scale=0.3, size=(4, 300, 128))
    v = rng.normal(size=y.shape)
    p = softmax(np.sum(y * y, axis=2), axis=0)[:, :, None]
    s = np.sum(2.0 * y * v, axis=2)[:, :, None]
    expected = 2.0 * v * p + 2.0 * y * p * (s - np.sum(p * s, axis=0))
    for mode in ("fwd-over-rev", "rev-over-rev"):
        product = ad.hvp(_log_partition, y, v, mode=mode)
        np.testing.assert_allclose(product, expected, rtol=1e-9, atol=1e-12)
