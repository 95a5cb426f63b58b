"""``grad(f, mode="replay")``: reverse mode recorded once per structure, replayed after.

A replayed call builds no tape and runs no sweep (``ad.count()`` says so),
its numbers are reverse mode's bit for bit, a branch taken the other way is
recorded again, and a call replay cannot take (a box of an outer transform,
a pytree, ``has_aux``) runs in eager reverse mode.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.gradbench.particle import CHARGES, potential
from adcompare.gradbench.saddle import saddle


def _force(x, charges):
    """Hand-derived gradient of the potential Σ 1/‖x − c‖: −Σ (x − c)/‖x − c‖³."""
    d = x - charges
    return -np.sum(d / np.sum(d * d, axis=1, keepdims=True) ** 1.5, axis=0)


def _same(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_replay_gives_reverse_modes_numbers_and_records_once():
    replayed, eager = ad.grad(potential, mode="replay"), ad.grad(potential)
    rng = np.random.default_rng(32)
    replayed(np.array([0.0, 8.0]), CHARGES)  # the recording
    for _ in range(20):
        x = rng.normal(size=2) * 4.0
        with ad.count() as cost:
            g = replayed(x, CHARGES)
        assert (cost.tape_records, cost.sweeps) == (0, 0)  # replayed: no tape, no sweep
        _same(g, eager(x, CHARGES))
        np.testing.assert_allclose(g, _force(x, CHARGES), rtol=1e-12)


def test_replay_of_several_arguments_and_a_float():
    both = ad.value_and_grad(saddle, argnums=(0, 1), mode="replay")
    p, q = np.array([1.0, -2.0]), np.array([0.5, 0.25])
    for scale in (1.0, 3.0):
        value, (gp, gq) = both(scale * p, q)
        _same(gp, 2.0 * scale * p)
        _same(gq, -2.0 * q)
        assert float(value) == float(np.sum((scale * p) ** 2) - np.sum(q**2))
    g = ad.grad(lambda x: x**3 + 2.0 * x, mode="replay")
    assert [float(g(x)) for x in (2.0, 3.0, 0.5)] == [14.0, 29.0, 2.75]
    # The value of a function of a float is a number, of the type eager mode gives.
    for x in (2.0, 3.0):
        value, gradient = ad.value_and_grad(lambda x: x * x, mode="replay")(x)
        eager_value, eager_gradient = ad.value_and_grad(lambda x: x * x)(x)
        assert type(value) is type(eager_value) and value == eager_value == x * x
        _same(gradient, eager_gradient)


def test_a_branch_taken_the_other_way_is_recorded_again():
    def f(x):
        return x**2 if x > 0 else -(x**3)

    g = ad.grad(f, mode="replay")
    for x, expected in [(3.0, 6.0), (-2.0, -12.0), (4.0, 8.0), (-1.0, -3.0)]:
        assert float(g(x)) == expected


def test_a_function_whose_guards_keep_flipping_goes_back_to_eager_reverse():
    def f(x):
        return x**2 if x > 0 else -(x**3)

    g = ad.grad(f, mode="replay")
    xs = [3.0, -2.0] * 8
    for x in xs:
        g(x)
    for x in xs[:4]:
        with ad.count() as cost:
            result = float(g(x))
        assert cost.sweeps == 1  # eager: one sweep, no recording
        assert result == (2 * x if x > 0 else -3 * x**2)


@pytest.mark.parametrize("outer", ["reverse", "forward"])
def test_nested_calls_run_eagerly_and_keep_perturbations_apart(outer):
    # d/dx [x · d/dy (x · y)] = 2x, with the inner gradient in replay mode
    def f(x):
        return x * ad.grad(lambda y: x * y, mode="replay")(x)

    assert float(ad.grad(f, mode=outer)(3.0)) == 6.0
    # the force's derivative through an outer transform, against central differences
    inner = ad.grad(potential, mode="replay")
    inner(np.array([1.0, 7.0]), CHARGES)  # recorded on plain values first

    def fx(w):
        return inner(w, CHARGES)[0]

    x, dx = np.array([1.0, 7.0]), np.array([1e-6, 0.0])
    expected = (_force(x + dx, CHARGES)[0] - _force(x - dx, CHARGES)[0]) / 2e-6
    np.testing.assert_allclose(ad.grad(fx, mode=outer)(x)[0], expected, rtol=1e-6)


def test_what_replay_cannot_take_runs_in_reverse_mode():
    tree = ad.grad(lambda p: p["a"] * p["b"], mode="replay")({"a": 2.0, "b": 3.0})
    assert (float(tree["a"]), float(tree["b"])) == (3.0, 2.0)
    g, aux = ad.grad(lambda x: (x * x, "note"), mode="replay", has_aux=True)(3.0)
    assert (float(g), aux) == (6.0, "note")
    with pytest.raises(ValueError, match="'replay'"):
        ad.grad(lambda x: x, mode="no such mode")
