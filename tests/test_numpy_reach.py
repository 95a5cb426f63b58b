"""numpy's functions autograd's users write (issue 36): building arrays from lists of
boxes, ``r_``/``c_``, ``linspace``, ``gradient``, ``trapezoid``, ``polyval``, ``interp``,
``convolve``, the bin finders, the nan-functions, numpy 2's norms, ``einsum``'s
interleaved form, ``cross``'s axes, ``pinv`` at constant rank, ``std`` of one value,
``norm``'s value, and forward-only ops. Values against numpy, derivatives against
hand-derived formulas and central differences, and against JAX where it is installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare.check import finite_differences
from adcompare.ops import OPS, defop

RNG = np.random.default_rng(36)


def _differences(f, x):
    """Central differences of the scalar ``f`` at the array ``x``."""
    return finite_differences(f)(np.asarray(x, dtype=float))


def _check_both_modes(f, x, rtol=1e-6, atol=1e-8):
    expected = _differences(f, x)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(ad.grad(f, mode=mode)(x), expected, rtol=rtol, atol=atol)


# --- building arrays -----------------------------------------------------------------------


def test_array_of_a_list_of_boxes_stacks_them_in_both_modes():
    def f(x):
        a = ad.array([[x, x * 1.0, x + 2.5], [x**2, x, x / 2.0]])
        return ad.sum(a * np.arange(6.0).reshape(2, 3))

    # d/dx = 0 + 1 + 2 + 3 * 2x + 4 + 5 / 2 at x = 3
    for mode in ("reverse", "forward"):
        assert ad.grad(f, mode=mode)(3.0) == pytest.approx(9.5 + 18.0)
    matrix = RNG.standard_normal((3, 2))
    built = ad.array([[2.0 * matrix, matrix + 1.0], [matrix, matrix]])
    np.testing.assert_array_equal(built, np.array([[2 * matrix, matrix + 1], [matrix, matrix]]))
    _check_both_modes(lambda m: ad.sum(ad.sin(ad.asarray([m, 2.0 * m]))), matrix)


def test_numpy_array_of_boxes_is_refused_naming_adcompare_array():
    x = ad.Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"adcompare.array\(\[...\]\)"):
        np.array([x, x])
    # np.r_ reads np.ndim(x) (an answer without a derivative), then converts x to an
    # array, which a Tensor refuses as its numpy() does.
    with pytest.raises(RuntimeError, match=r"use adcompare.r_\[...\]"):
        np.r_[x, x]


def test_r_and_c_read_numpys_index_expressions_with_boxes():
    a, c = RNG.standard_normal(4), RNG.standard_normal((3, 2))
    np.testing.assert_array_equal(ad.r_[a, c[0], 1:4, 0.5], np.r_[a, c[0], 1:4, 0.5])
    np.testing.assert_array_equal(ad.r_["0,2", c, c], np.r_["0,2", c, c])
    np.testing.assert_array_equal(ad.c_[c, c[:, 0], c], np.c_[c, c[:, 0], c])
    weights = RNG.standard_normal(12)
    _check_both_modes(lambda x: ad.sum(ad.r_[x, np.ones(3), 1:6, x**2] * weights), a[:2])
    with pytest.raises(ValueError, match=r"np\.matrix"):
        ad.r_["r", ad.Tensor(a, requires_grad=True)]


def test_linspace_is_differentiable_in_its_endpoints():
    # start + k (stop - start) / 4: d/dstart = 1 - k/4, d/dstop = k/4
    k = np.arange(5.0)
    jacobian = ad.jacfwd(lambda ends: ad.linspace(ends[0], ends[1], 5))(np.array([1.0, 3.0]))
    np.testing.assert_allclose(jacobian, np.stack([1 - k / 4, k / 4], axis=1), rtol=1e-15)
    np.testing.assert_allclose(
        ad.jacrev(lambda e: ad.linspace(e[0], e[1], 5))([1.0, 3.0]), jacobian
    )
    starts, stops = RNG.standard_normal(2), RNG.standard_normal(2)
    for kwargs in ({"num": 4, "axis": 1}, {"num": 3, "endpoint": False}, {"num": 1}):
        np.testing.assert_allclose(
            ad.linspace(starts, stops, **kwargs), np.linspace(starts, stops, **kwargs), rtol=1e-15
        )
    samples, step = ad.linspace(0.0, 2.0, 5, retstep=True)
    assert step == 0.5 and samples[-1] == 2.0


# --- discrete calculus -----------------------------------------------------------------------


def test_gradient_and_trapezoid_are_numpys_and_linear_in_the_samples():
    f, coordinates = RNG.standard_normal((4, 6)), np.cumsum(RNG.uniform(0.5, 1.5, 6))
    for spacing, kwargs in (((), {}), ((0.3,), {"edge_order": 2}), ((0.2, coordinates), {})):
        got, expected = ad.gradient(f, *spacing, **kwargs), np.gradient(f, *spacing, **kwargs)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-13)
    for kwargs in ({"axis": 1, "edge_order": 2}, {"axis": 1}):
        np.testing.assert_allclose(
            ad.gradient(f, coordinates, **kwargs), np.gradient(f, coordinates, **kwargs), rtol=1e-12
        )
    # linear in f: the Jacobian of gradient along one axis is gradient of the identity's rows
    jacobian = ad.jacfwd(lambda y: ad.gradient(y, coordinates, edge_order=2))(f[0])
    np.testing.assert_allclose(jacobian, np.gradient(np.eye(6), coordinates, axis=0, edge_order=2))
    np.testing.assert_allclose(ad.trapezoid(f, coordinates), np.trapezoid(f, coordinates))
    # d/dx_i of the trapezoid rule: (y_{i-1} - y_{i+1}) / 2 inside, -(y0 + y1)/2 ... at the ends
    y = f[0]
    expected = np.r_[-(y[0] + y[1]) / 2, (y[:-2] - y[2:]) / 2, (y[-2] + y[-1]) / 2]
    _check_both_modes(lambda x: ad.trapezoid(y, x), coordinates)
    np.testing.assert_allclose(ad.grad(lambda x: ad.trapezoid(y, x))(coordinates), expected)


def test_polyval_differentiates_in_coefficients_and_point():
    p, x = RNG.standard_normal(4), RNG.standard_normal((2, 3))
    np.testing.assert_allclose(ad.polyval(p, x), np.polyval(p, x), rtol=1e-14)
    # d/dx = polyval(polyder(p), x); d/dp_k = x^(3 - k)
    grad_x = ad.grad(lambda x: ad.sum(ad.polyval(p, x)))(x)
    np.testing.assert_allclose(grad_x, np.polyval(np.polyder(p), x), rtol=1e-13)
    grad_p = ad.grad(lambda p: ad.sum(ad.polyval(p, x)), mode="forward")(p)
    np.testing.assert_allclose(grad_p, [np.sum(x**k) for k in (3, 2, 1, 0)], rtol=1e-13)
    boxed = ad.grad(lambda a: ad.polyval([a, 2.0 * a, 1.0], 3.0))(1.0)
    assert boxed == pytest.approx(9.0 + 6.0)


def test_interp_is_numpys_with_segment_slopes_as_derivatives():
    xp, fp = np.array([0.0, 1.0, 3.0, 4.0]), np.array([1.0, -1.0, 2.0, 0.0])
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.5, 4.0, 5.0])
    np.testing.assert_array_equal(ad.interp(x, xp, fp), np.interp(x, xp, fp))
    np.testing.assert_array_equal(ad.interp(x, xp, fp, -5.0, 7.0), np.interp(x, xp, fp, -5.0, 7.0))
    # the slope of each point's segment (the right one at a knot), 0 outside
    slopes = ad.grad(lambda x: ad.sum(ad.interp(x, xp, fp)))(x)
    np.testing.assert_array_equal(slopes, [0.0, -2.0, -2.0, 1.5, 1.5, -2.0, 0.0, 0.0])
    inside = np.array([0.3, 1.7, 2.2, 3.9])
    _check_both_modes(lambda f: ad.sum(ad.interp(inside, xp, f) ** 2), fp)
    _check_both_modes(lambda p: ad.sum(ad.interp(inside, p, fp) ** 2), xp)
    with pytest.raises(ValueError, match="period"):
        ad.interp(x, xp, fp, period=2.0)


def test_convolve_is_bilinear_and_numpys_in_every_mode():
    a, v = RNG.standard_normal(6), RNG.standard_normal(3)
    for mode in ("full", "same", "valid"):
        for first, second in ((a, v), (v, a)):
            np.testing.assert_allclose(
                ad.convolve(first, second, mode), np.convolve(first, second, mode), rtol=1e-13
            )
    # d/da of Σ w·(a * v) is the correlation of w with v
    w = RNG.standard_normal(8)
    grad_a = ad.grad(lambda a: ad.sum(ad.convolve(a, v) * w))(a)
    np.testing.assert_allclose(grad_a, np.correlate(w, v, "valid"), rtol=1e-13)
    _check_both_modes(lambda v: ad.sum(ad.convolve(a, v, "same") ** 2), v)


def test_convolve_over_axes_is_scipy_signals_with_autograds_dot_axes():
    scipy_signal = pytest.importorskip("scipy.signal")
    a35, a34, a342 = (
        RNG.standard_normal((3, 5)),
        RNG.standard_normal((3, 4)),
        RNG.standard_normal((3, 4, 2)),
    )
    a2543, a24232 = RNG.standard_normal((2, 5, 4, 3)), RNG.standard_normal((2, 4, 2, 3, 2))
    convolve = scipy_signal.convolve
    for mode in ("valid", "full", "same"):
        np.testing.assert_allclose(ad.convolve(a35, a34, mode), convolve(a35, a34, mode))
        np.testing.assert_allclose(ad.convolve(a34, a35, mode), convolve(a34, a35, mode))
        np.testing.assert_allclose(
            ad.convolve(a35, a34, axes=([1], [0]), mode=mode)[1, 2],
            convolve(a35[1, :], a34[:, 2], mode),
        )
        np.testing.assert_allclose(
            ad.convolve(a35, a34, axes=([], []), dot_axes=([0], [0]), mode=mode),
            np.tensordot(a35, a34, axes=([0], [0])),
        )
        np.testing.assert_allclose(
            ad.convolve(a2543, a24232, axes=([1, 2], [2, 4]), dot_axes=([0, 3], [0, 3]), mode=mode)[
                2
            ],
            sum(
                convolve(a2543[i, :, :, j], a24232[i, 2, :, j, :], mode)
                for i in range(2)
                for j in range(3)
            ),
        )
    # 'same' keeps a's length, centred: its derivative in both arrays, both modes
    _check_both_modes(lambda b: ad.sum(ad.convolve(a35, b, "same") ** 2), a34)
    _check_both_modes(lambda a: ad.sum(ad.convolve(a, a34, "same") ** 2), a35)
    weights = RNG.standard_normal((4, 6))  # b's other axis, then 5 + 2 - 1 positions
    _check_both_modes(
        lambda b: ad.sum(ad.convolve(a35, b, axes=([1], [2]), dot_axes=([0], [0])) * weights), a342
    )
    with pytest.raises(RuntimeError, match=r"call adcompare\.convolve instead"):
        convolve(ad.Tensor(a35, requires_grad=True), a34)


def test_vstack_and_hstack_join_arrays_of_different_lengths_as_numpy_does():
    a, b, c = RNG.standard_normal((2, 3)), RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    np.testing.assert_array_equal(np.vstack([ad.Tensor(a), b, c]).numpy(), np.vstack([a, b, c]))
    np.testing.assert_array_equal(ad.hstack([a.T, b.T]), np.hstack([a.T, b.T]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy 2 deprecates row_stack
        joined = np.row_stack([ad.Tensor(a, requires_grad=True), b])
    np.testing.assert_array_equal(joined.detach().numpy(), np.vstack([a, b]))
    _check_both_modes(lambda x: ad.sum(ad.vstack([x, b, c]) ** 2), a)


def test_searchsorted_and_digitize_are_piecewise_constant():
    a, v = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.5, 2.5, -1.0])
    t = ad.Tensor(v, requires_grad=True)
    positions = np.searchsorted(a, t)
    assert type(positions) is np.ndarray and positions.dtype.kind == "i"
    np.testing.assert_array_equal(positions, np.searchsorted(a, v))
    np.testing.assert_array_equal(np.digitize(t, a, right=True), np.digitize(v, a, right=True))
    # zero derivative: only the other term counts
    f = lambda x: ad.sum(x * 2.0 + ad.searchsorted(a, x) + ad.digitize(x, a))
    for mode in ("reverse", "forward"):
        np.testing.assert_array_equal(ad.grad(f, mode=mode)(v), [2.0, 2.0, 2.0])


# --- the nan-functions ----------------------------------------------------------------------


NAN_FUNCTIONS = ["nansum", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"]


@pytest.mark.parametrize("name", NAN_FUNCTIONS)
def test_nan_functions_skip_nan_with_zero_derivative_there(name):
    x = RNG.standard_normal((3, 4))
    x[0, 1] = x[2, 3] = np.nan
    for kwargs in ({}, {"axis": 1, "keepdims": True}, {"axis": 0}):
        np.testing.assert_allclose(
            getattr(ad, name)(x, **kwargs), getattr(np, name)(x, **kwargs), rtol=1e-14
        )
    missing = np.isnan(x)
    numbers = x[~missing]

    def on_numbers(values):  # the function of the entries that are numbers
        full = np.full(x.shape, np.nan)
        full[~missing] = values
        return getattr(np, name)(full)

    for mode in ("reverse", "forward"):
        got = ad.grad(lambda y: getattr(ad, name)(y), mode=mode)(x)
        assert np.all(got[missing] == 0.0)
        np.testing.assert_allclose(got[~missing], _differences(on_numbers, numbers), atol=1e-8)


def test_nanmax_of_a_slice_of_nan_is_nan():
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(ad.nanmax(x, axis=1), np.nanmax(x, axis=1))


# --- norms -----------------------------------------------------------------------------------


def test_norms_match_numpy_2_and_their_derivatives_differences():
    x = RNG.standard_normal((3, 4, 5))
    for kwargs in ({}, {"axis": (0, 2), "ord": 3}, {"axis": 1, "keepdims": True, "ord": np.inf}):
        np.testing.assert_allclose(
            ad.vector_norm(x, **kwargs), np.linalg.vector_norm(x, **kwargs), rtol=1e-14
        )
    for kwargs in ({}, {"ord": "nuc"}, {"ord": 1, "keepdims": True}):
        np.testing.assert_allclose(
            ad.matrix_norm(x, **kwargs), np.linalg.matrix_norm(x, **kwargs), rtol=1e-13
        )
    vector, matrix = x[0, 0], x[0]
    for order in (3, 4):  # autograd's test_vector_norm_ord
        _check_both_modes(lambda v: np.linalg.norm(v, ord=order), vector)
    # d‖X‖_* = U Vᵀ (the nuclear norm, distinct singular values)
    u, _, vt = np.linalg.svd(matrix, full_matrices=False)
    np.testing.assert_allclose(ad.grad(lambda m: np.linalg.norm(m, "nuc"))(matrix), u @ vt)
    _check_both_modes(lambda m: np.linalg.matrix_norm(m, ord="nuc"), matrix)


def test_euclidean_and_frobenius_norms_are_numpys_to_the_last_bit():
    # numpy sums the squares of a whole array as a dot product; a pairwise sum of x * x
    # differed in the last bit for about a third of these matrices.
    for _ in range(50):
        x = RNG.standard_normal((6, 5))
        expected = np.linalg.norm(x, "fro")
        assert float(ad.norm(x, "fro")) == expected == float(ad.norm(x))
        value, _ = ad.jvp(lambda m: np.linalg.norm(m, "fro"), (x,), (x,))
        assert float(value) == expected
        assert float(np.linalg.norm(ad.Tensor(x, requires_grad=True), "fro").detach()) == expected
    z = RNG.standard_normal(7) + 1j * RNG.standard_normal(7)
    assert float(ad.norm(z)) == np.linalg.norm(z)
    assert np.all(np.isnan(ad.norm(np.array([[1.0, np.nan]]), axis=(0, 1))))


def test_std_of_a_single_value_has_derivative_zero_in_both_modes():
    for x in (np.array(1.3), np.array([[0.5], [2.0]])):
        axis = None if x.ndim == 0 else 1
        assert np.all(ad.std(x, axis=axis) == 0.0)
        for mode in ("reverse", "forward"):
            got = ad.grad(lambda y: ad.sum(np.std(y, axis=axis)), mode=mode)(x)
            np.testing.assert_array_equal(got, np.zeros_like(x))
    _, tangent = ad.jvp(np.std, (np.array(1.3),), (np.array(1.0),))
    assert tangent == 0.0


# --- einsum, cross, pinv -------------------------------------------------------------------


def test_einsum_takes_numpys_interleaved_operands_and_axes():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    np.testing.assert_allclose(ad.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b, rtol=1e-14)
    np.testing.assert_allclose(ad.einsum(a, [0, 1], b, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    np.testing.assert_allclose(ad.einsum(a, [30, 1], a, [30, 1], [1]), np.sum(a * a, axis=0))
    np.testing.assert_allclose(ad.einsum(a, [Ellipsis, 1], [Ellipsis]), a.sum(axis=1))
    # d/da Σ (a b) w = w bᵀ
    w = RNG.standard_normal((2, 4))
    got = ad.grad(lambda a: ad.sum(np.einsum(a, [0, 1], b, [1, 2], [0, 2]) * w))(a)
    np.testing.assert_allclose(got, w @ b.T, rtol=1e-14)


def test_cross_with_axisa_axisb_axisc_and_two_vectors():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 3))
    kwargs = {"axisa": 0, "axisb": 1, "axisc": 0}
    np.testing.assert_allclose(ad.cross(a, b, **kwargs), np.cross(a, b, **kwargs), rtol=1e-14)
    w = RNG.standard_normal((3, 4))
    _check_both_modes(lambda a: ad.sum(np.cross(a, b, **kwargs) * w), a)
    two, three = RNG.standard_normal((5, 2)), RNG.standard_normal((5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy deprecates 2-vectors
        np.testing.assert_allclose(ad.cross(two, two[::-1]), np.cross(two, two[::-1]))
        np.testing.assert_allclose(ad.cross(two, three), np.cross(two, three))


def test_pinv_of_a_rank_deficient_matrix_differentiates_along_its_constant_rank():
    left, right = RNG.standard_normal((4, 2)), RNG.standard_normal((3, 2))
    direction, weights = RNG.standard_normal((4, 2)), RNG.standard_normal((3, 4))

    def along(t):  # rank 2 at every t: the pseudo-inverse is smooth along the path
        return ad.sum(ad.pinv(ad.matmul(left + t * direction, right.T)) * weights)

    x = left @ right.T
    np.testing.assert_allclose(ad.pinv(x), np.linalg.pinv(x), rtol=1e-12)
    expected = (along(1e-6) - along(-1e-6)) / 2e-6
    for mode in ("reverse", "forward"):
        assert ad.grad(along, mode=mode)(0.0) == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="another rank"):
        ad.pinv(np.diag([1.0, 1e-3]), rcond=1e-2)


def _eig_loss(weights, xp):
    """Re Σ w·(eigenvalues; eigenvectors) with numpy's ``eig`` (``xp=np``) or adcompare's."""

    def loss(x):
        values, vectors = xp.linalg.eig(x) if xp is np else ad.eig(x)
        stacked = xp.concatenate([values[..., None, :], vectors], axis=-2)
        return xp.real(xp.sum(stacked * weights))

    return loss


def test_eig_of_a_general_matrix_with_complex_eigenvalues_in_both_modes():
    x = np.array([[0.3, -1.2, 0.2], [1.0, 0.1, 0.4], [0.1, 0.2, 2.0]])
    values, vectors = np.linalg.eig(x)
    assert np.iscomplexobj(values) and abs(values[0].imag) > 1.0  # a complex pair
    got = ad.eig(x)
    np.testing.assert_allclose(got.eigenvalues, values, rtol=1e-14)
    np.testing.assert_allclose(got.eigenvectors, vectors, rtol=1e-13, atol=1e-15)
    weights = RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3))
    # the derivative keeps numpy's normalisation: unit norm, largest component real
    _check_both_modes(_eig_loss(weights, ad), x)
    np.testing.assert_allclose(
        ad.grad(_eig_loss(weights, ad))(x), _differences(_eig_loss(weights, np), x), atol=1e-8
    )
    # dλ_i = wᵢᴴ dA vᵢ / wᵢᴴ vᵢ with left eigenvectors w (the rows of V⁻¹)
    left = np.linalg.inv(vectors)
    grad_first = ad.grad(lambda a: ad.real(ad.eigvals(a)[2]))(x)
    np.testing.assert_allclose(grad_first, np.real(np.outer(left[2], vectors[:, 2])), rtol=1e-12)


def test_eig_of_a_complex_matrix_follows_the_complex_convention():
    z = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
    weights = RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3))
    gradient = ad.grad(_eig_loss(weights, ad))(z)
    # the gradient of a real f(a + ib) is ∂f/∂a − i ∂f/∂b
    real_part = _differences(lambda a: _eig_loss(weights, np)(a + 1j * z.imag), z.real)
    imag_part = _differences(lambda b: _eig_loss(weights, np)(z.real + 1j * b), z.imag)
    np.testing.assert_allclose(gradient, real_part - 1j * imag_part, atol=1e-7)


# --- forward-only ops --------------------------------------------------------------------


@pytest.fixture
def jvp_only_op():
    """A test-only op with a JVP rule and no VJP rule (``sin``), removed afterwards."""
    fn = defop(
        "jvp_only_sin",
        np.sin,
        elementwise=True,
        numpy=(),
        sym=sympy.sin,
        jvp=lambda out, x, x_dot: ad.cos(x) * x_dot,
        vjp=(None,),
        doc="Test only: sin with a forward-mode rule only.",
    )
    yield fn
    del OPS["jvp_only_sin"]


def test_forward_replay_of_an_op_with_only_a_jvp_rule(jvp_only_op):
    f = lambda x: jvp_only_op(x) * x[::-1]
    x = np.linspace(0.1, 1.0, 4)
    compiled = ad.compile(f, x, mode="forward")
    point = 2.0 * x
    # d/dx_j of sin(x_i) x_{n-1-i}: cos(x_i) x_{n-1-i} on the diagonal, sin(x_i) anti-diagonal
    expected = np.diag(np.cos(point) * point[::-1]) + np.diag(np.sin(point))[:, ::-1]
    np.testing.assert_allclose(compiled.jacobian(point), expected, rtol=1e-14)
    np.testing.assert_allclose(ad.jacfwd(f)(point), expected, rtol=1e-14)
    with pytest.raises(TypeError, match="no VJP rule for argument 0: differentiate it in forward"):
        ad.grad(lambda x: ad.sum(f(x)))(x)
    with pytest.raises(TypeError, match="no VJP rule"):
        ad.compile(lambda x: ad.sum(f(x)), x)


# --- against JAX ----------------------------------------------------------------------------


def test_the_new_functions_agree_with_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x, xp, fp = RNG.uniform(0.1, 0.9, 5), np.array([0.0, 0.3, 0.6, 1.0]), RNG.standard_normal(4)
    matrix, p = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    pairs = [
        (
            lambda x: ad.sum(ad.interp(x, xp, fp) ** 2),
            lambda x: jnp.sum(jnp.interp(x, xp, fp) ** 2),
            x,
        ),
        (lambda v: ad.sum(ad.convolve(x, v) ** 2), lambda v: jnp.sum(jnp.convolve(x, v) ** 2), p),
        (lambda p: ad.polyval(p, 0.7), lambda p: jnp.polyval(p, 0.7), p),
        (
            lambda m: ad.sum(ad.gradient(m, axis=0) ** 2),
            lambda m: jnp.sum(jnp.gradient(m, axis=0) ** 2),
            matrix,
        ),
        (
            lambda m: ad.sum(ad.trapezoid(ad.sin(m))),
            lambda m: jnp.sum(jnp.trapezoid(jnp.sin(m))),
            matrix,
        ),
        (lambda m: ad.norm(m, "nuc"), lambda m: jnp.linalg.norm(m, "nuc"), matrix),
        (lambda v: ad.norm(v, 3), lambda v: jnp.linalg.norm(v, 3), x),
        (
            lambda e: ad.sum(ad.linspace(e[0], e[1], 4) ** 2),
            lambda e: jnp.sum(jnp.linspace(e[0], e[1], 4) ** 2),
            p[:2],
        ),
    ]
    for ours, theirs, point in pairs:
        np.testing.assert_allclose(ad.grad(ours)(point), jax.grad(theirs)(point), rtol=1e-10)
