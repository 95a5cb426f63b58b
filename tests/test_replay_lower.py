"""The replay's last pass: instructions written as subscripts, slice assignments and
direct numpy calls, with constants as arrays, and the same numbers as before."""

from __future__ import annotations

import re
import types

import numpy as np
import pytest

import adcompare as ad
from adcompare.adbench.lstm import lstm_objective
from adcompare.engines.replay import CompiledFunction, memory
from adcompare.engines.replay.lower import lower
from adcompare.engines.replay.passes import PASSES

from .test_replay_memory import rosenbrock, rosenbrock_gradient
from .test_replay_passes import assert_bit_identical

UNLOWERED = tuple(p for p in PASSES if p is not lower)


def gates(x):
    """An LSTM cell's shape of work: slices of one vector, sigmoids, a concatenation."""
    sigmoids = ad.sigmoid(x[:6])
    cell = sigmoids[:2] * ad.tanh(x[6:8]) + sigmoids[2:4]
    return ad.sum(ad.concatenate([cell, sigmoids[4:]]) * 0.5)


INPUTS = np.random.default_rng(0).standard_normal((5, 3))


def layer(w):
    """A dense layer over one flat vector of its weights and biases."""
    weights, bias = ad.reshape(w[:12], (3, 4)), w[12:]
    return ad.sum(ad.tanh(INPUTS @ weights + bias))


def _calls(compiled, name: str) -> int:
    return compiled.program.source.count(f"{name}(")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_indexing_and_scatters_are_written_inline_with_the_same_results(dtype):
    x = np.linspace(-1.0, 1.5, 8).astype(dtype)
    before = CompiledFunction(gates, 0, (x,), passes=UNLOWERED)
    after = ad.compile(gates, x)
    assert before.program.instructions == after.program.instructions
    # Unlowered, every slice is a call of the getitem op and every cotangent of one a
    # scatter into zeros; lowered, they are subscripts and slice assignments.
    assert _calls(before, "getitem") == 5 and _calls(after, "getitem") == 0
    assert _calls(before, "scatter_add") == 2 and _calls(after, "scatter_add") == 0
    assert _calls(before, "add_at") == 1 and _calls(after, "add_at") == 0
    assert "x[index]" in after.program.source
    assert _calls(after, "zeros") + _calls(after, "empty") == 2
    for point in (x, -x, np.zeros_like(x), np.array([-0.0] * 8, dtype)):
        assert_bit_identical(after.value_and_grad(point), before.value_and_grad(point))
        assert after.grad(point).dtype == dtype
    np.testing.assert_allclose(after.grad(x), ad.grad(gates)(x), rtol=1e-6)


def test_numbers_ufuncs_read_become_arrays_of_the_operands_dtype():
    f = lambda x: ad.sum(1.0 - 0.5 * x * x)
    x = np.linspace(-1.0, 1.0, 5)
    constants = [
        value for step in ad.compile(f, x).program.steps for kind, value in step.args if kind == "c"
    ]
    assert constants and all(type(c) is np.ndarray and c.dtype == np.float64 for c in constants)
    # An inexact conversion (0.1 in float32) keeps numpy's own handling of the number.
    f32 = ad.compile(lambda x: ad.sum(x * 0.1), x.astype(np.float32))
    assert any(
        value == 0.1 and type(value) is float
        for step in f32.program.steps
        for kind, value in step.args
        if kind == "c"
    )
    assert f32.grad(x.astype(np.float32)).dtype == np.float32


def test_a_large_scatter_writes_its_index_once_and_zeros_only_the_rest(monkeypatch):
    monkeypatch.setattr(memory, "IN_PLACE_FROM", 0)
    f = lambda x: ad.sum(ad.sin(x[1:3]))
    x = np.array([-0.0, 0.5, -0.0, 2.0])
    after = ad.compile(f, x)
    assert _calls(after, "empty") == 1 and _calls(after, "zeros") == 0
    gradient = after.grad(x)
    np.testing.assert_array_equal(gradient, [0.0, np.cos(0.5), 1.0, 0.0])
    assert_bit_identical(gradient, CompiledFunction(f, 0, (x,), passes=UNLOWERED).grad(x))


def test_a_scattered_part_is_computed_in_the_array_it_is_scattered_into(monkeypatch):
    # Rosenbrock's cotangent of x[:-1], -2(1 - x) - 400 x r, is scattered into the
    # gradient. Its memory was allocated by 1 - x[:-1] in the forward pass and written
    # over by the rules' products (out=): allocated as the gradient's slice instead, it
    # is never copied, and the program holds one large array fewer in the reverse sweep.
    monkeypatch.setattr(memory, "IN_PLACE_FROM", 0)
    x = np.linspace(-1.0, 1.5, 9)
    before = CompiledFunction(rosenbrock, 0, (x,), passes=UNLOWERED)
    after = ad.compile(rosenbrock, x)
    assert _calls(before, "scatter_add") == 1 and _calls(after, "scatter_add") == 0
    forms = [getattr(step.fn, "name", None) for step in after.program.steps]
    assert "scatter" not in forms and forms.count("allocate") == forms.count("into_slice") == 1
    # Allocated where 1 - x[:-1] was, in the forward pass, and that result written into it.
    assert forms.index("allocate") + 1 == forms.index("into_slice") < after.program.forward_steps
    assert after.program.instructions == before.program.instructions
    for point in (x, np.ones(9), np.array([1.0, 1.0, -0.0, 0.0, 2.0, 1.0, 1.0, 1.0, 1.0])):
        assert_bit_identical(after.value_and_grad(point), before.value_and_grad(point))
        np.testing.assert_allclose(after.grad(point), rosenbrock_gradient(point), rtol=1e-14)


def test_disjoint_pieces_of_a_sum_of_scatters_are_put_in_place_plus_zero():
    # Three disjoint pieces cover x: the gradient is allocated without zeros and each
    # piece is put in its place plus 0.0, as the sum of their scatters adds it: the
    # -0.0 of 2·(-0.0) becomes +0.0. Before lowering, the first piece is scattered
    # into zeros and the others are added in place, with +0.0 added over the first.
    f = lambda x: ad.sum(x[:3] ** 2) + ad.sum(ad.sin(x[3:5])) + ad.sum(x[5:] ** 3)
    x = np.array([-0.0, 0.0, -1.0, 0.5, 2.0, -0.0, 1.0])
    before = CompiledFunction(f, 0, (x,), passes=UNLOWERED)
    after = ad.compile(f, x)
    forms = [getattr(step.fn, "name", None) for step in after.program.steps]
    assert forms.count("put") == 2 and forms.count("add_at") == 0
    assert _calls(after, "zeros") == 0 and "] = 0" not in after.program.source
    assert _calls(before, "add_at") == 2
    for point in (x, -x, np.full(7, -0.0)):
        gradient = after.grad(point)
        assert_bit_identical(gradient, before.grad(point))
        assert not np.signbit(gradient[gradient == 0]).any()  # no -0.0 left


def _interpret(compiled, *args):
    """Run the program's instructions by calling their functions, not the generated code."""
    program = compiled.program
    values = dict(zip(program._inputs, args)) | program._externals
    read = lambda spec: values[spec[1]] if spec[0] == "s" else spec[1]
    for step in program.steps:
        if hasattr(step, "fn"):
            kwargs = {name: read(spec) for name, spec in step.kwargs}
            values[step.out] = step.fn(*(read(spec) for spec in step.args), **kwargs)
    return tuple(np.asarray(read(spec)) for spec in program._outputs)


@pytest.mark.parametrize(
    "f, x",
    [
        (gates, np.linspace(-1.0, 1.5, 8)),
        (rosenbrock, np.array([1.0, 1.0, -0.0, 0.0, 2.0, 1.0, 1.0, 1.0, 1.0])),
        (lambda x: ad.sum(x[:3] ** 2) + ad.sum(ad.sin(x[3:5])) + ad.sum(x[5:]), -np.ones(7)),
        (layer, np.linspace(-1.0, 1.0, 16)),
    ],
)
def test_each_form_called_as_a_function_computes_what_its_line_does(f, x, monkeypatch):
    monkeypatch.setattr(memory, "IN_PLACE_FROM", 0)  # every form, the large ones too
    compiled = ad.compile(f, x)
    assert any(hasattr(step.fn, "write") for step in compiled.program.steps)
    assert_bit_identical(_interpret(compiled, x.copy()), compiled.value_and_grad(x))


def test_a_weight_gradient_is_multiplied_out_in_its_place_in_the_gradient():
    # The weights' cotangent, inputsᵀ @ δ, is reshaped and put into the flat gradient:
    # matmul writes it there (out=), then adds the zero the sum of scatters adds.
    w = np.linspace(-1.0, 1.0, 16)
    before = CompiledFunction(layer, 0, (w,), passes=UNLOWERED)
    after = ad.compile(layer, w)
    forms = [getattr(step.fn, "name", None) for step in after.program.steps]
    assert forms.count("product_into") == 1 and forms.count("alias") + forms.count("put") >= 1
    assert after.program.instructions == before.program.instructions - 1  # the reshape
    for point in (w, -w, np.zeros(16), np.full(16, -0.0)):
        assert_bit_identical(after.value_and_grad(point), before.value_and_grad(point))
    np.testing.assert_allclose(after.grad(w), ad.grad(layer)(w), rtol=1e-13)


def test_a_small_lstm_replays_calling_numpy_alone():
    # ADBench's LSTM on a few bits: slices of one parameter vector, gates, scatters of
    # their cotangents. Lowered, every call in the replay is numpy's own (a ufunc or a
    # numpy function): no Python function stands between a line and numpy.
    rng = np.random.default_rng(0)
    layers, bits, characters = 2, 3, 4
    state = rng.standard_normal((layers, 2, bits))
    sequence = np.eye(bits)[rng.integers(0, bits, characters)]

    def loss(params):
        main = ad.reshape(params[: 8 * layers * bits], (layers, 8 * bits))
        extra = ad.reshape(params[8 * layers * bits :], (3, bits))
        return lstm_objective(main, extra, state, sequence)

    x = rng.standard_normal(8 * layers * bits + 3 * bits) * 0.5
    before = CompiledFunction(loss, 0, (x,), passes=UNLOWERED)
    after = ad.compile(loss, x)

    def python_calls(compiled) -> int:
        namespace = compiled.program.run.__globals__
        called = re.findall(r"(\w+)\(", compiled.program.source.split("# forward pass")[1])
        return sum(isinstance(namespace.get(name), types.FunctionType) for name in called)

    assert python_calls(before) > 100 and python_calls(after) == 0
    assert after.program.instructions == before.program.instructions
    assert_bit_identical(after.value_and_grad(x * 0.9), before.value_and_grad(x * 0.9))
    np.testing.assert_allclose(after.grad(x), ad.grad(loss)(x), rtol=1e-12)
