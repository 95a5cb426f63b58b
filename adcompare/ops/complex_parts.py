"""The parts of complex numbers: real, imag, conj, angle.

None of them is holomorphic; their rules follow JAX's and autograd's
convention (:data:`~adcompare.ops.registry.WIRTINGER`): a complex number is a
pair of reals, the JVP is the real-linear derivative, and the VJP of a
cotangent ``u`` is ``u ∂f/∂z + conj(u ∂f/∂z̄)``. For a real-valued ``f`` of
``z = a + ib`` the gradient is then ``∂f/∂a - i ∂f/∂b``, the conjugate of
PyTorch's, and holomorphic functions get ``f'(z)`` with no conjugation (as
every holomorphic op here already did). A real input's cotangent is the real
part of what reaches it.

>>> import adcompare as ad
>>> print(ad.grad(lambda z: ad.real(z * ad.conj(z)))(3.0 + 4.0j))  # |z|²: 2a - 2ib
(6-8j)
"""

from __future__ import annotations

import cmath

import numpy as np
import sympy

from adcompare.ops.links import Links, elementwise_links
from adcompare.ops.registry import WIRTINGER, defop, raw


def is_complex(x) -> bool:
    """Whether ``x`` holds complex numbers (a box, a batched value or an array)."""
    return np.result_type(raw(x)).kind == "c"


def refuse_complex(x, name: str) -> None:
    """Raise where numpy refuses complex ``x`` (it has no order, or no loop for it).

    >>> refuse_complex(np.array([1j]), "median")
    Traceback (most recent call last):
    TypeError: median: x must be real, as numpy requires; take abs(x) or real(x) first
    """
    if np.asarray(raw(x)).dtype.kind == "c":
        raise TypeError(f"{name}: x must be real, as numpy requires; take abs(x) or real(x) first")


real = defop(
    "real",
    np.real,
    replay=lambda x: x.real,
    complex=WIRTINGER,
    elementwise=True,
    saves=(),
    method="real",
    sym=sympy.re,
    # Re(u Re(dz)) = Re(u dz) for a real cotangent u: the cotangent passes unchanged.
    linear=lambda out, x, out_bar: real(out_bar),
    doc="The real part, elementwise (a real input is its own real part).",
    example="real(3.0 + 4.0j) -> 3.0",
)


def _complex_only_links(out, x) -> Links:
    """Each output on its input element for complex input; none for a real input (a constant)."""
    return elementwise_links(out, x) if is_complex(x) else Links((None,))


imag = defop(
    "imag",
    np.imag,
    replay=lambda x: x.imag,
    complex=WIRTINGER,
    elementwise=True,
    saves=("args",),
    method="imag",
    sym=sympy.im,
    # u Im(dz) = Re(-i u dz); a real input's imaginary part is the constant 0.
    linear=lambda out, x, out_bar: real(out_bar) * -1j if is_complex(x) else out_bar * 0.0,
    sparsity=lambda out, x, *, local: _complex_only_links(out, x),
    doc="The imaginary part, elementwise (0 for a real input).",
    example="imag(3.0 + 4.0j) -> 4.0",
)

conj = defop(
    "conj",
    np.conj,
    replay=lambda x: x.conjugate(),
    complex=WIRTINGER,
    elementwise=True,
    saves=(),
    method="conj",
    numpy=("conj", "conjugate"),
    sym=sympy.conjugate,
    linear=lambda out, x, out_bar: conj(out_bar),
    doc="The complex conjugate, elementwise (a real input is its own conjugate).",
    example="conj(3.0 + 4.0j) -> (3-4j)",
)


def _angle_slope(x):
    """``-i / z``: the VJP factor of ``arg z = Im log z`` (``d arg = Im(dz / z)``)."""
    return -1j / x if is_complex(x) else 0.0 * x


angle = defop(
    "angle",
    np.angle,
    replay=cmath.phase,
    complex=WIRTINGER,
    elementwise=True,
    saves=("args",),
    domain=(0.5, 2.0),
    sym=lambda x: sympy.atan2(sympy.im(x), sympy.re(x)),
    # The angle of a real number is a constant, 0 or pi.
    jvp=lambda out, x, x_dot: imag(x_dot / x) if is_complex(x) else 0.0 * x_dot,
    vjp=lambda out, x, out_bar: real(out_bar) * _angle_slope(x),
    sparsity=lambda out, x, *, local: _complex_only_links(out, x),
    doc="The argument ``atan2(Im z, Re z)`` of a complex number, elementwise (0 for "
    "positive reals); undefined at 0.",
    example="angle(1.0j) -> 1.5707963267948966",
)
