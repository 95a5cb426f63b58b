"""Assertions for users' own test suites.

>>> import adcompare as ad
>>> from adcompare.testing import assert_grad_close
>>> report = assert_grad_close(lambda x: ad.sum(ad.sin(x) * x), [0.1, 0.2, 0.3])
>>> report.passed
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from adcompare.check.gradients import check_grad
from adcompare.check.reports import CheckReport
from adcompare.check.tolerances import checked_tolerance

__all__ = ["assert_grad_close"]


def assert_grad_close(
    f: Callable,
    *args,
    modes: Sequence[str] = ("forward", "reverse"),
    against: str | None = None,
    order: int = 1,
    argnums=None,
    rtol: float | None = None,
    atol: float | None = None,
) -> CheckReport:
    """Raise an AssertionError, with the report's table, unless every mode passes.

    The arguments are those of :func:`adcompare.check_grad`; the report is
    returned when the check passes.

    Asking float32 arithmetic for float64 precision fails, with the table:

    >>> import numpy as np
    >>> import adcompare as ad
    >>> x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    >>> assert_grad_close(lambda x: ad.sum(ad.exp(x) / 3), x, rtol=1e-12)
    Traceback (most recent call last):
    ...
    AssertionError: check_grad <lambda>(x: float32 3): FAILED (2 mode(s))
    first derivatives against symbolic; an entry passes if ...
    mode     max abs err  max rel err  worst entry  got ...  rtol   result
    ...
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    checked_tolerance(rtol, "assert_grad_close: rtol")
    checked_tolerance(atol, "assert_grad_close: atol")
    report = check_grad(
        f, *args, modes=modes, against=against, order=order, argnums=argnums, rtol=rtol, atol=atol
    )
    if not report.passed:
        raise AssertionError(str(report))
    return report
