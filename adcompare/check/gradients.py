"""``check_grad``: each mode's derivative against a reference."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from adcompare import symbolic
from adcompare.check.case import _Case, _case
from adcompare.check.derivatives import NUMERIC_REFERENCES
from adcompare.check.reports import CheckReport, ModeCheck, _compare_blocks
from adcompare.check.tolerances import default_tolerance


def _reference_or_fallback(case: _Case, against: str | None) -> tuple[list, str, str]:
    """The reference, and a note when the default symbolic one had to give way.

    The default reference (``against=None``) is SymPy's; a function using an
    op with no SymPy counterpart is checked against the complex step instead,
    or finite differences when the op takes no complex input; one too large
    for exact differentiation against finite differences.
    """
    if against is not None:
        return case.reference(against), against, ""
    try:
        return case.reference("symbolic"), "symbolic", ""
    except symbolic.ExpressionTooLargeError as error:
        return case.reference("fd"), "fd", f"checked against fd instead of SymPy: {error}"
    except symbolic.NoSymbolicCounterpartError as missing:
        reason = str(missing).split(", so ")[0]
    for fallback in NUMERIC_REFERENCES[::-1]:
        try:
            reference = case.reference(fallback)
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
    case = _case(f, args, argnums, order, modes, rtol, atol, "check_grad")
    reference, against, note = _reference_or_fallback(case, against)
    base_rtol = default_tolerance(case.dtype, against, order) if case.rtol is None else case.rtol
    labels = case.labels()
    results = [
        _check_mode(case, mode, reference, labels, _mode_tolerance(case, mode, base_rtol))
        for mode in case.modes
    ]
    return CheckReport(
        function=case.function,
        arguments=case.arguments(),
        against=against,
        order=order,
        rtol=base_rtol,
        atol=0.0 if case.atol is None else case.atol,
        dtype=str(case.dtype),
        results=results,
        reference=reference,
        note=note,
    )


def _mode_tolerance(case: _Case, mode: str, base_rtol: float) -> float:
    """The rtol a mode is judged at: the caller's, or the default for the reference, but
    a numeric mode checked against SymPy is judged at its own accuracy."""
    if case.rtol is not None:
        return case.rtol
    return max(base_rtol, default_tolerance(case.dtype, mode, case.order))


def _check_mode(case: _Case, mode: str, reference: list, labels, rtol: float) -> ModeCheck:
    """One mode's derivative against the reference, timed; a mode that fails (raises) is a
    finding, reported in its row, not a crash."""
    start = time.perf_counter()
    try:
        blocks = case.derivative(mode)
    except Exception as error:
        return ModeCheck(mode, False, error=f"{type(error).__name__}: {error}")
    seconds = time.perf_counter() - start
    atol = 0.0 if case.atol is None else case.atol
    result = _compare_blocks(mode, blocks, reference, labels, rtol, atol)
    result.seconds = seconds
    return result
