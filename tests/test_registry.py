"""The op record is the single source: every op is exported, reachable from numpy's names
for it, accepted by command-line formulas where one can write it, and has a replay and a
complex status, all read from its record."""

from __future__ import annotations

import builtins
import importlib
import inspect
import operator

import numpy as np
import pytest

import adcompare as ad
from adcompare.cli import expr
from adcompare.engines.box import _numpy_name
from adcompare.ops import COMPOSITES, OPS
from adcompare.ops.registry import ARRAY_ONLY, HOLOMORPHIC, NUMPY_NAMES
from tests.opcases import domain_of, draw

BUILT_IN = [op for op in OPS.values() if op.built_in]
# An op whose name starts with "_" is a composite's fast path, not a public function.
PUBLIC = {name: op.api for name, op in OPS.items() if not name.startswith("_")} | {
    name: composite.fn for name, composite in COMPOSITES.items()
}
ids = lambda op: op.name


def _numpy_function(name: str):
    found = np
    if name.startswith("scipy."):  # scipy.special's ufuncs
        found = importlib.import_module(name.rpartition(".")[0])
        name = name.rpartition(".")[2]
    for part in name.split("."):
        found = getattr(found, part, None)
    return found


def _sample(op, seed=0):
    """Arguments for ``op``: its first test case, or one standard shape per argument."""
    if op.elementwise:
        return draw(op, [(3,)] * op.nargs, op.test_params, seed)
    shapes, params = op.cases[0]
    return draw(op, shapes, params, seed)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_op_and_composite_is_exported_at_the_top_level(name):
    assert getattr(ad.ops, name) is PUBLIC[name]
    assert getattr(ad, name) is PUBLIC[name]
    assert name in ad.__all__


@pytest.mark.parametrize("numpy_name", sorted(NUMPY_NAMES))
def test_every_numpy_name_is_a_numpy_function_that_dispatches_to_its_op(numpy_name):
    func = _numpy_function(numpy_name)
    assert callable(func), f"np.{numpy_name} does not exist"
    # The name the boxes' numpy protocols compute for the function leads back to the op.
    assert NUMPY_NAMES[_numpy_name(func)] is NUMPY_NAMES[numpy_name]


@pytest.mark.parametrize("op", [op for op in BUILT_IN if op.numpy], ids=ids)
def test_calling_numpy_on_tensors_runs_the_op_and_keeps_the_derivative(op):
    args, params = _sample(op)
    if op.name == "where":  # numpy's signature puts the condition first
        call = lambda f, *xs: f(params["cond"], *xs)
    elif op.name == "concatenate":
        call = lambda f, *xs: f(list(xs), **params)
    elif _constants_first(op, params):  # scipy's order: scipy.special.iv(v, x)
        names = [name for name in inspect.signature(op.api).parameters if name in params]
        call = lambda f, *xs: f(*(params[name] for name in names), *xs)
    else:
        call = lambda f, *xs: f(*xs, **params)
    expected = call(op.api, *args)
    for numpy_name in op.numpy:
        tensors = [ad.Tensor(a, requires_grad=True) for a in args]
        out = call(_numpy_function(numpy_name), *tensors)
        assert isinstance(out, ad.Tensor) and out.requires_grad, numpy_name
        np.testing.assert_array_equal(out.detach().numpy(), expected)


def _constants_first(op, params) -> bool:
    """Whether the op's public function takes its static parameters before its arrays."""
    names = list(inspect.signature(op.api).parameters)
    return bool(names) and names[0] in params


@pytest.mark.parametrize("op", [op for op in BUILT_IN if op.operators], ids=ids)
def test_python_operators_on_tensors_run_the_op_the_record_names(op):
    args, _ = _sample(op)
    tensors = [ad.Tensor(a) for a in args]
    spelled = {
        "__add__": operator.add,
        "__sub__": operator.sub,
        "__mul__": operator.mul,
        "__truediv__": operator.truediv,
        "__pow__": operator.pow,
        "__matmul__": operator.matmul,
        "__mod__": operator.mod,
        "__neg__": operator.neg,
        "__abs__": builtins.abs,
    }[op.operators[0]]
    np.testing.assert_array_equal(spelled(*tensors).numpy(), op.value(*args))
    if len(op.operators) == 2:  # the reflected form, with a plain left operand
        np.testing.assert_array_equal(spelled(args[0], tensors[1]).numpy(), op.value(*args))


@pytest.mark.parametrize("op", [op for op in BUILT_IN if op.cli], ids=ids)
def test_every_op_a_formula_can_spell_is_accepted_by_the_cli(op):
    names = "xy"[: op.nargs]
    formula = expr.parse_expression(f"{op.name}({', '.join(names)})")
    point = [0.5 * sum(domain_of(op, i)) + 0.1 for i in range(op.nargs)]
    assert formula(*point) == pytest.approx(op.value(*point), rel=1e-15)


def test_composites_that_say_so_are_accepted_by_the_cli():
    accepted = {name for name, composite in COMPOSITES.items() if composite.cli}
    assert accepted <= set(expr.FUNCTIONS)
    assert {"sigmoid", "softplus", "square"} <= accepted


@pytest.mark.parametrize("op", BUILT_IN, ids=ids)
def test_every_op_has_a_replay_status_and_its_scalar_kernel_agrees(op):
    assert op.replay is ARRAY_ONLY or callable(op.replay), f"{op.name} has no replay status"
    if not callable(op.replay):
        return
    args, params = _sample(op, seed=1)
    single = [np.asarray(a).ravel()[:1].reshape(()) for a in args]
    scalar_params = {k: v for k, v in params.items() if k == "cond"}
    if "cond" in scalar_params:
        scalar_params["cond"] = bool(np.asarray(params["cond"]).ravel()[0])
    if op.elementwise:
        expected = op.value(*single, **scalar_params)
    elif not params:  # matmul of one-element operands, reductions over all axes
        expected = op.api(*[a.reshape((1,) * np.ndim(b)) for a, b in zip(single, args)])
    else:
        expected = single[0]  # shape ops and reductions of one element keep the number
    got = op.replay(*[float(a) for a in single], **scalar_params)
    assert got == pytest.approx(float(np.ravel(expected)[0]), rel=1e-15)


@pytest.mark.parametrize("op", BUILT_IN, ids=ids)
def test_every_op_declares_its_complex_support(op):
    assert op.complex == HOLOMORPHIC or (isinstance(op.complex, str) and op.complex), (
        f"{op.name} declares no complex support"
    )


@pytest.mark.parametrize(
    "op", [op for op in BUILT_IN if op.elementwise and op.complex == HOLOMORPHIC], ids=ids
)
def test_holomorphic_ops_agree_with_the_complex_step(op):
    # For an analytic op, Im f(x + ih) / h is f'(x) to rounding: an independent check of
    # the claim, against the reverse engine's derivative along each argument.
    args, params = _sample(op, seed=2)
    step = 1e-30
    for i in range(op.nargs):
        shifted = [a + 1j * step if j == i else a for j, a in enumerate(args)]
        expected = np.imag(op.value(*shifted, **params)) / step
        partial = ad.grad(lambda *xs: ad.sum(op.fn(*xs, **params)), argnums=i)(*args)
        np.testing.assert_allclose(partial, expected, rtol=1e-12, atol=1e-12)


def test_complex_input_to_a_real_only_op_raises_naming_the_op():
    with pytest.raises(ad.ComplexNotSupportedError, match="erf is computed for real numbers"):
        ad.erf(np.array([0.5 + 0.1j]))


def test_a_misspelt_defop_field_is_refused_naming_the_fields():
    with pytest.raises(TypeError, match=r"unknown field\(s\) \['domian'\].*'domain'"):
        ad.ops.defop(
            "misspelt_example",
            np.sin,
            jvp=lambda out, x, x_dot: ad.cos(x) * x_dot,
            vjp=lambda out, x, out_bar: out_bar * ad.cos(x),
            domian=(0.0, 1.0),
        )
    assert "misspelt_example" not in OPS


def test_defop_fills_in_the_defaults_that_depend_on_the_op():
    op = OPS["sin"]
    assert (op.label, op.numpy, op.saves) == ("Sin", ("sin",), frozenset({"args"}))
    assert op.hints.into is not None  # a ufunc's value writes into a buffer
    assert OPS["where"].hints.into is None and OPS["add"].operators == ("__add__", "__radd__")
