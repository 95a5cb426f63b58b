"""The look every benchmark figure shares: fonts, axis labels, log-log axes."""

from __future__ import annotations

import re

import matplotlib

__all__ = ["AXIS_LABEL", "FONT", "mathtext", "rc", "style_log_axes"]

# SVG keeps text as text: smaller files, drawn faster.
FONT = {"font.size": 11, "axes.titlesize": 12, "legend.fontsize": 9, "svg.fonttype": "none"}
AXIS_LABEL = {"n": "n, number of inputs", "m": "m, number of outputs"}


def rc():
    """A context in which figures get the shared fonts."""
    return matplotlib.rc_context(FONT)


def style_log_axes(ax, axis: str, ylabel: str, title: str) -> None:
    """Log-log axes (base 2 for the count), labelled, with a light grid."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(AXIS_LABEL[axis])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    # Unlabelled minor ticks on log axes cost most of the drawing time.
    ax.minorticks_off()


def mathtext(text: str) -> str:
    """Subscripts written as ``x_{i+1}`` or ``x_i`` set as matplotlib mathtext.

    >>> mathtext("Σ 100(x_{i+1} − x_i²)², A_ij")
    'Σ 100($x_{i+1}$ − $x_{i}$²)², $A_{ij}$'
    """
    text = re.sub(r"\b([A-Za-z])_\{([^}$]*)\}", r"$\1_{\2}$", text)
    return re.sub(r"\b([A-Za-z])_([A-Za-z0-9]+)", r"$\1_{\2}$", text)
