"""Every op in the registry, every argument position, both modes.

JVP rules are checked against central finite differences, VJP rules against
the JVP rules by the dot-product test <u, J v> = <Jᵀu, v>, and tangent
lanes against one-direction passes. Adding an op adds its cases here.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.ops import OPS

from .opcases import case_id, draw, op_cases

CASES = list(op_cases())

#: Ops whose derivative is, by definition, not the derivative of their value.
ZERO_DERIVATIVE = {"stop_gradient"}


def positions(op, shapes):
    return range(len(shapes)) if op.nargs is None else op.differentiable


def with_dual(args, i, tangent):
    args = list(args)
    args[i] = ad.Dual(args[i], tangent)
    return args


def jvp_of(op, args, params, i, v):
    return np.asarray(op.fn(*with_dual(args, i, v), **params).tangent)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_jvp_matches_central_difference(case):
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=1)
    rng = np.random.default_rng(2)
    for i in positions(op, shapes):
        v = rng.standard_normal(np.shape(args[i]))
        h = 1e-6
        plus, minus = list(args), list(args)
        plus[i] = args[i] + h * v
        minus[i] = args[i] - h * v
        numeric = (np.asarray(op.fn(*plus, **params)) - np.asarray(op.fn(*minus, **params))) / (
            2 * h
        )
        if op.name in ZERO_DERIVATIVE:
            numeric = np.zeros_like(numeric)
        np.testing.assert_allclose(
            jvp_of(op, args, params, i, v),
            numeric,
            rtol=1e-6,
            atol=1e-7,
            err_msg=f"{op.name}: JVP of argument {i} disagrees with finite differences",
        )


def assert_vjp_matches_jvp(op, args, params, wanted, rng, label=""):
    """The dot-product test <u, J v> = <Jᵀu, v> with the arguments at ``wanted``
    needing a gradient, the others plain values.

    The pairing is Re(Σ u · J v) with no conjugation (JAX's and autograd's convention:
    a cotangent ``u = ∂L/∂Re y - i ∂L/∂Im y`` gives ``dL = Re(Σ u · dy)``); a complex
    output gets a complex ``u``, so its imaginary part is tested too."""
    out = op.fn(*args, **params)
    u = rng.standard_normal(np.shape(out))
    if np.iscomplexobj(out):
        u = u + 1j * rng.standard_normal(np.shape(out))
    tensors = [ad.Tensor(a, requires_grad=True) if i in wanted else a for i, a in enumerate(args)]
    op.fn(*tensors, **params).backward(u)
    for i in wanted:
        v = rng.standard_normal(np.shape(args[i]))
        forward = np.real(np.sum(u * jvp_of(op, args, params, i, v)))
        reverse = np.real(np.sum(tensors[i].grad.numpy() * v))
        assert tensors[i].grad.shape == np.shape(args[i])
        assert abs(forward - reverse) <= 1e-10 * max(1.0, abs(forward) + abs(reverse)), (
            f"{op.name}: <u, J v> = {forward!r} but <Jᵀu, v> = {reverse!r} for argument {i}{label}"
        )


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_vjp_passes_dot_product_test(case):
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=3)
    assert_vjp_matches_jvp(op, args, params, list(positions(op, shapes)), np.random.default_rng(4))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_vjp_is_odd_in_its_cotangent(case):
    # The eager sweep carries a negation through the op set's rules instead of computing
    # it (Hints.vjp_negates, OpDef.linear_rules): that holds only if each rule gives the
    # negated share for a negated cotangent, exactly. A rule that clipped or branched on
    # its cotangent would break it; seeds are never carried, so this compares the rules.
    op, shapes, params = case
    if not op.linear_rules:
        return
    args, params = draw(op, shapes, params, seed=7)
    out = op.fn(*args, **params)
    u = np.random.default_rng(8).standard_normal(np.shape(out))
    if np.iscomplexobj(out):
        u = u + 1j * np.random.default_rng(9).standard_normal(np.shape(out))
    shares = []
    for seed in (u, -u):
        wanted = list(positions(op, shapes))
        tensors = [
            ad.Tensor(a, requires_grad=True) if i in wanted else a for i, a in enumerate(args)
        ]
        op.fn(*tensors, **params).backward(seed)
        shares.append([tensors[i].grad.numpy() for i in wanted])
    for plus, minus in zip(*shares):
        np.testing.assert_array_equal(minus, -plus, err_msg=f"{op.name}: VJP is not odd")


SEVERAL_POSITIONS = [case for case in CASES if len(positions(case[0], case[1])) > 1]


@pytest.mark.parametrize("case", SEVERAL_POSITIONS, ids=case_id)
def test_vjp_of_each_argument_alone_matches_its_jvp(case):
    # With one argument needing a gradient the tape keeps only what its rule reads
    # (vjp_reads): a rule reading a value that was not kept would fail here.
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=5)
    rng = np.random.default_rng(6)
    for i in positions(op, shapes):
        assert_vjp_matches_jvp(op, args, params, [i], rng, label=" alone")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_lanes_match_single_directions(case):
    op, shapes, params = case
    args, params = draw(op, shapes, params, seed=5)
    rng = np.random.default_rng(6)
    for i in positions(op, shapes):
        lanes = rng.standard_normal((3,) + np.shape(args[i]))
        together = np.asarray(op.fn(*with_dual(args, i, lanes), **params).tangent)
        one_by_one = np.stack([jvp_of(op, args, params, i, lane) for lane in lanes])
        np.testing.assert_allclose(together, one_by_one, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", list(OPS.values()), ids=lambda op: op.name)
def test_every_op_has_both_rules_and_an_oracle(op):
    if op.nargs is None:
        assert callable(op.jvp) and callable(op.vjp), f"{op.name}: variadic op needs both rules"
    else:
        assert len(op.jvp) == len(op.vjp) == op.nargs, f"{op.name}: one rule per argument"
        for i, (j, v) in enumerate(zip(op.jvp, op.vjp)):
            assert (j is None) == (v is None), f"{op.name}: argument {i} has only one rule"
        assert op.differentiable, f"{op.name} has no differentiable argument"
    assert op.sym is not None, f"{op.name} has no SymPy counterpart"
    assert op.doc, f"{op.name} has no documentation"
    if not op.elementwise:
        assert op.cases, f"{op.name} is not elementwise, so it needs test cases on its record"


@pytest.mark.parametrize(
    "op", [op for op in OPS.values() if op.elementwise and op.nargs == 1], ids=lambda o: o.name
)
def test_float32_stays_float32(op):
    args, params = draw(op, [(4,)], op.test_params, seed=7)
    x = args[0].astype(np.float32)
    t = ad.Tensor(x, requires_grad=True)
    op.fn(t, **params).sum().backward()
    assert t.grad.dtype == np.float32, op.name
    d = op.fn(ad.Dual(x, np.ones(4, np.float32)), **params)
    assert np.asarray(d.tangent).dtype == np.float32, op.name
