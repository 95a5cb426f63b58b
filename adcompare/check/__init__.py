"""Gradient checking: numeric references, ``check_grad``, ``compare`` and test assertions.

References a derivative can be checked against:

``"symbolic"``
    SymPy's exact derivative (:mod:`adcompare.symbolic`), the default;
``"fd"``
    central finite differences with a step scaled to each input;
``"complex_step"``
    the complex step ``Im f(x + ih) / h``, exact to rounding for functions
    that are complex-safe (analytic, no ``abs``/``maximum``/comparisons);
any mode
    ``"forward"``, ``"reverse"``, or (with ``order=2``) a composition such as
    ``"fwd-over-rev"``.

The error measure is ADBench's: ρ = |a − b| / max(1, |a| + |b|), relative
for large entries and absolute for small ones. An entry passes when
``|a − b| <= atol + rtol * max(1, |a| + |b|)``. Default tolerances follow the
dtype of the differentiated inputs (float32 is judged at float32 precision)
and the reference (finite differences are less accurate than SymPy).

The package's modules: :mod:`~adcompare.check.numeric` (finite differences,
the complex step), :mod:`~adcompare.check.derivatives` (a derivative by mode
or reference name), :mod:`~adcompare.check.tolerances`,
:mod:`~adcompare.check.reports`, :mod:`~adcompare.check.gradients`
(``check_grad``), :mod:`~adcompare.check.comparison` (``compare``) and
:mod:`~adcompare.check.testing` (``assert_grad_close``, also at
``adcompare.testing``).

>>> import adcompare as ad
>>> report = ad.check_grad(lambda x, y: 3 * x**2 + x * y + 5 * y**2, 2.0, 3.0)
>>> report.passed
True
>>> print(report)  # doctest: +SKIP
"""

from __future__ import annotations

from adcompare.check.comparison import Comparison, ComparisonRow, compare
from adcompare.check.derivatives import NUMERIC_REFERENCES, SECOND_ORDER_MODES, derivative_blocks
from adcompare.check.gradients import check_grad
from adcompare.check.numeric import NotComplexSafeError, complex_step, finite_differences
from adcompare.check.reports import CheckReport, ModeCheck, format_table
from adcompare.check.testing import assert_grad_close
from adcompare.check.tolerances import checked_tolerance, default_tolerance, relative_error

__all__ = [
    "NUMERIC_REFERENCES",
    "SECOND_ORDER_MODES",
    "CheckReport",
    "Comparison",
    "ComparisonRow",
    "ModeCheck",
    "NotComplexSafeError",
    "assert_grad_close",
    "check_grad",
    "checked_tolerance",
    "compare",
    "complex_step",
    "default_tolerance",
    "derivative_blocks",
    "finite_differences",
    "format_table",
    "relative_error",
]
