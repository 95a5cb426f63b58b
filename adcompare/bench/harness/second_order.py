"""Second-order cells: one Hessian-vector product, or a full Hessian, per composition.

A scalar-valued f has a Hessian H; the four compositions of the two
engines (outer mode first, :data:`adcompare.transforms.HESSIAN_MODES`)
compute ``H·v`` for a constant multiple of one gradient's cost, except
forward-over-forward, whose inner forward gradient needs n lanes. A full
Hessian is n HVPs. The harness measures both as modes named
``hvp:COMPOSITION`` and ``hessian:COMPOSITION``; each cell is checked
against an HVP by another composition.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import adcompare as ad
from adcompare.bench.problems import Instance
from adcompare.transforms import HESSIAN_MODES

__all__ = [
    "HESSIAN_MAX_N",
    "KINDS",
    "check_second_order",
    "composition_of",
    "direction",
    "reference_composition",
    "second_order_mode_names",
    "unavailable_reason",
]

#: What a second-order mode computes, by the prefix of its name.
KINDS = {"hvp": "HVP", "hessian": "Hessian"}

#: A full Hessian is n HVPs and n² numbers: measured only up to this n.
HESSIAN_MAX_N = 256


def second_order_mode_names(kind: str) -> tuple[str, ...]:
    """The mode names of one kind (``"hvp"`` or ``"hessian"``), one per composition.

    >>> second_order_mode_names("hvp")[:2]
    ('hvp:fwd-over-rev', 'hvp:rev-over-rev')
    """
    if kind not in KINDS:
        raise ValueError(f"unknown second-order kind {kind!r}; use one of {', '.join(KINDS)}")
    return tuple(f"{kind}:{composition}" for composition in HESSIAN_MODES)


def composition_of(mode_name: str) -> str:
    """The composition in a second-order mode's name.

    >>> composition_of("hessian:rev-over-fwd")
    'rev-over-fwd'
    """
    return mode_name.split(":", 1)[1]


def reference_composition(composition: str) -> str:
    """The composition a cell is checked against: another one, never itself.

    >>> reference_composition("fwd-over-rev"), reference_composition("rev-over-fwd")
    ('rev-over-rev', 'fwd-over-rev')
    """
    return "rev-over-rev" if composition == "fwd-over-rev" else "fwd-over-rev"


def direction(instance: Instance) -> np.ndarray:
    """The fixed direction v of every HVP at this instance (seeded by n).

    >>> from adcompare.bench.problems import get_problem
    >>> direction(get_problem("rosenbrock").build(n=4)).shape
    (4,)
    """
    return np.random.default_rng([7, instance.n]).standard_normal(instance.n)


def unavailable_reason(kind: str, instance: Instance) -> str | None:
    """Why a second-order mode of ``kind`` cannot run on ``instance``, or ``None``.

    >>> from adcompare.bench.problems import get_problem
    >>> unavailable_reason("hvp", get_problem("fourier").build(m=4))
    'HVPs and Hessians are of scalar-valued functions (m = 1); this problem has m > 1 outputs'
    """
    if instance.m > 1:
        return (
            "HVPs and Hessians are of scalar-valued functions (m = 1); this problem has m > 1 "
            "outputs"
        )
    if instance.family != "many-inputs":
        return "second-order modes are swept over n on the many-inputs problems only"
    if kind == "hessian" and instance.n > HESSIAN_MAX_N:
        return f"a full Hessian is n HVPs and n² numbers: measured only while n ≤ {HESSIAN_MAX_N}"
    return None


def prepare_hvp(composition: str) -> Callable[[Instance], Callable[[], np.ndarray]]:
    """The preparer of one HVP by ``composition`` (the zero-argument work)."""

    def prepare(instance: Instance):
        f, x, v = instance.on(ad), instance.x, direction(instance)
        return lambda: ad.hvp(f, x, v, composition)

    return prepare


def prepare_hessian(composition: str) -> Callable[[Instance], Callable[[], np.ndarray]]:
    """The preparer of a full Hessian by ``composition``."""

    def prepare(instance: Instance):
        hessian, x = ad.hessian(instance.on(ad), mode=composition), instance.x
        return lambda: hessian(x)

    return prepare


def check_second_order(instance: Instance, mode_name: str, result, tolerance: float) -> dict:
    """Compare an HVP (or a Hessian times v) with one HVP by another composition.

    >>> from adcompare.bench.problems import get_problem
    >>> inst = get_problem("rosenbrock").build(n=4)
    >>> hvp = prepare_hvp("fwd-over-fwd")(inst)()
    >>> check_second_order(inst, "hvp:fwd-over-fwd", hvp, 1e-8)["ok"]
    True
    """
    composition, v = composition_of(mode_name), direction(instance)
    against = reference_composition(composition)
    got = np.asarray(result, dtype=np.float64)
    if mode_name.startswith("hessian:"):
        got = got.reshape(instance.n, instance.n) @ v
    expected = np.asarray(ad.hvp(instance.on(ad), instance.x, v, against), dtype=np.float64)
    error = float(np.max(np.abs(got - expected)) / max(1.0, float(np.max(np.abs(expected)))))
    return {
        "against": f"one HVP by {against}",
        "error": error,
        "tolerance": tolerance,
        "ok": error <= tolerance,
    }
