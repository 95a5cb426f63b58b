"""The transforms' fast paths for one plain argument and a float64 scalar output.

``grad`` takes a shorter path when ``argnums`` is one non-negative position
holding one array, number or box (no pytree), when the output is a traced
float64 number (its checks would pass), and when the cotangent reaching an
input is already a writeable array of its dtype. ``argnums=-1`` names the
same argument through the general path, so each case is run both ways and
must agree bit for bit, in value, gradient, type and dtype; the derivatives
themselves are checked against hand-derived formulas.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.gradbench.particle import CHARGES, potential
from adcompare.gradbench.saddle import saddle
from adcompare.transforms.arguments import Flat


def _force(x, charges):
    """Hand-derived gradient of the potential Σ 1/‖x − c‖: −Σ (x − c)/‖x − c‖³."""
    d = x - charges
    return -np.sum(d / np.sum(d * d, axis=1, keepdims=True) ** 1.5, axis=0)


def _same(a, b) -> None:
    """Bit-identical results: same type, dtype, shape and bytes."""
    assert type(a) is type(b)
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


CASES = {
    "cubic on a float": (lambda x: x**3 + 2.0 * x, (2.0,), lambda x: 3 * x**2 + 2.0),
    "cubic on a 0-d array": (lambda x: x**3 + 2.0 * x, (np.array(1.5),), lambda x: 3 * x**2 + 2.0),
    "potential on a 2-vector": (potential, (np.array([1.0, 7.0]), CHARGES), _force),
    "saddle's bowl on a 2-vector": (
        saddle,
        (np.array([1.0, -2.0]), np.array([0.5, 0.25])),
        lambda p, q: 2.0 * p,
    ),
    "a float32 input": (
        lambda x: ad.sum(x * x),
        (np.array([1.0, 2.0], np.float32),),
        lambda x: 2.0 * x,
    ),
}


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("case", list(CASES))
def test_fast_and_general_paths_agree_bit_for_bit(case, mode):
    f, args, derivative = CASES[case]
    general = -len(args)  # the first argument, named so that the general path runs
    value, gradient = ad.value_and_grad(f, 0, mode=mode)(*args)
    value_general, gradient_general = ad.value_and_grad(f, general, mode=mode)(*args)
    _same(value, value_general)
    _same(gradient, gradient_general)
    np.testing.assert_allclose(gradient, derivative(*args), rtol=1e-6)
    assert gradient.dtype == np.asarray(args[0]).dtype


def test_flat_fast_path_builds_what_the_general_path_builds():
    for arg in (2.0, np.float64(2.0), np.array([1.0, 2.0]), ad.Dual(2.0, 1.0)):
        fast, general = Flat((arg, 3.0), 0, "grad"), Flat((arg, 3.0), -2, "grad")
        assert (fast.many, fast.requested, fast.positions) == (
            general.many,
            general.requested,
            general.positions,
        )
        assert fast.trees.keys() == general.trees.keys()
        (tree, leaves, slots), (tree_g, leaves_g, slots_g) = fast.trees[0], general.trees[0]
        assert tree is tree_g and slots == slots_g and leaves[0] is leaves_g[0]
        assert len(fast.leaves) == 1 and type(fast.leaves[0]) is type(general.leaves[0])


@pytest.mark.parametrize(
    ("outer", "inner"),
    [("reverse", "reverse"), ("forward", "reverse"), ("reverse", "forward")],
)
def test_nested_gradients_keep_their_levels_on_the_fast_path(outer, inner):
    # d/dx [x · d/dy (x · y)] = 2x: the inner call's argument is an outer box.
    def f(x):
        return x * ad.grad(lambda y: x * y, mode=inner)(x)

    assert float(ad.grad(f, mode=outer)(3.0)) == 6.0

    # d/dx of the force's first component (a Hessian entry), against central differences.
    def fx(w):
        return ad.grad(potential, mode=inner)(w, CHARGES)[0]

    x, h = np.array([1.0, 7.0]), 1e-6
    dx = np.array([h, 0.0])
    expected = (_force(x + dx, CHARGES)[0] - _force(x - dx, CHARGES)[0]) / (2 * h)
    np.testing.assert_allclose(ad.grad(fx, mode=outer)(x)[0], expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("f", "error", "words"),
    [
        (lambda x: x * np.ones(2), ValueError, "scalar output"),
        (lambda x: x * 1j, TypeError, "real-valued output"),
        (lambda x: x > 1.0, TypeError, "boolean"),
        (lambda x: (x, x), TypeError, "scalar output"),
    ],
)
def test_outputs_the_fast_path_does_not_take_are_still_refused(f, error, words):
    with pytest.raises(error, match=words):
        ad.grad(f)(2.0)


def test_gradients_stay_writeable_and_unshared():
    # sum's cotangent reaches x as a read-only broadcast view: it is copied, once.
    g = ad.grad(lambda x: ad.sum(x) * 2.0)(np.ones(3))
    assert g.flags.writeable
    g[0] = 5.0
    np.testing.assert_array_equal(ad.grad(lambda x: ad.sum(x) * 2.0)(np.ones(3)), [2.0] * 3)
    # the identity hands the seed back: a fresh array per call
    first, second = ad.grad(lambda x: x)(2.0), ad.grad(lambda x: x)(2.0)
    assert first is not second and float(first) == 1.0


def test_a_cotangent_is_returned_as_is_only_where_the_general_steps_would_keep_it():
    from adcompare.engines.reverse.interface import lift
    from adcompare.runtime.dtypes import in_dtype
    from adcompare.transforms.reverse_mode import _gradient, _real_if_real, _writeable

    read_only = np.broadcast_to(np.ones(1), (3,))
    cases = [
        (np.zeros(3), np.arange(3.0)),  # writeable, same dtype: as is
        (np.zeros(3), read_only),  # a broadcast view: copied
        (np.zeros(3, np.float32), np.arange(3.0)),  # a wider cotangent: cast back
        (np.zeros(3), np.arange(3.0) * 1j),  # a real input: the real part
        (np.zeros(3, complex), np.arange(3.0) + 0j),
    ]
    for value, cotangent in cases:
        (leaf,) = lift([value])
        fast = _gradient(leaf, cotangent)
        general = _writeable(in_dtype(_real_if_real(leaf, cotangent), leaf.dtype))
        _same(fast, general)
        assert fast.flags.writeable and fast.dtype == value.dtype
        assert (fast is cotangent) == (cotangent.dtype == value.dtype and cotangent.flags.writeable)


def test_dual_ops_on_plain_and_nested_primals():
    # A lane tangent of a 2-vector broadcast against a 2×2 constant is padded: ∂(x − C)ᵢⱼ/∂xₖ = δⱼₖ
    jacobian = ad.jacfwd(lambda x: x - CHARGES)(np.array([1.0, 7.0]))
    np.testing.assert_array_equal(jacobian, np.broadcast_to(np.eye(2), (2, 2, 2)))
    # Primals that are boxes of an outer transform go through dispatch: d²/dx² x³ = 6x
    for outer in ("forward", "reverse"):
        second = ad.grad(ad.grad(lambda x: x**3, mode="forward"), mode=outer)(2.0)
        assert float(second) == 12.0
    # A Dual and a Tensor at one level still cannot meet
    x = ad.Dual(2.0, 1.0)
    with pytest.raises(TypeError, match="cannot combine a Dual and a Tensor"):
        ad.multiply(x, ad.Tensor._wrap(np.array(3.0), x.level))
