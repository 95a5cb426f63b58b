"""``check_grad``: each mode's derivative against a reference."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from adcompare import symbolic
from adcompare.check.arguments import _setup
from adcompare.check.derivatives import NUMERIC_REFERENCES, _reference, derivative_blocks
from adcompare.check.reports import CheckReport, ModeCheck, _compare_blocks, _describe, _labeller
from adcompare.check.tolerances import _checked_tolerances, default_tolerance
from adcompare.engines.forward import as_float
from adcompare.pytree import flat_call


def _reference_or_fallback(f, args, positions, against, order, shape):
    """The reference, and a note when the default symbolic one had to give way.

    The default reference (``against=None``) is SymPy's; a function using an
    op with no SymPy counterpart is checked against the complex step instead,
    or finite differences when the op takes no complex input; one too large
    for exact differentiation against finite differences.
    """
    if against is not None:
        return _reference(f, args, positions, against, order, shape), against, ""
    try:
        return _reference(f, args, positions, "symbolic", order, shape), "symbolic", ""
    except symbolic.ExpressionTooLargeError as error:
        reference = _reference(f, args, positions, "fd", order, shape)
        return reference, "fd", f"checked against fd instead of SymPy: {error}"
    except symbolic.NoSymbolicCounterpartError as missing:
        reason = str(missing).split(", so ")[0]
    for fallback in NUMERIC_REFERENCES[::-1]:
        try:
            reference = _reference(f, args, positions, fallback, order, shape)
        except (TypeError, ValueError):
            continue
        return reference, fallback, f"{reason}: checked against {fallback} instead"
    raise ValueError(f"{reason}, and no numeric reference could evaluate it")


def check_grad(
    f: Callable,
    *args,
    modes: Sequence[str] = ("forward", "reverse"),
    against: str | None = None,
    order: int = 1,
    argnums=None,
    rtol: float | None = None,
    atol: float | None = None,
) -> CheckReport:
    """Check derivatives of ``f`` at ``args`` by each of ``modes`` against a reference.

    ``against`` is ``"symbolic"`` (SymPy's exact derivative), ``"fd"``,
    ``"complex_step"`` or another mode; by default SymPy's, or, when ``f``
    uses an op with no SymPy counterpart, the complex step (finite
    differences if the op takes no complex input), and, where the expression
    is too large for exact differentiation
    (:class:`~adcompare.symbolic.ExpressionTooLargeError`), finite
    differences, with a note in the report saying so. ``order=1`` checks the
    gradient (the Jacobian for array outputs); ``order=2`` checks the
    Hessian, where ``"forward"`` means forward-over-forward and ``"reverse"``
    reverse-over-reverse, and ``"fwd-over-rev"`` and ``"rev-over-fwd"`` name
    the mixed compositions. ``argnums`` defaults to every real floating
    argument. ``rtol`` defaults by dtype and reference (see
    :func:`default_tolerance`); ``atol`` to 0.

    Returns a :class:`CheckReport`; for an assertion use
    :func:`adcompare.testing.assert_grad_close`.

    >>> import adcompare as ad
    >>> f = lambda x: ad.sum(ad.tanh(x) * x)
    >>> report = check_grad(f, [0.5, -1.0], modes=("forward", "reverse"), order=2)
    >>> [r.mode for r in report.results], report.passed
    (['forward', 'reverse'], True)
    """
    rtol, atol = _checked_tolerances(rtol, atol, "check_grad")
    f, args, argnums = flat_call(f, args, argnums)  # pytrees: one entry per leaf
    if isinstance(modes, str):
        modes = (modes,)
    args, positions, value, dtype, names = _setup(f, args, argnums, order, modes, "check_grad")
    reference, against, note = _reference_or_fallback(
        f, args, positions, against, order, value.shape
    )
    base_rtol = default_tolerance(dtype, against, order) if rtol is None else rtol
    atol = 0.0 if atol is None else float(atol)

    def mode_rtol(mode: str) -> float:
        # A numeric mode checked against SymPy is judged at its own accuracy.
        if rtol is not None:
            return rtol
        return max(base_rtol, default_tolerance(dtype, mode, order))

    labels = _labeller(names, positions, args, value.shape, order)
    results = []
    for mode in modes:
        start = time.perf_counter()
        try:
            blocks = derivative_blocks(f, args, positions, mode, order, value.shape)
        except Exception as error:  # a mode that fails is a finding, not a crash
            results.append(ModeCheck(mode, False, error=f"{type(error).__name__}: {error}"))
            continue
        seconds = time.perf_counter() - start
        result = _compare_blocks(mode, blocks, reference, labels, mode_rtol(mode), atol)
        result.seconds = seconds
        results.append(result)
    return CheckReport(
        function=getattr(f, "__name__", type(f).__name__),
        arguments=[f"{names[p]}: {_describe(as_float(args[p]))}" for p in positions],
        against=against,
        order=order,
        rtol=base_rtol,
        atol=atol,
        dtype=str(dtype),
        results=results,
        reference=reference,
        note=note,
    )
