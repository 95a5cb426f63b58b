"""Large elementwise results reuse cached buffers, and never a live array's memory."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import adcompare as ad
from adcompare.ops import OPS
from adcompare.runtime import buffers

LARGE = buffers.POOLED_FROM_BYTES // 8  # float64 elements from which results are pooled


@pytest.fixture(autouse=True)
def empty_cache():
    buffers.release()
    yield
    buffers.release()


def pooled(array) -> bool:
    return isinstance(array, np.ndarray) and array.base is not None and not array.flags.owndata


POOLED_OPS = [op for op in OPS.values() if op.hints.into is not None]


def test_every_elementwise_ufunc_op_and_power_compute_into_buffers():
    names = {op.name for op in POOLED_OPS}
    ufuncs = {op.name for op in OPS.values() if op.elementwise and isinstance(op.value, np.ufunc)}
    assert names == ufuncs | {"power"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", POOLED_OPS, ids=lambda op: op.name)
def test_a_pooled_result_equals_numpys_value_with_its_dtype(op, dtype):
    rng = np.random.default_rng(0)
    low, high = op.domain[0] if isinstance(op.domain[0], tuple) else op.domain
    size = buffers.POOLED_FROM_BYTES // np.dtype(dtype).itemsize
    args = [rng.uniform(low, high, size).astype(dtype) for _ in range(op.nargs)]
    if op.name == "power":
        args[1] = 2
    out = op.fn(*args)
    assert pooled(out) and out.dtype == dtype and out.shape == (size,)
    np.testing.assert_array_equal(out, op.value(*args))


def test_small_mixed_or_broadcast_arguments_get_numpys_own_result():
    big = np.ones(LARGE)
    assert not pooled(ad.add(np.ones(3), 1.0))  # small
    assert not pooled(ad.add(big, np.ones(1)))  # broadcast
    assert not pooled(ad.add(big, big.astype(np.float32)))  # two dtypes
    assert not pooled(ad.add(big.astype(np.int64), 1))  # integers
    assert pooled(ad.add(big, 1))


def test_a_broadcast_value_beside_a_large_array_still_gets_a_cached_buffer():
    # A sum's cotangent is a stride-0 view: the backward's products with it are pooled.
    x = np.linspace(-1.0, 1.0, LARGE)
    seed = np.broadcast_to(np.float64(2.5), x.shape)
    for args in ((seed, x), (x, seed)):
        out = ad.multiply(*args)
        assert pooled(out) and out.flags.c_contiguous
        np.testing.assert_array_equal(out, 2.5 * x)
    partly = np.broadcast_to(x[:256], (LARGE // 256, 256))  # strides (0, 8): numpy's own
    assert not pooled(ad.multiply(partly, 1.5))


def test_a_buffer_comes_back_and_is_reused_once_its_result_is_gone():
    x = np.linspace(0.0, 1.0, LARGE)
    y = ad.sin(x)
    address = y.__array_interface__["data"][0]
    del y
    gc.collect()
    assert buffers.cached_bytes() == x.nbytes
    z = ad.cos(x)
    assert z.__array_interface__["data"][0] == address
    assert buffers.cached_bytes() == 0
    np.testing.assert_array_equal(z, np.cos(x))


def test_a_slice_that_outlives_its_result_keeps_the_memory_from_reuse():
    x = np.linspace(0.0, 1.0, LARGE)
    y = ad.sin(x)
    tail = y[-3:]  # refers to the cached buffer itself, not to y
    expected = np.sin(x[-3:])
    del y
    gc.collect()
    for _ in range(3):  # each would reuse the buffer if the check let it
        ad.cos(x)
    np.testing.assert_array_equal(tail, expected)


def test_tensors_results_saved_on_the_tape_are_not_reused_before_backward():
    # Each x**2 result is kept by the next power's record; the gradient must see
    # the values as they were: d/dx (x²)² = 4x³.
    x0 = np.linspace(0.5, 1.5, LARGE)
    x = ad.Tensor(x0, requires_grad=True)
    y = ad.sum((x**2) ** 2)
    for _ in range(3):
        ad.exp(x0)  # results that come and go between the forward and backward passes
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * x0**3, rtol=1e-14)


def test_the_cache_keeps_a_bounded_number_of_idle_buffers():
    x = np.ones(LARGE)
    results = [ad.negative(x) for _ in range(buffers.MAX_IDLE_PER_SHAPE + 3)]
    del results
    gc.collect()
    assert buffers.cached_bytes() == buffers.MAX_IDLE_PER_SHAPE * x.nbytes
    buffers.release()
    assert buffers.cached_bytes() == 0


def test_strided_inputs_get_numpys_own_result_in_numpys_layout():
    square = np.arange(float(LARGE)).reshape(-1, 256)
    for view in (square.T, square[:, ::2], np.asfortranarray(square)):
        out = ad.multiply(view, 1.5)
        assert not pooled(out)
        np.testing.assert_array_equal(out, view * 1.5)


def test_nothing_is_pooled_inside_disabled_blocks_even_nested_ones():
    x = np.ones(LARGE)
    with buffers.disabled():
        with buffers.disabled():
            assert not pooled(ad.negative(x))
        assert not pooled(ad.negative(x))
    assert pooled(ad.negative(x))


def test_the_reuse_check_counts_references_as_this_python_does(monkeypatch):
    # CPython 3.14 stopped counting getrefcount's own argument: the baseline is
    # measured, not assumed, so a live slice still keeps its buffer from reuse.
    real = buffers.sys.getrefcount

    class OneFewer:
        implementation = buffers.sys.implementation

        @staticmethod
        def getrefcount(value):
            # Less this wrapper's own parameter, and the argument 3.14 does not count.
            return real(value) - 2

    monkeypatch.setattr(buffers, "sys", OneFewer)
    monkeypatch.setattr(buffers, "_ONLY_OURS", buffers._baseline_references())
    x = np.linspace(0.0, 1.0, LARGE)
    y = ad.sin(x)
    tail = y[-3:]
    del y
    gc.collect()
    for _ in range(3):  # each would reuse the buffer if the check let it
        ad.cos(x)
    np.testing.assert_array_equal(tail, np.sin(x[-3:]))


def test_peak_memory_counts_what_a_call_needs_even_with_idle_buffers_at_hand():
    from adcompare.bench.harness.measure import peak_memory

    x = np.linspace(0.0, 1.0, LARGE)
    y = ad.sin(x)
    del y  # leaves one idle buffer of x's shape behind
    gc.collect()
    assert buffers.cached_bytes() == x.nbytes
    # sin(x) needs one result of x's size: the idle buffer must not hide it.
    assert peak_memory(lambda: ad.sin(x)) >= x.nbytes


def test_peak_memory_does_not_count_buffers_left_idle_during_the_call():
    from adcompare.bench.harness.measure import peak_memory

    def six_sizes():
        for k in range(6):
            ad.sum(ad.sin(np.ones(LARGE + k)))  # each result dies after its sum

    assert peak_memory(six_sizes) < 2 * buffers.POOLED_FROM_BYTES + 4096
