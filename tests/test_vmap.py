"""vmap: every op's batching rule against a Python loop, and vmap composed with the transforms.

The batching rule lives on the op record (``OpDef.batch``), so the loop test
is parametrised over ``OPS``: a new op is checked here the moment it exists.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import adcompare as ad
from adcompare.ops import OPS

from .opcases import case_id, draw, op_cases

BATCH = 3
CASES = list(op_cases())


def batch_patterns(nargs: int):
    """Which arguments carry the batch axis: every non-empty subset (all, for many args)."""
    if nargs > 2:
        return [(True,) * nargs]
    return [p for p in itertools.product((False, True), repeat=nargs) if any(p)]


def examples(op, shapes, params, pattern):
    """Per-example arguments (a batch of each mapped one), and the shared static parameters."""
    draws = [draw(op, shapes, params, seed=10 + b) for b in range(BATCH)]
    params = draws[0][1]
    per_example = [
        [draws[b][0][i] if mapped else draws[0][0][i] for i, mapped in enumerate(pattern)]
        for b in range(BATCH)
    ]
    return per_example, params


def stacked(per_example, pattern):
    return [
        np.stack([args[i] for args in per_example]) if mapped else per_example[0][i]
        for i, mapped in enumerate(pattern)
    ]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_vmap_of_every_op_matches_a_loop(case):
    op, shapes, params = case
    for pattern in batch_patterns(len(shapes)):
        per_example, fixed = examples(op, shapes, params, pattern)
        in_axes = tuple(0 if mapped else None for mapped in pattern)
        got = ad.vmap(lambda *a: op.fn(*a, **fixed), in_axes=in_axes)(
            *stacked(per_example, pattern)
        )
        want = np.stack([np.asarray(op.fn(*args, **fixed)) for args in per_example])
        np.testing.assert_allclose(
            got, want, rtol=1e-13, atol=1e-13, err_msg=f"{op.name}, batched {pattern}"
        )


# One case per op keeps the derivative tests' budget small.
FIRST_CASE = list({case[0].name: case for case in CASES}.values())


@pytest.mark.parametrize("case", FIRST_CASE, ids=case_id)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_vmap_of_grad_matches_a_loop_of_gradients(case, mode):
    """Batching the derivative rules themselves: per-example gradients of every op."""
    op, shapes, params = case
    pattern = (True,) * len(shapes)
    per_example, fixed = examples(op, shapes, params, pattern)
    weights = np.random.default_rng(3).standard_normal(np.shape(op.fn(*per_example[0], **fixed)))
    positions = tuple(range(len(shapes))) if op.nargs is None else op.differentiable
    complex_output = np.iscomplexobj(op.fn(*per_example[0], **fixed))

    def loss(*args):
        total = ad.sum(op.fn(*args, **fixed) * weights)
        return ad.real(total) if complex_output else total  # grad needs a real output

    gradient = ad.grad(loss, argnums=positions, mode=mode)
    got = ad.vmap(gradient)(*stacked(per_example, pattern))
    for k in range(len(positions)):
        want = np.stack([gradient(*args)[k] for args in per_example])
        np.testing.assert_allclose(got[k], want, rtol=1e-12, atol=1e-12, err_msg=op.name)


def loss(params, x, y):
    residual = ad.tanh(params["W"] @ x + params["b"]) - y
    return ad.sum(residual * residual)


def problem(batch=6, seed=0):
    rng = np.random.default_rng(seed)
    params = {"W": rng.standard_normal((3, 4)), "b": rng.standard_normal(3)}
    return params, rng.standard_normal((batch, 4)), rng.standard_normal((batch, 3))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_mean_of_per_example_gradients_is_the_gradient_of_the_mean_loss(mode):
    params, x, y = problem()
    per_example = ad.vmap(ad.grad(loss, mode=mode), in_axes=(None, 0, 0))(params, x, y)
    assert per_example["W"].shape == (6, 3, 4) and per_example["b"].shape == (6, 3)

    def mean_loss(p):
        return sum(loss(p, x[i], y[i]) for i in range(len(x))) / len(x)

    whole = ad.grad(mean_loss)(params)
    for name in params:
        np.testing.assert_allclose(per_example[name].mean(axis=0), whole[name], rtol=0, atol=1e-12)
    # Each row is that example's own gradient.
    third = ad.grad(loss)(params, x[2], y[2])
    np.testing.assert_allclose(per_example["W"][2], third["W"], rtol=0, atol=1e-12)


def test_grad_of_vmap_equals_the_gradient_of_the_loop():
    params, x, y = problem()
    batched = ad.grad(lambda p: ad.mean(ad.vmap(loss, in_axes=(None, 0, 0))(p, x, y)))(params)
    looped = ad.grad(lambda p: sum(loss(p, x[i], y[i]) for i in range(6)) / 6)(params)
    for name in params:
        np.testing.assert_allclose(batched[name], looped[name], rtol=0, atol=1e-12)


def test_jacfwd_of_vmap_is_block_diagonal():
    x = np.random.default_rng(1).uniform(-1, 1, (3, 2))
    jac = ad.jacfwd(ad.vmap(lambda row: ad.sin(row) * row))(x)
    assert jac.shape == (3, 2, 3, 2)
    for i, j in itertools.product(range(3), repeat=2):
        want = np.diag(np.cos(x[i]) * x[i] + np.sin(x[i])) if i == j else np.zeros((2, 2))
        np.testing.assert_allclose(jac[i, :, j, :], want, atol=1e-15)


def test_vmap_of_hessian_and_jacrev():
    x = np.random.default_rng(2).uniform(-1, 1, (4, 3))
    hessians = ad.vmap(ad.hessian(lambda v: ad.sum(v**3)))(x)
    jacobians = ad.vmap(ad.jacrev(lambda v: v * ad.sum(v)))(x)
    for i in range(4):
        np.testing.assert_allclose(hessians[i], np.diag(6 * x[i]), atol=1e-14)
        np.testing.assert_allclose(jacobians[i], np.eye(3) * x[i].sum() + x[i][:, None], atol=1e-14)


def test_in_axes_and_out_axes():
    x = np.arange(6.0).reshape(2, 3)
    w = np.array([1.0, 10.0])
    # Map over the columns of x: each example is a column of two numbers.
    out = ad.vmap(lambda col, w: col * w, in_axes=(1, None), out_axes=1)(x, w)
    np.testing.assert_array_equal(out, x * w[:, None])
    pairs = ad.vmap(lambda p: {"s": ad.sum(p["a"]), "c": 2.0}, in_axes=({"a": 1},))({"a": x})
    np.testing.assert_array_equal(pairs["s"], x.sum(axis=0))
    np.testing.assert_array_equal(pairs["c"], [2.0, 2.0, 2.0])  # broadcast, as in JAX
    shared = ad.vmap(lambda v: (ad.sum(v), 5.0), out_axes=(0, None))(x)
    assert shared[1] == 5.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ad.vmap(lambda v: v, in_axes=None)(np.ones(3)), "no argument is mapped"),
        (lambda: ad.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4)), "map axes of one size"),
        (lambda: ad.vmap(lambda v: 1.0 if v > 0 else 0.0)(np.ones(3)), "adcompare.where"),
        (lambda: ad.vmap(lambda v: v)(np.arange(3)), "one-hot"),
        (lambda: ad.vmap(lambda v: v, in_axes=2)(np.ones((2, 3))), "out of range"),
        (lambda: ad.vmap(lambda v: v, out_axes=None)(np.ones(3)), "same for every example"),
        (lambda: ad.vmap(lambda v: None)(np.ones(3)), "forget a `return`"),
    ],
)
def test_vmap_refuses_with_a_sentence(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_every_op_has_a_batching_rule():
    from adcompare.ops.batching import rule_of

    assert [name for name, op in OPS.items() if rule_of(op) is None] == []


def unary_composites():
    from adcompare.ops import COMPOSITES

    names = []
    for name, entry in COMPOSITES.items():
        try:
            entry.fn(np.array([0.5, -1.0, 2.0]))
        except (TypeError, ValueError):
            continue  # needs more than one array, or more than one axis
        names.append(name)
    return names


@pytest.mark.parametrize("name", unary_composites())
@pytest.mark.parametrize("transform", ["grad", "jacfwd", "hessian"])
def test_vmap_through_composites_and_subgradients_matches_a_loop(name, transform):
    """Rules that read values (relu's mask, logsumexp's shift, abs's sign) stay batched."""
    from adcompare.ops import COMPOSITES

    fn = COMPOSITES[name].fn
    x = np.array([[0.5, -1.0, 2.0], [-0.3, 0.25, 1.5], [2.0, 2.0, -0.7], [1.0, -2.0, 0.1]])
    if transform == "grad":
        derivative = ad.grad(lambda v: ad.sum(ad.abs(fn(v))) * ad.sum(ad.maximum(v, 0.2)))
    elif transform == "jacfwd":
        derivative = ad.jacfwd(lambda v: ad.clip(ad.real(fn(v)), -1.0, 1.0) * ad.prod(v))
    else:
        derivative = ad.hessian(lambda v: ad.real(ad.sum(fn(v) ** 3)) + ad.max(v) ** 2)
    want = np.stack([derivative(row) for row in x])
    got = ad.vmap(derivative)(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_mask_that_differs_per_example_is_refused():
    with pytest.raises(TypeError, match="differs from example to example"):
        ad.vmap(lambda v: ad.sum(v[v > 0]))(np.ones((2, 3)))


# --- every op and composite: vmap(f), vmap(grad(f)), vmap(jacfwd(f)) against a loop ---


def _composite_cases():
    """``(name, call, shapes, domain)`` for every composite: its recorded cases and the
    calls of tests/test_composite.py."""
    from adcompare.ops import COMPOSITES

    from .test_composite import CASES as CALLS

    cases = [(name, call, shapes, domain) for name, (call, _, shapes, domain) in CALLS.items()]
    for name, composite in sorted(COMPOSITES.items()):
        for i, (shapes, params) in enumerate(composite.cases):
            if composite.listed:
                call = lambda *xs, f=composite.fn, p=params: f(list(xs), **p)
            else:
                call = lambda *xs, f=composite.fn, p=params: f(*xs, **p)
            cases.append((f"{name}[{i}]", call, shapes, composite.domain))
    return cases


def _op_calls():
    """One case per op record, as ``(name, call, shapes, domain-or-args)``."""
    for op, shapes, params in FIRST_CASE:
        per_example, fixed = examples(op, shapes, params, (True,) * len(shapes))
        yield op.name, (lambda *a, op=op, fixed=fixed: op.fn(*a, **fixed)), per_example


def _per_example(shapes, domain):
    from .test_composite import _draw

    return [_draw(shapes, domain, seed=20 + b) for b in range(BATCH)]


COMPOSITE_CALLS = [
    (name, call, _per_example(shapes, domain)) for name, call, shapes, domain in _composite_cases()
]
# vmap(f) and vmap(grad(f)) of the op records are tested above; here their Jacobians.
EVERY_CALL = [(case, "jacfwd") for case in _op_calls()] + [
    (case, transform)
    for case in COMPOSITE_CALLS
    for transform in ("f", "grad-reverse", "grad-forward", "jacfwd")
]


def _parts(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _transformed(call, per_example, transform):
    """``call`` as one array (``f``), a real loss's gradient or the Jacobian of that array."""
    first = _parts(call(*per_example[0]))
    complex_output = any(np.iscomplexobj(p) for p in first)
    weights = [np.random.default_rng(3).standard_normal(np.shape(p)) for p in first]

    def joined(*args):
        parts = [ad.reshape(p, (-1,)) for p in _parts(call(*args))]
        joined = ad.concatenate(parts) if len(parts) > 1 else parts[0]
        return ad.real(joined) if complex_output else joined

    def loss(*args):
        total = sum(ad.sum(p * w) for p, w in zip(_parts(call(*args)), weights))
        return ad.real(total) if complex_output else total

    positions = tuple(range(len(per_example[0])))
    if transform == "f":
        return joined
    if transform == "jacfwd":
        return ad.jacfwd(joined, argnums=positions)
    return ad.grad(loss, argnums=positions, mode=transform.removeprefix("grad-"))


@pytest.mark.parametrize(
    ("case", "transform"), EVERY_CALL, ids=lambda p: p if isinstance(p, str) else p[0]
)
def test_vmap_of_every_op_and_composite_and_their_derivatives_matches_a_loop(case, transform):
    """JAX batches every one of these; so must vmap, and with each example's own answer
    (a shared mask or permutation would give every example the first one's derivative)."""
    name, call, per_example = case
    fn = _transformed(call, per_example, transform)
    want = [fn(*args) for args in per_example]
    got = ad.vmap(fn)(*[np.stack(column) for column in zip(*per_example)])
    for k, part in enumerate(_parts(got)):
        expected = np.stack([_parts(w)[k] for w in want])
        assert np.shape(part) == expected.shape, name
        np.testing.assert_allclose(part, expected, rtol=1e-12, atol=1e-12, err_msg=name)


def test_issue_examples_batch_as_a_loop_does():
    """Issue 35's examples: select's gradient per example, expm, a checkpointed function."""
    rows = np.array([[0.5, -1.0, 2.0], [-0.3, 0.25, 1.5], [2.0, 2.0, -0.7]])
    chosen = lambda v: ad.sum(ad.select([v > 0, v < -0.5], [v**2, v**3], 0.0))
    # d/dv of v**2 where v > 0, of v**3 where v < -0.5, else 0: by hand.
    by_hand = np.where(rows > 0, 2 * rows, np.where(rows < -0.5, 3 * rows**2, 0.0))
    np.testing.assert_allclose(ad.vmap(ad.grad(chosen))(rows), by_hand, rtol=1e-15)
    hessians = ad.vmap(ad.jacfwd(ad.grad(chosen)))(rows)
    want = np.where(rows > 0, 2.0, np.where(rows < -0.5, 6 * rows, 0.0))
    np.testing.assert_allclose(hessians, [np.diag(w) for w in want], rtol=1e-15)
    matrices = np.random.default_rng(4).uniform(-1, 1, (3, 2, 2))
    np.testing.assert_allclose(
        ad.vmap(ad.expm)(matrices), [scipy.linalg.expm(m) for m in matrices], rtol=1e-13
    )
    block = ad.checkpoint(lambda v, w: (ad.sin(v) * w, v * v))
    loss = lambda v: ad.sum(block(v, 2.0)[0] * block(v, 3.0)[1])
    # d/dv sum(2 sin(v) v^2) = 2 cos(v) v^2 + 4 sin(v) v
    want = 2 * np.cos(rows) * rows**2 + 4 * np.sin(rows) * rows
    for derivative in (ad.grad(loss), ad.grad(loss, mode="forward")):
        np.testing.assert_allclose(ad.vmap(derivative)(rows), want, rtol=1e-14)


def test_a_refusal_names_the_op_and_what_to_do():
    from adcompare.ops.registry import defop, raw

    unbatched = defop(
        "no_batch_rule_example",
        lambda x: np.asarray(x)[::-1].copy(),
        numpy=(),
        jvp=lambda out, x, x_dot: x_dot,
        vjp=lambda out, x, out_bar: out_bar,
    )
    # A rule given a parameter read from a batched value (as where's condition is).
    unique = defop(
        "numpy_rule_example",
        lambda x, scale: x * np.unique(scale)[0],
        numpy=(),
        prepare=lambda x, scale: {"scale": np.asanyarray(raw(scale))},
        batch=lambda args, batched, scale: args[0] * np.unique(scale)[0],
        jvp=lambda out, x, x_dot, scale: x_dot,
        vjp=lambda out, x, out_bar, scale: out_bar,
    )
    rows = np.ones((2, 3))
    try:
        with pytest.raises(TypeError, match=r"'no_batch_rule_example'.*Python loop.*batch="):
            ad.vmap(unbatched)(rows)
        with pytest.raises(TypeError, match=r"'numpy_rule_example'.*np.unique.*Python loop"):
            ad.vmap(lambda v: unique(v, scale=v))(rows)
        with pytest.raises(TypeError, match=r"np.unique.*adcompare's functions.*Python loop"):
            ad.vmap(lambda v: np.unique(raw(v)))(rows)
    finally:
        del OPS["no_batch_rule_example"], OPS["numpy_rule_example"]


# --- hypothesis: any op or composite, any mapped axes, against a loop ---------------------

VMAP_EXAMPLES = int(os.environ.get("ADCOMPARE_FUZZ_EXAMPLES", "25"))
CALLS = [*_op_calls(), *COMPOSITE_CALLS]


@st.composite
def mapped_calls(draw):
    """A call of the registry, which of its arguments are mapped (at least one), the axis
    each mapped one is stacked along, and the axis the batch takes in the output."""
    name, call, per_example = draw(st.sampled_from(CALLS))
    count = len(per_example[0])
    mapped = draw(st.lists(st.booleans(), min_size=count, max_size=count).filter(any))
    axes = [draw(st.integers(0, np.ndim(a))) if m else None for a, m in zip(per_example[0], mapped)]
    return name, call, per_example, axes, draw(st.integers(0, 1))


@settings(max_examples=VMAP_EXAMPLES, deadline=None, derandomize=True)
@given(mapped_calls())
def test_vmap_over_any_axes_of_any_call_matches_a_loop(case):
    name, call, per_example, axes, out_axis = case
    fn = _transformed(call, per_example, "f")
    # Shared arguments are the first example's, for every example.
    examples = [
        [args[i] if axis is not None else per_example[0][i] for i, axis in enumerate(axes)]
        for args in per_example
    ]
    stacked = [
        np.stack([args[i] for args in examples], axis=axis) if axis is not None else examples[0][i]
        for i, axis in enumerate(axes)
    ]
    got = ad.vmap(fn, in_axes=tuple(axes), out_axes=out_axis)(*stacked)
    want = np.stack([fn(*args) for args in examples], axis=out_axis)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
    gradient = _transformed(call, per_example, "grad-reverse")
    got = ad.vmap(gradient, in_axes=tuple(axes))(*stacked)
    for k, part in enumerate(_parts(got)):
        expected = np.stack([_parts(gradient(*args))[k] for args in examples])
        np.testing.assert_allclose(part, expected, rtol=1e-12, atol=1e-12, err_msg=name)
