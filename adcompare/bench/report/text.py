"""How the benchmark writes numbers for people: durations, ratios, slopes."""

from __future__ import annotations

__all__ = [
    "describe_slope",
    "format_range",
    "format_ratio",
    "format_slope",
    "format_time",
    "slope_words",
]


def format_time(seconds: float) -> str:
    """A duration with a unit people read: µs, ms or s.

    >>> format_time(2.5e-5), format_time(0.0123), format_time(3.0), format_time(0.0009996)
    ('25 µs', '12.3 ms', '3 s', '1 ms')
    """
    if float(f"{seconds:.3g}") >= 1.0:
        return f"{seconds:.3g} s"
    if float(f"{seconds:.3g}") >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def format_slope(slope: float) -> str:
    """A slope to two decimals, never "-0.00".

    >>> format_slope(-0.001), format_slope(1.234)
    ('0.00', '1.23')
    """
    text = f"{slope:.2f}"
    return "0.00" if text == "-0.00" else text


def slope_words(slope: float) -> str | None:
    """Words for a log-log slope near 0, 1 or 2, else ``None``.

    >>> slope_words(0.05), slope_words(1.04), slope_words(1.53)
    ('nearly flat', 'about linear', None)
    """
    for target, words in ((0, "nearly flat"), (1, "about linear"), (2, "about quadratic")):
        if abs(slope - target) <= 0.25:
            return words
    return None


def describe_slope(slope: float) -> str:
    """Words for a log-log slope, with the slope.

    >>> describe_slope(0.05), describe_slope(1.53)
    ('nearly flat (slope 0.05)', 'growing with slope 1.53')
    """
    words = slope_words(slope)
    if words:
        return f"{words} (slope {format_slope(slope)})"
    return f"growing with slope {format_slope(slope)}"


def format_ratio(ratio: float) -> str:
    """A cost ratio in plain digits.

    >>> format_ratio(2554.2), format_ratio(12.34), format_ratio(0.0291)
    ('2,550×', '12.3×', '0.0291×')
    """
    if ratio >= 1000:
        return f"{float(f'{ratio:.3g}'):,.0f}×"
    return f"{ratio:.3g}×"


def format_range(low: float, high: float, number=lambda v: f"{v:.3g}", unit: str = "") -> str:
    """``low–high`` with a unit; a range whose ends read the same is one value.

    >>> format_range(3.361, 3.364, unit="×"), format_range(2.9, 3.1, unit="×")
    ('3.36×', '2.9–3.1×')
    """
    low_text, high_text = number(low), number(high)
    if low_text == high_text:
        return f"{low_text}{unit}"
    return f"{low_text}–{high_text}{unit}"
