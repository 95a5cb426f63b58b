"""What a recording builds, and when: the gradient program at once; the value program
and the peak live bytes when first asked for, where the recording is small enough to
keep; the same programs, numbers and statistics either way."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import adcompare as ad
from adcompare.adbench.generate import generate_lstm
from adcompare.adbench.lstm import lstm_objective
from adcompare.engines.replay import CompileError, codegen


def rosenbrock(x):
    return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _lstm_case():
    """A small LSTM loss (2 layers, 6 characters, 3 bits): scatters, slices, sums."""
    data = generate_lstm(2, 6, 3)
    layers, _, bits = data.sizes

    def loss(params, state, sequence):
        main = ad.reshape(params[: 8 * layers * bits], (layers, 8 * bits))
        extra = ad.reshape(params[8 * layers * bits :], (3, bits))
        return lstm_objective(main, extra, state, sequence)

    params = np.concatenate([data.main_params.ravel(), data.extra_params.ravel()])
    return loss, (params, data.state, data.sequence)


CASES = {
    "rosenbrock": (rosenbrock, (np.linspace(-1.0, 1.5, 7),)),
    "lstm": _lstm_case(),
}


@pytest.fixture
def built(monkeypatch) -> list:
    """The programs built from now on, in order (each a ``codegen.Program``)."""
    programs = []

    class Counted(codegen.Program):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            programs.append(self)

    monkeypatch.setattr(codegen, "Program", Counted)
    return programs


@pytest.mark.parametrize("name", CASES)
def test_a_gradient_builds_one_program_and_the_first_call_builds_the_value_program(built, name):
    f, args = CASES[name]
    compiled = ad.compile(f, *args)
    for _ in range(3):
        compiled.grad(*args)
    assert len(built) == 1  # the value and gradient program alone
    for _ in range(3):
        value = compiled(*args)
    assert len(built) == 2 and compiled.recordings == 1
    assert float(value) == float(f(*args))


@pytest.mark.parametrize("name", CASES)
def test_a_kept_recording_builds_what_a_freed_one_builds_at_once(monkeypatch, built, name):
    f, args = CASES[name]
    kept = ad.compile(f, *args)
    monkeypatch.setattr(codegen, "KEPT_RECORDING_BYTES", -1)  # every recording too large
    freed = ad.compile(f, *args)
    assert len(built) == 3  # the kept one's gradient program; the freed one's two
    x = args[0] + 0.25
    for a, b in zip(kept.value_and_grad(x, *args[1:]), freed.value_and_grad(x, *args[1:])):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert np.asarray(kept(x, *args[1:])).tobytes() == np.asarray(freed(x, *args[1:])).tobytes()
    assert kept.stats() == freed.stats() and kept.stats()[-1].name == "peak live bytes"
    assert kept.program.source == freed.program.source
    reference = ad.value_and_grad(f)(x, *args[1:])
    np.testing.assert_allclose(freed.value_and_grad(x, *args[1:])[1], reference[1], rtol=1e-12)


def test_the_cycle_collector_runs_again_after_a_recording_even_a_refused_one():
    assert gc.isenabled()
    ad.compile(rosenbrock, np.ones(4))
    assert gc.isenabled()
    with pytest.raises(CompileError):
        ad.compile(lambda x: ad.sum(x).tolist(), np.ones(3))
    assert gc.isenabled()
    gc.disable()
    try:  # a caller's own choice stays
        ad.compile(rosenbrock, np.ones(4))
        assert not gc.isenabled()
    finally:
        gc.enable()
