"""Bounding SymPy's time: one call that overruns ``LIMITS.max_seconds`` is stopped.

Tracing, differentiating, compiling and printing each run inside
:func:`deadline`. On the main thread of a POSIX process it arms an interval
timer (``signal.setitimer``, ``SIGALRM``) for ``max_seconds``; when it
rings, SymPy is interrupted wherever it is, even inside a single ``diff``,
and :class:`~adcompare.symbolic.ExpressionTooLargeError` says which limit
stopped it and how to raise it. A SIGALRM handler and timer that were in
place are put back afterwards (the timer with the time it had left), and a
timer that would ring first is left alone to do so.

Signals cannot be used on other threads or where ``setitimer`` is missing
(Windows), nor when the SIGALRM handler in place was not installed from
Python (it could not be put back). There, a single SymPy call is not
interrupted: ``max_seconds`` is checked between derivative entries and
compilation steps, and the size limits (``max_expression_size``,
``max_derivative_size``, ``max_printed_size``) are what keeps each call
short.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections.abc import Iterator

from adcompare.symbolic.limits import (
    LIMITS,
    SymbolicTimeoutError,
    _too_large,
    size_limit,
)


class _OutOfTime(BaseException):
    """Raised by the timer inside SymPy. A BaseException, as KeyboardInterrupt is, so that
    SymPy's ``except Exception`` clauses let it through."""


class Clock:
    """The time spent on one piece of symbolic work, against ``LIMITS.max_seconds``."""

    def __init__(self, what: str):
        self.what = what
        self.start = time.perf_counter()
        self.limit = LIMITS.max_seconds

    @property
    def elapsed(self) -> float:
        """Seconds since the work started."""
        return time.perf_counter() - self.start

    def too_slow(self) -> SymbolicTimeoutError:
        """The error that stops the work."""
        message = _too_large(
            f"{self.what} took over {self.limit:g} s, the limit "
            "adcompare.symbolic.LIMITS.max_seconds; raise it with "
            "`with adcompare.symbolic.size_limit(max_seconds=...)`"
        )
        return SymbolicTimeoutError(str(message), self.limit, self.what)

    def check(self) -> None:
        """Refuse between steps once the work has taken longer than the limit."""
        if self.elapsed > self.limit:
            raise self.too_slow()


def _signals_usable() -> bool:
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) is not None
    )


class _Alarm:
    """This deadline's SIGALRM handler and timer, and what they replaced."""

    def __init__(self, clock: Clock, previous_delay: float, previous_interval: float):
        self.clock = clock
        self.previous_delay = previous_delay
        self.previous_interval = previous_interval
        self.previous_handler = signal.signal(signal.SIGALRM, self.ring)
        self.armed = True
        self.disarmed = False
        signal.setitimer(signal.ITIMER_REAL, clock.limit)

    def ring(self, signum, frame) -> None:
        if self.armed:
            raise _OutOfTime

    def disarm(self) -> None:
        """Stop the timer and put back what was there; safe to call again."""
        if self.disarmed:
            return
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous_handler)
        if self.previous_delay > 0:
            left = max(self.previous_delay - self.clock.elapsed, 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, self.previous_interval)
        self.disarmed = True


@contextlib.contextmanager
def deadline(what: str) -> Iterator[Clock]:
    """Run the ``with`` block's SymPy work within ``LIMITS.max_seconds``.

    ``what`` names the work in the error (``"differentiating"``). The block
    may also call the clock's ``check()`` between steps (that is the only
    bound where signals cannot be used; see the module documentation).

    >>> import sympy
    >>> from adcompare import symbolic
    >>> x = sympy.Symbol("x")
    >>> with deadline("differentiating"):
    ...     sympy.diff(sympy.sin(x) * x, x)
    x*cos(x) + sin(x)
    >>> with symbolic.size_limit(max_seconds=0.01), deadline("waiting"):
    ...     time.sleep(1)
    Traceback (most recent call last):
    ...
    adcompare.symbolic.SymbolicTimeoutError: ... (waiting took over 0.01 s, the limit ...
    """
    clock = Clock(what)
    if not (_signals_usable() and 0 < clock.limit < math.inf):
        yield clock
        return
    previous_delay, previous_interval = signal.getitimer(signal.ITIMER_REAL)
    if 0 < previous_delay <= clock.limit:
        yield clock  # a timer that rings first (an enclosing deadline's, or the caller's)
        return
    alarm = _Alarm(clock, previous_delay, previous_interval)
    try:
        try:
            yield clock
        finally:
            alarm.disarm()
    except _OutOfTime:
        alarm.disarm()  # again: the timer may have rung inside the first disarm
        raise clock.too_slow() from None


@contextlib.contextmanager
def time_budget(seconds: float, what: str) -> Iterator[Clock]:
    """All the symbolic work inside the block, together, within ``seconds`` (and within
    ``LIMITS.max_seconds``); past it, :class:`~adcompare.symbolic.SymbolicTimeoutError`.

    Each trace, derivative and compilation inside runs under its own
    :func:`deadline`; this one bounds their sum, since a deadline leaves an
    enclosing timer that rings first to ring.

    >>> from adcompare import symbolic
    >>> try:
    ...     with time_budget(0.05, "the symbolic reference"):
    ...         time.sleep(1)
    ... except symbolic.SymbolicTimeoutError as error:
    ...     print(error.what, error.seconds)
    the symbolic reference 0.05
    """
    with size_limit(max_seconds=min(seconds, LIMITS.max_seconds)), deadline(what) as clock:
        yield clock
