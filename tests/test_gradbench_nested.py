"""GradBench's nested evals, particle and saddle, and the perturbation confusion nesting invites.

Each variant (``rr``, ``ff``, ``fr``, ``rf``: outer mode, inner mode) is built
from adcompare's own transforms nested in one another. The cheap tests hold
the nested derivatives to finite differences and hand-derived values, and
GradBench's constants to the physics they answer; GradBench's whole descents
take from half a minute (saddle) to minutes (particle) per variant here, so
the runs from the recorded inputs are opt-in (``ADCOMPARE_NESTED_FULL=1``).
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

import adcompare as ad
from adcompare.gradbench import InputError, get_eval, implemented
from adcompare.gradbench.descent import VARIANTS
from adcompare.gradbench.particle import flight
from adcompare.gradbench.saddle import saddle, worst_case
from tests.shared_data import shared_file

#: A derivative of a scalar function at a point, by each of adcompare's transforms.
DERIVATIVES = {
    "grad": lambda f, x: ad.grad(f)(x),
    "grad-forward": lambda f, x: ad.grad(f, mode="forward")(x),
    "jvp": lambda f, x: ad.jvp(f, (x,), (1.0,))[1],
    "vjp": lambda f, x: ad.vjp(f, x)[1](1.0)[0],
}
PAIRS = [(outer, inner) for outer in DERIVATIVES for inner in DERIVATIVES]

FULL_RUNS = pytest.mark.skipif(
    os.environ.get("ADCOMPARE_NESTED_FULL") != "1",
    reason="GradBench's whole descent takes 30 s to 4 min per variant on this machine; "
    "set ADCOMPARE_NESTED_FULL=1 to run it",
)


def recorded(eval_name: str) -> list[dict]:
    """The evaluate messages GradBench's eval sent, with the constant it compares with."""
    path = shared_file("gradbench", f"{eval_name}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def within_gradbench_tolerance(expected, output) -> bool:
    """GradBench's rule: same list lengths, each |a − b| / max(1, |a| + |b|) ≤ 1e-4;
    a non-finite number fails (GradBench's own rule would let NaN through)."""
    if isinstance(expected, list):
        return (
            isinstance(output, list)
            and len(output) == len(expected)
            and all(map(within_gradbench_tolerance, expected, output))
        )
    return (
        type(output) is float
        and math.isfinite(output)
        and abs(expected - output) / max(1.0, abs(expected) + abs(output)) <= 1e-4
    )


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_nested_derivatives_keep_their_perturbations_apart(outer, inner):
    """Siskind and Pearlmutter's test: d/dx [x · d/dy (x + y)] = 1. A transform that
    took x's perturbation for y's would see d/dy (x + y) = 2 and answer 2; with
    x · y inside, the answer is d/dx x² = 2x (confused: 4x)."""
    d_outer, d_inner = DERIVATIVES[outer], DERIVATIVES[inner]
    assert float(d_outer(lambda x: x * d_inner(lambda y: x + y, 1.0), 3.0)) == 1.0
    assert float(d_outer(lambda x: x * d_inner(lambda y: x * y, 1.0), 3.0)) == 6.0


def test_each_nested_eval_names_its_variants_and_one_workload():
    assert {"particle", "saddle"} <= set(implemented())
    for name in ("particle", "saddle"):
        nested = get_eval(name)
        assert (nested.primal, nested.derivative, nested.modes) == (None, None, ())
        assert set(nested.functions) == set(VARIANTS) == {"rr", "ff", "fr", "rf"}
        lines = recorded(name)
        (workload,) = nested.workloads()
        for line in lines:
            sent = {k: v for k, v in line["input"].items() if k not in ("min_runs", "min_seconds")}
            assert (workload.description, workload.make()) == (line["workload"], sent)
            nested.prepare(line["input"])


@pytest.mark.parametrize(
    "name, bad, says",
    [
        ("particle", 0.0, "an object with a number 'w'"),
        ("particle", {"x": 0.0}, "an object with a number 'w'"),
        ("particle", {"w": "0"}, "must be a number, not str"),
        ("particle", {"w": True}, "must be a number, not bool"),
        ("particle", {"w": math.nan}, "finite number, not nan"),
        ("saddle", [1.0, 1.0], "list of two numbers"),
        ("saddle", {"start": [1.0]}, "list of two numbers"),
        ("saddle", {"start": [1.0, "1"]}, "two finite numbers"),
        ("saddle", {"start": [math.inf, 1.0]}, "two finite numbers"),
    ],
)
def test_bad_input_is_refused_in_one_sentence(name, bad, says):
    with pytest.raises(InputError, match=says):
        get_eval(name).prepare(bad)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_particle_nested_derivative_matches_finite_differences(variant):
    """The derivative of the flight (through 352 Euler steps, each taking the
    potential's gradient) in each outer-over-inner composition, against central
    differences of the flight itself."""
    outer, inner = VARIANTS[variant]
    derivative = ad.grad(lambda w: flight(w[0], inner), mode=outer)(np.array([0.0]))
    h = 1e-5
    central = (flight(h, "reverse") - flight(-h, "reverse")) / (2 * h)
    np.testing.assert_allclose(derivative, [central], rtol=1e-7)


def test_particle_constant_sends_the_particle_to_the_origin():
    """GradBench's answer, run through our flight, crosses the x-axis within 1e-4 of
    the origin (from w = 0 it lands 1.8 away): our physics is GradBench's."""
    (constant,) = {line["output"] for line in recorded("particle")}
    assert flight(constant, "forward") < 1e-8
    assert flight(0.0, "forward") > 3.0


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_particle_variants_stay_at_the_constant(variant):
    """Each of the eval's functions, started at GradBench's answer, ends within its
    tolerance of it (the full descent from w = 0 is the opt-in test below)."""
    particle = get_eval("particle")
    (constant,) = {line["output"] for line in recorded("particle")}
    output = particle.encode(
        variant, particle.functions[variant](particle.prepare({"w": constant}), "auto")
    )
    assert within_gradbench_tolerance(constant, output)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_saddle_nested_derivative_of_the_worst_case(variant):
    """∇_p max_q f(p, q) through the whole inner climb, each inner step a gradient:
    the climb's q does not depend on p, so the derivative is 2p, which central
    differences of the climb confirm."""
    outer, inner = VARIANTS[variant]
    start, p = np.array([1.0, 1.0]), np.array([0.5, -2.0])
    derivative = ad.grad(lambda p: worst_case(p, start, inner), mode=outer)(p)
    np.testing.assert_allclose(derivative, 2 * p, rtol=1e-12)
    h = 1e-5
    central = [
        (worst_case(p + h * e, start, "reverse") - worst_case(p - h * e, start, "reverse"))
        / (2 * h)
        for e in np.eye(2)
    ]
    np.testing.assert_allclose(derivative, central, rtol=1e-7)


@FULL_RUNS
@pytest.mark.parametrize("name", ["particle", "saddle"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_full_descent_from_the_recorded_input_gives_the_eval_constant(name, variant):
    nested = get_eval(name)
    (line,) = [line for line in recorded(name) if line["function"] == variant]
    output = nested.encode(
        variant, nested.functions[variant](nested.prepare(line["input"]), "auto")
    )
    assert within_gradbench_tolerance(line["output"], output)
    if name == "saddle":
        # First-order conditions: ∇_p max_q f and ∇_q f vanish within the tolerance.
        p, q = np.array(output[:2]), np.array(output[2:])
        assert np.linalg.norm(ad.grad(lambda p: worst_case(p, q, "reverse"))(p)) < 1e-4
        assert np.linalg.norm(ad.grad(saddle, argnums=1)(p, q)) < 1e-4
    else:
        assert flight(output, "reverse") < 1e-8
