"""numpy's questions about a box: its structure (np.ndim), or its values with derivative
zero (np.allclose), in every engine; np.real_if_close; numpy's keywords of np.clip."""

import numpy as np
import pytest

import adcompare as ad

X = np.array([[0.5, -1.5, 2.0], [1.0, 3.0, -0.25]])


ENGINES = {
    "reverse": lambda f, x: ad.grad(f)(x),
    "forward": lambda f, x: ad.grad(f, mode="forward")(x),
    "compiled": lambda f, x: ad.compile(f, x).value_and_grad(x)[1],
    "compiled forward": lambda f, x: ad.compile(f, x, mode="forward").value_and_jacobian(x)[1],
    "vmap": lambda f, x: ad.vmap(ad.grad(f))(np.stack([x, x]))[1],
}
#: The engines in which Python may branch on a value (not vmap's: one answer per example).
BRANCHING = ("reverse", "forward", "compiled", "compiled forward")


def _gradients(f, x, engines=tuple(ENGINES)):
    """The gradient of ``f`` at ``x`` by each engine: reverse, forward, replayed (reverse
    and forward), and reverse inside vmap over a batch of two copies."""
    return {engine: ENGINES[engine](f, x) for engine in engines}


def _structure(value) -> tuple:
    return (
        np.ndim(value),
        np.shape(value),
        np.size(value),
        np.size(value, 1),
        np.size(value, (0, 1)),
        np.iscomplexobj(value),
        np.isrealobj(value),
        np.result_type(value, np.float32),
        np.min_scalar_type(value),
    )


def test_shape_queries_answer_as_on_the_plain_value_and_keep_the_derivative():
    seen = []

    def f(x):
        seen.append(_structure(x))
        return ad.sum(x**3) * np.ndim(x) + np.size(x) * ad.sum(x)

    for engine, gradient in _gradients(f, X).items():
        # d/dx [ndim * sum(x^3) + size * sum(x)] = 2 * 3x^2 + 6
        np.testing.assert_allclose(gradient, 6.0 * X**2 + 6.0, rtol=1e-12, err_msg=engine)
    assert set(seen) == {_structure(X)}


def test_shape_answers_are_static_in_a_recording():
    compiled = ad.compile(lambda x: ad.sum(x) * np.size(x), X)
    value, gradient = compiled.value_and_grad(2.0 * X)
    assert value == pytest.approx(6.0 * np.sum(2.0 * X)) and compiled.recordings == 1
    np.testing.assert_array_equal(gradient, np.full(X.shape, 6.0))
    assert not compiled.program.guards


def test_min_scalar_type_of_one_number_reads_it_and_a_recording_guards_it():
    def f(x):
        return ad.sum(x) * (2.0 if np.min_scalar_type(x) == np.float16 else 3.0)

    for number in (3.0, 1e300):
        assert np.min_scalar_type(ad.Tensor(number, requires_grad=True)) == np.min_scalar_type(
            number
        )
    compiled = ad.compile(f, np.array(3.0))
    assert compiled.value_and_grad(np.array(5.0)) == (10.0, 2.0) and compiled.recordings == 1
    assert compiled.value_and_grad(np.array(1e300))[1] == 3.0 and compiled.recordings == 2


def test_allclose_in_an_assertion_inside_a_differentiated_function():
    """autograd's test_logic.py::test_assert: the test itself has derivative zero."""

    def f(x):
        assert np.allclose(x, (x * 3.0) / 3.0) and not np.allclose(x, x + 1.0)
        assert np.array_equal(x, x) and not np.array_equal(x, -x)
        return ad.sum(x**2)

    for engine, gradient in _gradients(f, X, BRANCHING).items():
        np.testing.assert_allclose(gradient, 2.0 * X, err_msg=engine)


def test_isclose_is_a_mask_with_numpy_s_answer_in_every_engine():
    masks = []

    def f(x):
        mask = np.isclose(x, 1.0, atol=0.1)
        masks.append(np.asarray(ad.ops.registry.raw(mask)))
        return ad.sum(ad.where(mask, 0.0, x**2))

    expected_mask = np.isclose(X, 1.0, atol=0.1)
    for engine, gradient in _gradients(f, X).items():
        np.testing.assert_allclose(gradient, np.where(expected_mask, 0.0, 2.0 * X), err_msg=engine)
    for mask in masks:
        np.testing.assert_array_equal(
            mask[-X.ndim :] if mask.ndim == X.ndim else mask[1], expected_mask
        )


@pytest.mark.parametrize("x0", [2.0, 2.0 + 1j])
def test_iscomplex_chooses_a_branch_as_autograd_s_falseyness_test(x0):
    """f(x) = real(x^2) for a complex x with an imaginary part, else x: derivative 2x or 1."""

    def f(x):
        return ad.real(x**2 if np.iscomplex(x) else ad.sum(x))

    assert np.isreal(ad.Tensor(x0)) == np.isreal(x0) and np.iscomplex(ad.Tensor(x0)) != np.isreal(
        x0
    )
    if np.iscomplex(x0):
        # f = Re(x^2) = a^2 - b^2 at x = a + bi; adcompare's gradient df/da - i df/db
        # (JAX's and autograd's convention) is 2a + 2bi.
        assert ad.grad(f)(x0) == pytest.approx(2.0 * x0.real + 2.0j * x0.imag)
    else:
        assert ad.grad(f)(x0) == 1.0 and ad.grad(f, mode="forward")(x0) == 1.0


def test_a_recording_guards_the_answer_of_allclose():
    def f(x):
        return ad.sum(x) if np.allclose(x, 0.0) else ad.sum(x**2)

    compiled = ad.compile(f, np.zeros(3))
    np.testing.assert_array_equal(compiled.value_and_grad(np.zeros(3))[1], np.ones(3))
    value, gradient = compiled.value_and_grad(np.array([1.0, 2.0, 3.0]))
    assert value == 14.0 and compiled.recordings == 2
    np.testing.assert_array_equal(gradient, [2.0, 4.0, 6.0])


def test_vmap_answers_every_element_question_per_example():
    batch = np.array([[1.0, 1.0], [1.0, 2.0], [1.0 + 1e-12, 1.0]])
    allclose = ad.vmap(lambda x: np.allclose(x, 1.0))(batch)
    np.testing.assert_array_equal(allclose, [np.allclose(b, 1.0) for b in batch])
    equal = ad.vmap(lambda x: np.array_equal(x, np.ones(2)))(batch)
    np.testing.assert_array_equal(equal, [np.array_equal(b, np.ones(2)) for b in batch])
    np.testing.assert_array_equal(
        ad.vmap(lambda x: np.array_equal(x, np.ones(3)))(batch), [False, False, False]
    )
    with_nan = np.array([[np.nan, 1.0], [np.nan, 2.0]])
    np.testing.assert_array_equal(
        ad.vmap(lambda x: np.array_equal(x, [np.nan, 1.0], equal_nan=True))(with_nan),
        [True, False],
    )
    with pytest.raises(TypeError, match="needs one answer per example"):
        ad.vmap(lambda x: ad.sum(x) if np.allclose(x, 1.0) else x[0])(batch)


def test_a_boolean_is_no_output_to_differentiate():
    """autograd's test_logic.py::test_nograd."""
    with pytest.raises(TypeError, match=r"boolean .* has no derivative"):
        ad.grad(lambda x: np.allclose(x, (x * 3.0) / 3.0))(X)


def _after_real_if_close(x, imaginary):
    """sum(x^2) where real_if_close drops the imaginary part of x * (1 + imaginary j),
    sum(x^3) where it keeps it: which one tells the decision apart by its derivative."""
    z = np.real_if_close(x * (1.0 + imaginary * 1j))
    return ad.sum(x**3) if np.iscomplexobj(z) else ad.sum(ad.real(z) * x)


@pytest.mark.parametrize(("imaginary", "kept"), [(1e-20, False), (1e-3, True)])
def test_real_if_close_drops_a_negligible_imaginary_part(imaginary, kept):
    plain = np.real_if_close(X * (1.0 + imaginary * 1j))
    assert np.iscomplexobj(plain) == kept
    value = np.real_if_close(ad.Tensor(X) * (1.0 + imaginary * 1j))
    np.testing.assert_array_equal(ad.ops.registry.raw(value), plain)
    f = lambda x: _after_real_if_close(x, imaginary)
    for engine, gradient in _gradients(f, X, BRANCHING).items():
        np.testing.assert_allclose(gradient, 3.0 * X**2 if kept else 2.0 * X, err_msg=engine)


def test_a_recording_guards_real_if_close_s_decision():
    # The imaginary part x * 1e-15 is negligible (below 100 eps) for |x| < 22, not above.
    compiled = ad.compile(lambda x: _after_real_if_close(x, 1e-15), np.array([1.0, 2.0]))
    x = np.array([1.0, 40.0])
    value, gradient = compiled.value_and_grad(x)
    assert compiled.recordings == 2 and value == pytest.approx(np.sum(x**3))
    np.testing.assert_allclose(gradient, 3.0 * x**2)


@pytest.mark.parametrize(
    "bounds", [{"a_min": -1.0, "a_max": 1.0}, {"min": -1.0, "max": 1.0}, {"a_max": 1.0}]
)
def test_clip_takes_numpy_s_keywords(bounds):
    x = np.array([-2.0, 0.5, 3.0])
    expected = np.clip(
        x, bounds.get("a_min", bounds.get("min")), bounds.get("a_max", bounds.get("max"))
    )
    inside = (x == expected).astype(float)
    for engine, gradient in _gradients(lambda z: ad.sum(np.clip(z, **bounds) * x), x).items():
        np.testing.assert_array_equal(gradient, inside * x, err_msg=engine)


def test_clip_refuses_one_bound_given_twice():
    with pytest.raises(TypeError, match="clip: lo and a_min name the same bound; give one"):
        ad.clip(np.ones(2), 0.0, a_min=0.5)
