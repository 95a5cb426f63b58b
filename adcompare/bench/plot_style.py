"""The look every benchmark figure shares: fonts, axis labels, log-log axes."""

from __future__ import annotations

import matplotlib

__all__ = ["AXIS_LABEL", "FONT", "rc", "style_log_axes"]

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
