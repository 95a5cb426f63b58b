"""A replayed call's own path: its arguments taken as they are or converted, its
results checked for shared memory only where they could share any, and ByMode's
choice of program for GradBench's scalar evals (lse's gradient at small n is mostly
this path). Every check the shorter path keeps is shown catching its case; the
derivatives are checked against hand-derived formulas."""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.engines.replay.memory import IN_PLACE_FROM
from adcompare.gradbench.lse import logsumexp
from adcompare.gradbench.scalar import ByMode


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _held_arrays(compiled) -> list:
    """The arrays the current value-and-gradient program holds (constants, arrays f reads)."""
    namespace = compiled.program.run.__globals__
    return [v for v in namespace.values() if isinstance(v, np.ndarray)]


def _assert_unshared(results, others) -> None:
    """Every array among ``results`` is writeable and shares memory with no other array."""
    arrays = [r for r in results if isinstance(r, np.ndarray)]
    for i, r in enumerate(arrays):
        assert r.flags.writeable
        assert not any(np.shares_memory(r, o) for o in [*arrays[i + 1 :], *others])


def test_results_made_by_the_call_are_returned_unchecked_and_share_nothing():
    x = np.array([0.5, -1.0, 2.0, 0.25])
    compiled = ad.compile(logsumexp, x, x.max())
    assert "_unshared" not in compiled.program.source  # each result a new ufunc result
    point = np.array([3.0, 1.0, -2.0, 0.5])
    first = compiled.value_and_grad(point, point.max())
    value, gradient = compiled.value_and_grad(point, point.max())
    assert value == pytest.approx(np.log(np.exp(point).sum()), rel=1e-15)
    np.testing.assert_allclose(gradient, _softmax(point), rtol=1e-15)
    _assert_unshared((value, gradient), [point, *first, *_held_arrays(compiled)])
    assert compiled(point, point.max()) == value  # the value program: made by the call too


def _exp_sin_cos_gradient(x):
    """d/dx of Σ exp(x sin x) cos x."""
    e = np.exp(x * np.sin(x))
    return e * (np.sin(x) + x * np.cos(x)) * np.cos(x) - e * np.sin(x)


X, Y = np.array([0.5, 1.5, -1.0]), np.array([2.0, -3.0, 0.25])
LARGE = np.linspace(-1.0, 1.5, IN_PLACE_FROM // 8 * 2)

#: f, its arguments, its gradients, and whether its results could share memory.
RESULTS = {
    "an input": (lambda x, y: ad.sum(x * y), (X, Y), lambda x, y: (y, x), True),
    "a view of an input": (
        lambda x, y: ad.sum(x * y[1:]),
        (X, np.array([7.0, *Y])),
        lambda x, y: (y[1:], np.array([0.0, *x])),
        True,
    ),
    "one value twice": (
        lambda x, y: ad.sum(ad.exp(x + y)),
        (X, Y),
        lambda x, y: (np.exp(x + y), np.exp(x + y)),
        True,
    ),
    # Memory the program made and wrote into again (out=) is the call's own: unchecked.
    "written into a dead value's memory": (
        lambda x, y: ad.sum(ad.exp(ad.sin(x) * x) * ad.cos(x)) + ad.sum(y),
        (LARGE, Y),
        lambda x, y: (_exp_sin_cos_gradient(x), np.ones(3)),
        False,
    ),
    "scattered into zeros the program made": (
        lambda x, y: ad.log(ad.sum(x[1:] * y[:-1]) + 10.0),
        (X, Y),
        lambda x, y: (
            np.array([0.0, *y[:-1]]) / (x[1:] @ y[:-1] + 10.0),
            np.array([*x[1:], 0.0]) / (x[1:] @ y[:-1] + 10.0),
        ),
        False,
    ),
    "new ufunc results": (
        lambda x, y: ad.log(ad.sum(ad.exp(x) * y)),
        (X, np.abs(Y)),
        lambda x, y: (np.exp(x) * y / (np.exp(x) @ y), np.exp(x) / (np.exp(x) @ y)),
        False,
    ),
    "constants, copied": (
        lambda x, y: ad.sum(2.0 * x) + ad.sum(y),
        (X, Y),
        lambda x, y: (np.full(3, 2.0), np.ones(3)),
        False,
    ),
}


@pytest.mark.parametrize("case", list(RESULTS))
def test_results_that_could_share_memory_are_checked_and_none_ever_shares(case):
    f, args, gradients_of, could_share = RESULTS[case]
    compiled = ad.compile(f, *args, argnums=(0, 1))
    assert ("_unshared" in compiled.program.source) == could_share
    first = compiled.grad(*args)
    gradients = compiled.grad(*args)
    for got, expected in zip(gradients, gradients_of(*args), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)
    _assert_unshared(gradients, [*args, *first, *_held_arrays(compiled)])


def test_an_argument_named_like_the_result_check_keeps_the_check():
    def f(_unshared, y):
        return ad.sum(_unshared * y)

    gradient = ad.compile(f, X, Y).grad(X, Y)
    np.testing.assert_array_equal(gradient, Y)
    assert not np.shares_memory(gradient, Y)


def test_arguments_are_converted_where_they_are_not_float_arrays_and_checked():
    compiled = ad.compile(lambda x, c: ad.sum(x**2) * c, np.ones(3), 2.0)
    # ints, a list, numbers: as arrays, the differentiated one as floats; one signature
    for x, c in [(np.arange(3), 2.0), ([0, 1, 2], np.float64(2.0)), (np.arange(3.0), np.array(2))]:
        value, gradient = compiled.value_and_grad(x, c)
        assert value == 10.0 and gradient.dtype == np.float64
        np.testing.assert_array_equal(gradient, [0.0, 4.0, 8.0])
    assert compiled.recordings == 2  # the int array c: an input of its own dtype
    single = compiled.grad(np.arange(3, dtype=np.float32), 2.0)  # another dtype: recorded again
    assert single.dtype == np.float32 and compiled.recordings == 3
    np.testing.assert_array_equal(single, [0.0, 4.0, 8.0])
    with pytest.raises(TypeError, match=r"takes 2 argument\(s\) \(as recorded\), got 1"):
        compiled.grad(np.ones(3))
    with pytest.raises(TypeError, match=r"argument 0 is a .*takes plain arrays"):
        ad.grad(lambda x: compiled(x, 1.0))(np.ones(3))


def test_by_mode_replays_one_program_per_mode_shape_dtype_and_int():
    recorded = []

    def f(x, k, scale):  # k decides a slice: bound into the recording
        recorded.append(k)
        return ad.sum(x[:k] ** 2) * scale

    by_mode = ByMode("demo", f)
    x, more = np.array([1.0, -2.0, 3.0, 0.5]), np.array([1.0, -2.0, 3.0, 0.5, 4.0])
    calls = [
        ((x, 2, 1.5), 1),
        ((x, 2, 2.5), 1),  # a new scale is an argument: read at replay
        ((x, 3, np.float64(2.5)), 2),  # another int
        ((x, 3, np.array(0.5)), 2),  # a 0-d array of a number's shape and dtype
        ((more, 3, np.array(2.0)), 3),  # another shape
        ((more.astype(np.float32), 3, np.array(2.0)), 4),  # another dtype
    ]
    for (point, k, scale), recordings in calls:
        gradient = by_mode.gradient("replay", point, k, scale)
        expected = np.where(np.arange(point.size) < k, 2.0 * float(scale) * point, 0.0)
        np.testing.assert_allclose(gradient, expected, rtol=1e-7)
        assert gradient.dtype == point.dtype and len(recorded) == recordings
        assert by_mode.replay(point, (k, scale)).recordings == 1  # one program a signature
    program = by_mode.replay(more, (3, np.array(2.0)))
    assert program is by_mode.replay(more, (3, np.array(7.0))) and len(recorded) == 5


def test_by_mode_keys_numbers_by_their_type():
    recorded = []

    def f(x, scale):
        recorded.append(scale)
        return logsumexp(x, scale)

    by_mode = ByMode("demo", f)
    x = np.array([0.5, 2.0, -1.0])
    calls = [
        ((x, x.max()), 1),
        ((x, np.float64(0.0)), 1),  # the shift is an argument: any shift gives the softmax
        ((x.astype(np.float32), np.float64(2.0)), 2),  # another dtype of x
        ((x[:2].astype(np.float32), np.float64(2.0)), 3),  # another shape
        ((x, 1.0), 4),  # a Python float: another type
        ((x, np.float32(1.0)), 5),  # another type and dtype of the shift
        ((x, np.array(2.0)), 6),  # a 0-d array: keyed by its shape and dtype
    ]
    for (point, shift), recordings in calls:
        gradient = by_mode.gradient("replay", point, shift)
        np.testing.assert_allclose(gradient, _softmax(point.astype(np.float64)), rtol=1e-6)
        assert gradient.dtype == point.dtype and len(recorded) == recordings
        assert by_mode.replay(point, (shift,)).recordings == 1
