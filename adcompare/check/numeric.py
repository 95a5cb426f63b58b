"""The numeric references: central finite differences and the complex step."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.check.arguments import (
    _argnums,
    _check_scalar,
    _flatten,
    _hessian_blocks,
    _pack,
    _split_columns,
    _unflatten,
    _value,
)
from adcompare.ops.registry import HOLOMORPHIC, OPS, ComplexNotSupportedError
from adcompare.runtime.cost import count

_EPS = np.finfo(np.float64).eps


def _fd_steps(z: np.ndarray, relative: float) -> np.ndarray:
    h = relative * np.maximum(1.0, np.abs(z))
    # A step that is exactly representable: (z + h) - z == h.
    return (z + h) - z


def finite_differences(
    f: Callable, argnums=0, order: int = 1, step: float | None = None
) -> Callable:
    """Derivatives by central differences, computed in float64.

    ``order=1`` gives the Jacobian (shaped ``out.shape + x.shape``, the
    gradient for a scalar ``f``) from ``2n`` evaluations, with step
    ``h = step * max(1, |x|)``, ``step`` defaulting to eps^(1/3) ≈ 6e-6.
    ``order=2`` gives the Hessian of a scalar ``f`` by the four-point
    formula, with ``step`` defaulting to eps^(1/4) ≈ 1.2e-4. Expect about
    ``1e-8`` relative accuracy for first and ``1e-5`` for second
    derivatives of well-scaled functions.

    >>> import adcompare as ad
    >>> print(finite_differences(lambda x: ad.sum(x**3))([1.0, 2.0]).round(6))
    [ 3. 12.]
    """
    if order not in (1, 2):
        raise ValueError(f"finite_differences: order must be 1 or 2, not {order!r}")

    def numeric_derivative(*args):
        positions = _argnums(argnums, args, "finite_differences")
        z = _flatten(args, positions)
        call = lambda z: _value(f, _unflatten(z, args, positions)).astype(np.float64)
        with np.errstate(all="ignore"):
            if order == 1:
                steps = _fd_steps(z, step or _EPS ** (1 / 3))
                columns = []
                for i, h in enumerate(steps):
                    e = np.zeros_like(z)
                    e[i] = h
                    columns.append((call(z + e) - call(z - e)) / (2 * h))
                # Exactly 2n evaluations: the output's shape comes from the columns.
                out_shape = np.shape(columns[0]) if columns else np.shape(call(z))
                matrix = np.stack(columns, axis=-1) if columns else np.zeros(out_shape + (0,))
                blocks = _split_columns(matrix, out_shape, args, positions)
            else:
                blocks = _hessian_blocks(_fd_hessian(call, z, step), args, positions)
        return _pack(blocks, argnums, order)

    return numeric_derivative


def _fd_hessian(call, z: np.ndarray, step: float | None) -> np.ndarray:
    _check_scalar(np.shape(call(z)), "a second-order finite difference")
    steps = _fd_steps(z, step or _EPS ** (1 / 4))
    n = z.size
    hess = np.zeros((n, n))
    f0 = call(z).reshape(())
    for i in range(n):
        for j in range(i, n):
            ei = np.zeros(n)
            ei[i] = steps[i]
            ej = np.zeros(n)
            ej[j] = steps[j]
            if i == j:
                value = (call(z + 2 * ei) - 2 * f0 + call(z - 2 * ei)) / (4 * steps[i] ** 2)
            else:
                value = (
                    call(z + ei + ej) - call(z + ei - ej) - call(z - ei + ej) + call(z - ei - ej)
                ) / (4 * steps[i] * steps[j])
            hess[i, j] = hess[j, i] = np.reshape(value, ())
    return hess


class NotComplexSafeError(ValueError):
    """The complex step cannot be used: the function is not complex-safe."""

    __module__ = "adcompare.check"  # tracebacks name the public path


def _complex_reason(op) -> str:
    if op.complex is None:
        return (
            f"{op.name} declares no complex support (defop(..., complex=HOLOMORPHIC) "
            "if it is analytic)"
        )
    return f"{op.name} {op.complex}"


def _complex_call(f, args, positions):
    def call(z):
        refuse = "check against='symbolic' or against='fd' instead"
        try:
            with count() as seen:
                out = f(*_unflatten(z, args, positions))
        except ComplexNotSupportedError as error:
            raise NotComplexSafeError(
                f"complex step: the function is not complex-safe ({error}); {refuse}"
            ) from None
        unsafe = sorted(
            {
                name
                for engine, name in seen.by_op
                if engine == "numpy" and name in OPS and OPS[name].complex != HOLOMORPHIC
            }
        )
        if unsafe:
            reasons = "; ".join(_complex_reason(OPS[name]) for name in unsafe)
            raise NotComplexSafeError(
                f"complex step: the function is not complex-safe ({reasons}); {refuse}"
            )
        out = np.asarray(out)
        if not np.iscomplexobj(out):
            raise NotComplexSafeError(
                "complex step: the function returned real values for a complex input, so the "
                f"perturbation was dropped; {refuse}"
            )
        return out

    return call


def complex_step(f: Callable, argnums=0, order: int = 1, step: float = 1e-20) -> Callable:
    """Derivatives by the complex step, for complex-safe (analytic) functions.

    ``order=1``: ``J[..., i] = Im f(x + i·h·e_i) / h`` has no subtraction,
    so it is exact to rounding. ``order=2`` takes central differences of
    that gradient (about ``1e-10`` relative accuracy). A function that uses
    ops which are not complex-safe (``abs``, ``maximum``, ``clip``, ``max``,
    ...) is refused with :class:`NotComplexSafeError`.

    >>> import adcompare as ad
    >>> print(complex_step(lambda x: ad.sum(ad.sin(x)))([0.0, 0.0]))
    [1. 1.]
    """
    if order not in (1, 2):
        raise ValueError(f"complex_step: order must be 1 or 2, not {order!r}")

    def gradient_matrix(call, z):
        columns = []
        for i in range(z.size):
            h = step * max(1.0, abs(z[i].real))
            e = np.zeros(z.size, dtype=complex)
            e[i] = 1j * h
            columns.append(call(z + e).imag / h)
        return columns

    def complex_derivative(*args):
        positions = _argnums(argnums, args, "complex_step")
        z = _flatten(args, positions).astype(complex)
        call = _complex_call(f, args, positions)
        with np.errstate(all="ignore"):
            out_shape = np.shape(call(z))
            if order == 1:
                columns = gradient_matrix(call, z)
                matrix = np.stack(columns, axis=-1) if columns else np.zeros(out_shape + (0,))
                return _pack(_split_columns(matrix, out_shape, args, positions), argnums, 1)
            _check_scalar(out_shape, "a second-order complex step")
            steps = _fd_steps(z.real, _EPS ** (1 / 3))
            hess = np.zeros((z.size, z.size))
            for j, h in enumerate(steps):
                e = np.zeros(z.size)
                e[j] = h
                plus = np.reshape(gradient_matrix(call, z + e), -1)
                minus = np.reshape(gradient_matrix(call, z - e), -1)
                hess[:, j] = (plus - minus) / (2 * h)
            hess = (hess + hess.T) / 2
            return _pack(_hessian_blocks(hess, args, positions), argnums, 2)

    return complex_derivative
