"""What a recording builds: the passes run once, over the value-and-gradient program, and
the value program is its forward part; where the recording is small enough to keep, the
value program is written and the peak live bytes measured when first asked for, with
the same programs, numbers and statistics as when made at once."""

from __future__ import annotations

import cProfile
import gc
import os
import pstats

import numpy as np
import pytest

import adcompare as ad
from adcompare.adbench.generate import generate_lstm
from adcompare.adbench.lstm import lstm_objective
from adcompare.engines.replay import CompileError, codegen


def rosenbrock(x):
    return ad.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _lstm_case(layers: int = 2, characters: int = 6):
    """A small LSTM loss (3 bits a character) and its arguments: scatters, slices, sums."""
    data = generate_lstm(layers, characters, 3)
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
def counted(monkeypatch) -> dict:
    """How often, from now on, the passes optimise a program and a program is written."""
    counts = {"optimised": 0, "generate": 0}
    for name in counts:
        original = getattr(codegen, name)

        def count(*args, _original=original, _name=name, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(codegen, name, count)
    return counts


@pytest.mark.parametrize("name", CASES)
def test_the_passes_run_once_and_the_value_program_is_written_at_the_first_call(counted, name):
    f, args = CASES[name]
    compiled = ad.compile(f, *args)
    x = args[0] + 0.25
    for _ in range(3):
        value, gradient = compiled.value_and_grad(x, *args[1:])
    assert counted == {"optimised": 1, "generate": 1}  # the full program alone
    for _ in range(3):
        called = compiled(x, *args[1:])
    assert counted == {"optimised": 1, "generate": 2} and compiled.recordings == 1
    assert np.asarray(called).tobytes() == np.asarray(value).tobytes()
    assert float(called) == float(f(x, *args[1:]))
    np.testing.assert_allclose(gradient, ad.grad(f)(x, *args[1:]), rtol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_a_kept_recording_measures_what_a_freed_one_measures_at_once(monkeypatch, name):
    f, args = CASES[name]
    kept = ad.compile(f, *args)
    monkeypatch.setattr(codegen, "KEPT_RECORDING_BYTES", -1)  # every recording too large
    freed = ad.compile(f, *args)
    assert freed.program._unmeasured is None and kept.program._unmeasured is not None
    assert freed._latest._value is not None and kept._latest._value is None
    assert kept.stats() == freed.stats() and kept.stats()[-1].name == "peak live bytes"
    assert kept.program._unmeasured is None  # measured, and the recording let go
    assert kept.program.source == freed.program.source
    x = args[0] + 0.25
    for a, b in zip(kept.value_and_grad(x, *args[1:]), freed.value_and_grad(x, *args[1:])):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert np.asarray(kept(x, *args[1:])).tobytes() == np.asarray(freed(x, *args[1:])).tobytes()
    assert kept._latest[0].source == freed._latest[0].source


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


def _calls_while_compiling(characters: int) -> tuple[int, dict]:
    """The instructions of the LSTM's program at ``characters``, and how often each
    function of the replay package ran while compiling it."""
    loss, args = _lstm_case(1, characters)
    profile = cProfile.Profile()
    profile.enable()
    compiled = ad.compile(loss, *args)
    profile.disable()
    calls = {
        (path, line, function): counts[1]
        for (path, line, function), counts in pstats.Stats(profile).stats.items()
        if f"engines{os.sep}replay{os.sep}" in path
    }
    return compiled.program.instructions, calls


def test_the_work_of_recording_and_every_pass_grows_with_the_program_alone():
    # Counted calls, not time: a pass that scanned the program once per instruction
    # would call its helpers (instructions)² times, here 16 times as often, not 4.
    small, few = _calls_while_compiling(8)
    large, many = _calls_while_compiling(32)
    growth = large / small
    assert 3.5 < growth < 4.5
    for function, count in many.items():
        assert count <= 1.2 * growth * few.get(function, 0) + 20, function
