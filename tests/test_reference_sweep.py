"""The reference sweep (``engines/reverse/reference.py``) is the fast sweep's oracle.

The fast sweep (``engines/reverse/sweep.py``) must give the reference's bytes
(same dtype, same shape, so the sign of every zero too) over every registry
case, every benchmark problem and the programs made for its carried signs.
Three of its fast paths may change bits, each shown in a test of its own:

- a carried negation is computed as ``0 - c`` where it leaves the sweep, and a
  slice's share is added where it lands: a zero may come out with the other
  sign (``-(+0)`` is ``-0``; ``0 - (+0)`` is ``+0``; ``-0`` stays ``-0`` where the
  reference adds a scattered ``+0`` to it);
- ``x * x``'s one rule gives ``2·c`` where the reference adds ``c`` twice, and
  repeated integer indices add each share into a total the sweep owns where
  the reference scatters them first: where an earlier share is there already,
  the sum is reassociated, within 1 ulp.

Over the registry cases no difference is accepted. Over the problems and the
sign programs a difference is accepted only within 1 ulp and only if turning
the two reassociating paths off (``vjp_same``, ``accumulate_vjp``) gives every
bit back. The reference itself is checked against hand-derived derivatives, so
the two cannot be wrong in the same way unnoticed.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import adcompare as ad
from adcompare import adbench
from adcompare.bench.problems import PROBLEMS
from adcompare.engines.reverse import (
    IN_PLACE_FROM,
    cotangents_at,
    lift,
    node_of,
    reference_jacrev,
    reference_sweep,
)
from adcompare.ops import OPS

from .opcases import case_id, draw, op_cases
from .test_sweep_signs import PROGRAMS, SIDE
from .test_transforms import rosenbrock, rosenbrock_gradient


def assert_same_bits(fast, reference) -> None:
    """Every bit equal: dtype, shape and bytes (the sign of each zero included)."""
    fast, reference = np.asarray(fast), np.asarray(reference)
    assert fast.dtype == reference.dtype and fast.shape == reference.shape
    assert fast.tobytes() == reference.tobytes(), np.flatnonzero(fast != reference)[:5]


def ulps_apart(fast, reference) -> float:
    """The largest difference in units in the last place of the reference's values."""
    return float(np.max(np.abs(fast - reference) / np.spacing(np.abs(reference))))


@pytest.fixture
def without_hint(monkeypatch):
    """Turn one of an op's sweep hints off (``without_hint("multiply", "vjp_same")``)."""

    def turn_off(name: str, hint: str) -> None:
        op = OPS[name]
        monkeypatch.setattr(op, "hints", dataclasses.replace(op.hints, **{hint: None}))

    return turn_off


# --- every registry case ----------------------------------------------------------------

CASES = [case for case in op_cases() if case[0].nargs is None or case[0].differentiable]


def _needing_gradients(op, shapes) -> list[list[int]]:
    """Every differentiable position together, then each alone: the tape keeps only what
    the rules of the positions that need a gradient read, so placeholders differ."""
    positions = list(range(len(shapes)) if op.nargs is None else op.differentiable)
    return [positions] + ([[i] for i in positions] if len(positions) > 1 else [])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_fast_sweep_gives_the_reference_bits_for_every_registry_case(case):
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=3)
    for wanted in _needing_gradients(op, shapes):
        leaves = lift([args[i] for i in wanted])
        inputs = list(args)
        for i, leaf in zip(wanted, leaves):
            inputs[i] = leaf
        with ad.enable_grad():
            out = op.fn(*inputs, **params)
        rng = np.random.default_rng(4)
        seed = rng.standard_normal(out.shape)
        if out.dtype.kind == "c":
            seed = seed + 1j * rng.standard_normal(out.shape)
        # The reference first: it frees nothing, and the fast sweep frees the records.
        reached = reference_sweep(node_of(out), seed)
        reference = [reached[node_of(leaf)] for leaf in leaves]
        fast = cotangents_at([node_of(out)], [seed], leaves, retain_graph=False)
        for got, expected in zip(fast, reference):
            assert_same_bits(got, expected)


# --- every benchmark problem ------------------------------------------------------------

#: Small sizes, and one above IN_PLACE_FROM, where the fast sweep sums into memory it owns.
LARGE = 5000
assert LARGE > IN_PLACE_FROM
SIZES = {"n": (5, LARGE), "m": (6,)}


def _short_lstm():
    """ADBench's LSTM on its first 12 characters: the same code, a hundredth of the time
    (the published 1024 characters take seconds a gradient)."""
    problem = adbench.bundled("adbench-lstm")
    data = dataclasses.replace(problem.data, sequence=problem.data.sequence[:12])
    return dataclasses.replace(problem, data=data).objective, problem.params


def _instances():
    for name, problem in PROBLEMS.items():
        if name == "adbench-lstm":
            continue  # at its published size; the short one below runs its code
        for values in itertools.product(*(SIZES[key] for key in problem.sweeps)):
            size = dict(zip(problem.sweeps, values))
            if problem.too_large(size) is None:
                inst = problem.build(**size)
                yield pytest.param(inst.on(ad), inst.x, id=f"{name}-{values}")
    yield pytest.param(*_short_lstm(), id="adbench-lstm-12-characters")


#: How far (in ulps) a reassociated sum of a few shares may move: k shares, k − 1 ulps.
REASSOCIATED_ULPS = 4.0


def assert_reference_bits_but_where_a_sum_is_reassociated(f, x, without_hint) -> None:
    """``jacrev``'s numbers (the harness's reverse mode: the gradient, or one sweep per
    output row) are the reference's bits, but where one of the two fast paths that
    reassociate a sum (``x * x``'s one rule, repeated indices added into an owned total)
    met an earlier share: there within a few ulps, and every bit once both are off.

    A total of k shares summed in another order can move by about k − 1 ulps: bundle
    adjustment's cameras each collect five observations' shares, and a generated
    instance's entries came out 3 ulps apart (:data:`REASSOCIATED_ULPS`)."""
    reference = reference_jacrev(f, x)
    fast = np.asarray(ad.jacrev(f)(x))
    if fast.tobytes() != reference.tobytes():
        assert fast.dtype == reference.dtype
        assert ulps_apart(fast, reference) <= REASSOCIATED_ULPS
        without_hint("multiply", "vjp_same")
        without_hint("getitem", "accumulate_vjp")
        fast = ad.jacrev(f)(x)
    assert_same_bits(fast, reference)


@pytest.mark.parametrize(("f", "x"), list(_instances()))
def test_the_fast_sweep_gives_the_reference_bits_for_every_benchmark_problem(f, x, without_hint):
    assert_reference_bits_but_where_a_sum_is_reassociated(f, x, without_hint)


@ad.custom_vjp
def clip_gradient(x):
    return x


clip_gradient.defvjp(lambda x: (x, None), lambda saved, g: (ad.clip(g, -0.5, 2.0),))


def _negated_into_an_owned_sum(x):
    s = ad.sin(x)  # the two newer shares' sum is the sweep's; the older one is negated
    return ad.sum(1.0 - s) + ad.sum(s * 2.0) + ad.sum(s * 3.0)


SIGN_PROGRAMS = {
    **PROGRAMS,
    "a negated share into an owned sum": _negated_into_an_owned_sum,
    # a sum of two negated shares, owned, leaves the sweep: negated in place
    "only negated shares into a leaf": lambda x: ad.sum(1.0 - x) + ad.sum(2.0 - x),
    # a user's rule need not be linear (it clips): its cotangent is computed first
    "a user's rule under a negation": lambda x: ad.sum(-clip_gradient(ad.sin(x)) * 3.0),
}


@pytest.mark.parametrize("side", [4, SIDE])
@pytest.mark.parametrize("name", SIGN_PROGRAMS)
def test_the_fast_sweep_gives_the_reference_bits_on_the_programs_made_for_its_signs(
    name, side, without_hint
):
    # Programs that meet every way the fast sweep sums a share of either sign into a
    # total held either way, in place (SIDE² > IN_PLACE_FROM) and not.
    x = np.random.default_rng(side).uniform(-1.0, 1.0, (side, side))
    assert_reference_bits_but_where_a_sum_is_reassociated(SIGN_PROGRAMS[name], x, without_hint)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_gradient_keeps_its_inputs_dtype_as_jacrev_gives_it(dtype):
    x = np.linspace(-1.0, 1.5, 9).astype(dtype)
    c64 = np.linspace(0.5, 1.0, 9)  # a wider constant widens the cotangents on the way
    f = lambda x: ad.sum(c64 * rosenbrock(x) - x)
    assert_same_bits(ad.grad(f)(x), reference_jacrev(f, x))
    assert reference_jacrev(f, x).dtype == dtype


# --- where a fast path may change bits, and only there -----------------------------------


def test_a_carried_negation_gives_plus_zero_where_the_reference_gives_minus_zero(
    without_hint,
):
    x = np.linspace(0.5, 2.0, 6)
    f = lambda x: ad.sum(1.0 - x * 0.0)  # the share -(0 · 1) = -0
    reference = reference_jacrev(f, x)
    fast = ad.grad(f)(x)
    np.testing.assert_array_equal(fast, reference)  # the same numbers: zeros
    assert np.all(np.signbit(reference)) and not np.any(np.signbit(fast))
    without_hint("subtract", "vjp_negates")
    assert_same_bits(ad.grad(f)(x), reference)


def test_a_slice_added_where_it_lands_keeps_a_minus_zero_the_reference_adds_plus_zero_to(
    without_hint,
):
    x = np.linspace(0.5, 2.0, 6)

    def f(x):
        tail = x[2:]  # older: its share is the one added into a slice of x's total
        return ad.sum(tail * 2.0) + ad.sum(x[:2] * -0.0)  # the newer share: -0 in x[:2]

    reference = reference_jacrev(f, x)
    fast = ad.grad(f)(x)
    np.testing.assert_array_equal(fast, reference)
    np.testing.assert_array_equal(np.signbit(fast) != np.signbit(reference), [1, 1, 0, 0, 0, 0])
    without_hint("getitem", "accumulate_vjp")
    assert_same_bits(ad.grad(f)(x), reference)


def test_x_times_x_after_another_share_is_reassociated_within_one_ulp(without_hint):
    x = np.random.default_rng(0).uniform(0.1, 1.2, 1000)
    f = lambda x: ad.sum(x * x) + ad.sum(ad.sin(x))  # sin's share comes first
    reference = reference_jacrev(f, x)
    fast = ad.grad(f)(x)
    # cos(x) + 2x: the reference adds x's share twice, (cos + x) + x; the fast sweep once.
    assert not np.array_equal(fast, reference) and ulps_apart(fast, reference) <= 1.0
    np.testing.assert_allclose(reference, np.cos(x) + 2.0 * x, rtol=4e-16)
    without_hint("multiply", "vjp_same")
    assert_same_bits(ad.grad(f)(x), reference)


def test_repeated_indices_added_into_an_owned_total_are_reassociated_within_one_ulp(
    without_hint,
):
    index = np.array([0, 0, 1, 1, 1])

    def f(x):
        repeated = ad.sin(x[index])  # older: its shares go into x's total one by one
        return ad.sum(repeated * 3.1) + ad.sum(ad.exp(x[1:]))  # x[1:]: a fresh total

    x = np.random.default_rng(1).uniform(0.1, 1.2, 5)
    reference = reference_jacrev(f, x)
    fast = ad.grad(f)(x)
    assert not np.array_equal(fast, reference) and ulps_apart(fast, reference) <= 1.0
    expected = 3.1 * np.cos(x) * np.bincount(index, minlength=5) + np.append(0.0, np.exp(x[1:]))
    np.testing.assert_allclose(reference, expected, rtol=4e-16)
    without_hint("getitem", "accumulate_vjp")
    assert_same_bits(ad.grad(f)(x), reference)


# --- what the optimisations buy, in counts ------------------------------------------------


#: Rosenbrock reads x three times (x[1:], and x[:-1] twice) and subtracts twice
#: (x[1:] - x[:-1]², 1 - x[:-1]): three shares reach x, two of them negated. Each sweep's
#: op applications for them, as (negative, scatter_add, add, subtract), with the fast
#: sweep's hints that each row turns off; and its element work over the next row's.
#: A sum into an array the sweep owns is numpy's in-place add, not an op application:
#: count() does not see it, so it shows as an allocation saved, not as arithmetic.
WHAT_EACH_BUYS = {
    # negates both shares (n - 1 each), scatters each into zeros of n, sums the three
    "reference": (None, (2, 3, 2, 0), lambda n: n),
    # the same, but the second sum goes into the first (n elements), which it owns
    "fast, no hints": (("vjp_negates", "accumulate_vjp"), (2, 3, 1, 0), lambda n: 0),
    # carried signs alone: a slice's share is the larger, so each is computed before its
    # scatter, as 0 - c where the reference takes -c: the same work
    "fast, slices scattered": (("accumulate_vjp",), (0, 3, 1, 2), lambda n: 3 * n),
    # later slices add into the first one's scatter where they land: two scatters into
    # zeros and a full-size sum fewer
    "fast, negations computed": (("vjp_negates",), (2, 1, 0, 0), lambda n: 2 * (n - 1)),
    # both: the signs fold into the slices' sums (a subtraction where they land)
    "fast": ((), (0, 1, 0, 0), None),
}


def _rosenbrock_sweep_cost(sweep: str, n: int) -> ad.Cost:
    x0 = np.where(np.arange(n) % 2 == 0, -1.2, 1.0)
    (x,) = lift([x0])
    with ad.enable_grad():
        y = rosenbrock(x)
    with ad.count() as cost:
        if sweep == "reference":
            g = reference_sweep(node_of(y), np.ones(()))[node_of(x)]
        else:
            (g,) = cotangents_at([node_of(y)], [np.ones(())], [x], retain_graph=False)
    np.testing.assert_allclose(g, rosenbrock_gradient(x0), rtol=1e-13)
    return cost


def test_what_each_optimisation_of_the_sweep_buys_on_rosenbrock(monkeypatch):
    n = LARGE
    costs, products = [], set()
    for sweep, (hints_off, applications, _) in WHAT_EACH_BUYS.items():
        with monkeypatch.context() as patch:
            for op in OPS.values():
                for hint in hints_off or ():
                    if getattr(op.hints, hint) is not None:
                        patch.setattr(op, "hints", dataclasses.replace(op.hints, **{hint: None}))
            cost = _rosenbrock_sweep_cost(sweep, n)
        names = ("negative", "scatter_add", "add", "subtract")
        assert tuple(cost.by_op["numpy", name] for name in names) == applications, sweep
        products.add(cost.by_op["numpy", "multiply"])
        costs.append(cost.elements["numpy"])
    for (sweep, (_, _, more_than_next)), work, next_work in zip(
        WHAT_EACH_BUYS.items(), costs, costs[1:]
    ):
        assert work - next_work == more_than_next(n), sweep
    assert len(products) == 1  # the rules' own products are the same calls in every row


# --- the reference on its own --------------------------------------------------------------


def test_the_reference_gives_hand_derived_derivatives():
    x = np.random.default_rng(0).uniform(-1.5, 1.5, size=17)
    np.testing.assert_allclose(reference_jacrev(rosenbrock, x), rosenbrock_gradient(x), rtol=1e-12)
    jacobian = reference_jacrev(lambda v: ad.sin(v) * v[0], x[:4])
    expected = np.diag(np.cos(x[:4]) * x[0])
    expected[:, 0] += np.sin(x[:4])
    np.testing.assert_allclose(jacobian, expected, rtol=1e-14)


def test_a_function_not_reaching_its_input_has_a_zero_jacobian():
    jacobian = reference_jacrev(lambda v: np.ones(3), np.ones(2))
    np.testing.assert_array_equal(jacobian, np.zeros((3, 2)))


def test_a_chain_of_five_thousand_records_needs_no_recursion():
    def chain(v):
        for _ in range(5_000):
            v = v * 1.0001
        return ad.sum(v)

    g = reference_jacrev(chain, np.ones(2))
    np.testing.assert_allclose(g, np.full(2, 1.0001**5_000), rtol=1e-10)


def test_the_reference_frees_nothing_and_reads_retained_and_leaf_gradients():
    x = ad.Tensor(np.array([0.3, -0.7, 1.1]), requires_grad=True)
    hidden = ad.tanh(x) - x
    hidden.retain_grad()
    y = ad.sum(hidden * hidden)
    first = reference_sweep(node_of(y), np.ones(()))
    again = reference_sweep(node_of(y), np.ones(()))  # the tape is intact
    assert_same_bits(again[node_of(x)], first[node_of(x)])
    y.backward()
    assert_same_bits(hidden.grad.numpy(), first[node_of(hidden)])
    assert_same_bits(x.grad.numpy(), first[node_of(x)])


def test_a_freed_graph_is_refused_as_the_fast_sweep_refuses_it():
    x = ad.Tensor(np.linspace(0.1, 1.0, 4), requires_grad=True)
    y = ad.sum(ad.sin(x))
    y.backward()
    with pytest.raises(RuntimeError, match=r"already freed.*retain_graph=True"):
        reference_sweep(node_of(y), np.ones(()))


def test_a_saved_value_changed_in_place_is_refused():
    x = ad.Tensor(np.linspace(0.1, 1.0, 4), requires_grad=True)
    e = ad.exp(x * 2.0)  # exp's record keeps its output, e's memory
    e += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        reference_sweep(node_of(ad.sum(e)), np.ones(()))


def test_a_seed_on_the_swept_tape_is_refused_naming_create_graph():
    x = ad.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * x
    with pytest.raises(ValueError, match="create_graph=True"):
        reference_sweep(node_of(y), x)


def test_a_complex_output_is_refused():
    with pytest.raises(TypeError, match=r"ad.real\(...\) and ad.imag\(...\)"):
        reference_jacrev(lambda v: v * 1j, np.ones(2))
