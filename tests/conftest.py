"""Shared test settings (deterministic hypothesis runs in CI) and fixtures."""

import os

import numpy as np
import pytest
import sympy
from hypothesis import settings

import adcompare as ad
from adcompare.ops import OPS, defop
from adcompare.ops.registry import HOLOMORPHIC

# tests/data holds users' functions that the CLI's tests load by path, one of them
# deliberately failing on import: they are data, not test modules or doctests.
collect_ignore_glob = ["data/*"]

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=50)
settings.register_profile("dev", deadline=None, max_examples=50)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# --- test-only ops with deliberately wrong rules: the checkers must catch them ----------


@pytest.fixture
def wrong_op():
    """An op whose value is ``sin`` but whose rules both say ``1.1·cos``.

    Forward and reverse mode agree with each other (the dot-product test
    passes), so only an independent oracle catches it. Removed from ``OPS``
    afterwards.
    """
    fn = defop(
        "wrong_sin",
        np.sin,
        elementwise=True,
        saves=("args",),
        domain=(-3.0, 3.0),
        sym=sympy.sin,
        complex=HOLOMORPHIC,
        jvp=lambda out, x, x_dot: 1.1 * ad.cos(x) * x_dot,
        vjp=lambda out, x, out_bar: out_bar * 1.1 * ad.cos(x),
        doc="Test only: sin with a wrong derivative in both modes.",
    )
    yield fn
    del OPS["wrong_sin"]


@pytest.fixture
def wrong_vjp_op():
    """An op whose JVP rule is right and whose VJP rule is wrong (``x·cos``)."""
    fn = defop(
        "wrong_vjp_sin",
        np.sin,
        elementwise=True,
        saves=("args",),
        domain=(-3.0, 3.0),
        sym=sympy.sin,
        complex=HOLOMORPHIC,
        jvp=lambda out, x, x_dot: ad.cos(x) * x_dot,
        vjp=lambda out, x, out_bar: out_bar * x * ad.cos(x),
        doc="Test only: sin with a wrong reverse-mode rule.",
    )
    yield fn
    del OPS["wrong_vjp_sin"]
