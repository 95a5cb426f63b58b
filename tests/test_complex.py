"""Complex input in JAX's convention, against SymPy's Wirtinger derivatives and differences.

For ``f`` of ``z = a + ib``: the JVP along a direction ``dz`` is the real-linear
derivative ``(∂f/∂z) dz + (∂f/∂z̄) conj(dz)``, checked by central differences
along the real (``dz = 1``) and the imaginary (``dz = i``) direction; the VJP
of a cotangent ``u`` is ``u ∂f/∂z + conj(u ∂f/∂z̄)``, where SymPy gives the
Wirtinger derivatives ``∂f/∂z = (f_a - i f_b) / 2`` and ``∂f/∂z̄ = (f_a + i f_b) / 2``
from the real partial derivatives of ``f``'s SymPy counterpart.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import adcompare as ad

A, B = sympy.symbols("a b", real=True)
Z = A + sympy.I * B

# name: (adcompare function, its SymPy form in z)
FUNCTIONS = {
    "real": (ad.real, sympy.re),
    "imag": (ad.imag, sympy.im),
    "conj": (ad.conj, sympy.conjugate),
    "angle": (ad.angle, lambda z: sympy.atan2(sympy.im(z), sympy.re(z))),
    "abs": (ad.abs, sympy.Abs),
    "abs squared": (lambda z: ad.abs(z) ** 2, lambda z: sympy.Abs(z) ** 2),
    "conj times sin": (
        lambda z: ad.conj(z) * ad.sin(z),
        lambda z: sympy.conjugate(z) * sympy.sin(z),
    ),
    "angle of exp": (lambda z: ad.angle(ad.exp(z)), lambda z: sympy.im(z)),
}
POINTS = [1.1 + 1.2j, -0.7 + 0.4j, 0.3 - 1.5j]


def wirtinger(sym, point):
    """SymPy's ``(∂f/∂z, ∂f/∂z̄)`` at ``point``."""
    f = sympy.expand_complex(sym(Z))
    at = {A: point.real, B: point.imag}
    f_a, f_b = (complex(sympy.diff(f, s).subs(at).evalf(30)) for s in (A, B))
    return (f_a - 1j * f_b) / 2, (f_a + 1j * f_b) / 2


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_along_the_real_and_the_imaginary_direction(name, point):
    f, sym = FUNCTIONS[name]
    d_z, d_zbar = wirtinger(sym, point)
    h = 1e-6
    for direction in (1.0, 1.0j):
        _, tangent = ad.jvp(f, (point,), (direction,))
        exact = d_z * direction + d_zbar * np.conj(direction)
        numeric = (f(point + h * direction) - f(point - h * direction)) / (2 * h)
        np.testing.assert_allclose(tangent, exact, rtol=1e-12, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(tangent, numeric, rtol=1e-7, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_vjp_is_u_times_df_dz_plus_conj_of_u_times_df_dzbar(name, point):
    f, sym = FUNCTIONS[name]
    d_z, d_zbar = wirtinger(sym, point)
    value, pullback = ad.vjp(f, point)
    u = 0.8 - 0.3j if np.iscomplexobj(value) else 0.8
    (cotangent,) = pullback(np.asarray(u))
    np.testing.assert_allclose(cotangent, u * d_z + np.conj(u * d_zbar), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("point", POINTS)
def test_the_gradient_of_a_real_function_is_df_da_minus_i_df_db(point):
    f = lambda z: ad.abs(z) + ad.real(z) * ad.imag(z)
    h = 1e-6
    f_a = (f(point + h) - f(point - h)) / (2 * h)
    f_b = (f(point + 1j * h) - f(point - 1j * h)) / (2 * h)
    np.testing.assert_allclose(ad.grad(f)(point), f_a - 1j * f_b, rtol=1e-8)


def test_the_modulus_has_a_real_tangent():
    # The example: abs(1.1+1.2j) got the complex tangent sign(z).
    _, tangent = ad.jvp(ad.abs, (1.1 + 1.2j,), (1.0,))
    assert not np.iscomplexobj(tangent)
    assert tangent == pytest.approx(1.1 / abs(1.1 + 1.2j), rel=1e-15)


def test_the_norm_of_a_complex_vector_is_real_and_has_conj_z_over_norm_as_gradient():
    z = np.array([1 + 1j, 2 - 1j])
    value = ad.norm(z)
    assert not np.iscomplexobj(value)
    assert value == pytest.approx(np.linalg.norm(z), rel=1e-15)
    np.testing.assert_allclose(ad.grad(ad.norm)(z), np.conj(z) / np.linalg.norm(z), rtol=1e-15)
    t = ad.Tensor(z)
    assert np.linalg.norm(t).item() == pytest.approx(np.sqrt(7.0), rel=1e-15)


def test_a_real_input_gets_a_real_cotangent():
    x = np.array([1.0, 2.0])
    g = ad.grad(lambda x: ad.sum(ad.abs(x * (1 + 2j))))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.sqrt(5.0), rtol=1e-15)
    _, pullback = ad.vjp(lambda x: x * (1 + 2j), 1.0)
    assert pullback(np.asarray(1.0 - 1.0j))[0] == pytest.approx(3.0, rel=1e-15)  # Re(u c)
    t = ad.Tensor(x, requires_grad=True)
    ad.sum(ad.imag(t * (1 + 2j))).backward()
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 2.0])


def test_a_complex_input_gets_a_complex_cotangent_even_where_it_is_real():
    # autograd's test_real_type: d Re(z) = 1 + 0j, in the input's (complex) space.
    g = ad.grad(lambda z: ad.sum(ad.real(z)))(np.array([1.0j, 2.0 - 1.0j]))
    assert g.dtype == np.complex128
    np.testing.assert_array_equal(g, [1.0, 1.0])
    # Differentiated again by forward mode: the vjp's output is complex, so is its tangent.
    z, u, dz, du = 0.3 + 0.2j, 0.7, 0.1 + 0.5j, 0.4
    vjp_real = lambda z, u: ad.vjp(ad.real, z)[1](u)[0]
    value, tangent = ad.jvp(vjp_real, (z, u), (dz, du))
    assert np.iscomplexobj(value) and np.iscomplexobj(tangent)
    assert (value, tangent) == (u, du)  # the vjp of Re is u itself, linear in u


def test_second_derivatives_of_the_modulus_match_the_real_hessian():
    # |a + ib| as a function of (a, b): its Hessian, through the complex path.
    a, b = 1.1, 1.2
    f = lambda v: ad.abs(v[0] + 1j * v[1])
    r = np.hypot(a, b)
    exact = np.array([[b * b, -a * b], [-a * b, a * a]]) / r**3
    for mode in ["fwd-over-rev", "rev-over-rev", "fwd-over-fwd", "rev-over-fwd"]:
        np.testing.assert_allclose(ad.hessian(f, mode=mode)(np.array([a, b])), exact, rtol=1e-13)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ad.maximum(np.array([1 + 1j]), 0.5),
        lambda: ad.sign(np.array([1 + 1j])),
        lambda: ad.round(np.array([1.5 + 1j])),
        lambda: ad.fmax(np.array([1 + 1j]), 0.5),
        lambda: ad.floor(np.array([1.5 + 1j])),
        lambda: ad.logaddexp(np.array([1 + 1j]), 0.5),
    ],
)
def test_complex_input_whose_rules_do_not_hold_raises(call):
    with pytest.raises(ad.ComplexNotSupportedError, match="takes no complex input"):
        call()


def test_forward_mode_refuses_a_complex_input_rather_than_drop_half_the_gradient():
    # Reverse mode gives ∂f/∂a − i ∂f/∂b = [2 − 4i, 1] here; real seeds would give [2, 1].
    f = lambda z: ad.abs(z[0]) ** 2 + ad.real(z[1])
    z = np.array([1 + 2j, 3 - 1j])
    np.testing.assert_allclose(ad.grad(f)(z), [2 - 4j, 1])
    for transform in (lambda: ad.grad(f, mode="forward")(z), lambda: ad.jacfwd(f)(z)):
        with pytest.raises(TypeError, match="forward mode differentiates real inputs only"):
            transform()


def test_jacrev_refuses_a_complex_output_rather_than_drop_its_imaginary_part():
    x = np.array([0.5, 1.5])
    with pytest.raises(TypeError, match="reverse mode needs real outputs"):
        ad.jacrev(lambda x: x * (1 + 2j))(x)
    np.testing.assert_allclose(ad.jacfwd(lambda x: x * (1 + 2j))(x), np.diag([1 + 2j] * 2))


def test_grad_refuses_a_complex_output_and_names_what_to_differentiate_instead():
    # f(x) = Σ x·c has no gradient: a real seed would give Re(c) = 1 and drop Im(c) = 2.
    c = 1 + 2j
    f = lambda x: ad.sum(x * c)
    x = np.array([0.5, 1.5])
    for mode in ("reverse", "forward"):
        with pytest.raises(TypeError, match=r"grad needs a real-valued output.*ad\.real"):
            ad.grad(f, mode=mode)(x)
        with pytest.raises(TypeError, match="complex128"):
            ad.value_and_grad(f, mode=mode)(x)
    with pytest.raises(TypeError, match="real-valued output"):
        ad.hessian(f)(x)
    # The alternatives the message names give the real and imaginary parts' gradients.
    np.testing.assert_array_equal(ad.grad(lambda x: ad.real(f(x)))(x), [1.0, 1.0])
    np.testing.assert_array_equal(ad.grad(lambda x: ad.imag(f(x)))(x), [2.0, 2.0])
    np.testing.assert_array_equal(ad.jacfwd(f)(x), [c, c])
    _, pullback = ad.vjp(f, x)
    np.testing.assert_array_equal(pullback(np.asarray(1.0 - 1.0j))[0], [3.0, 3.0])  # Re(u c)
