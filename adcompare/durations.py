"""Durations written for people: the one formatter every table, report and progress line uses.

>>> format_duration(0.0123)
'12.3 ms'
"""

from __future__ import annotations

import math

__all__ = ["format_duration"]


def format_duration(seconds: float) -> str:
    """A duration with a unit people read: three significant digits in µs, ms or s
    below a minute; minutes and seconds, or hours and minutes, above.

    >>> [format_duration(s) for s in (2.5e-5, 0.0123, 3.0, 0.0009996, 42.3)]
    ['25 µs', '12.3 ms', '3 s', '1 ms', '42.3 s']
    >>> format_duration(0), format_duration(185), format_duration(3720)
    ('0 s', '3m05s', '1h02m')
    >>> format_duration(float("nan"))
    '–'
    """
    if not math.isfinite(seconds):
        return "–"
    if seconds == 0:
        return "0 s"
    rounded = float(f"{seconds:.3g}")
    if rounded >= 60.0:
        whole = round(seconds)
        if whole < 3600:
            return f"{whole // 60}m{whole % 60:02d}s"
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    if rounded >= 1.0:
        return f"{seconds:.3g} s"
    if rounded >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"
