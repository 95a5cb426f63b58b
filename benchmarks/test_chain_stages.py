"""A chain of steps differentiated backwards: each step's forward pass run again on the way
back, or kept from the way forward (staged replay), grouped per workload.

``recompute`` records the step's adjoint twice, as issue 32's first chain replay did:
once to replay the forward pass (its gradient in the bars is the new state), once to
replay the sweep, which runs the step's forward pass again before its adjoint.
``staged`` is :func:`adcompare.gradbench.inputs.chain_gradient`: one recording, run
in two stages, the first keeping what the second reads. Both give reverse mode's
gradient (checked before timing: bit for bit for lstm, within 4 ulps for ode). One
BLAS thread::

    pytest benchmarks/test_chain_stages.py --benchmark-enable
"""

from __future__ import annotations

import numpy as np
import pytest

from adcompare.gradbench import get_eval, inputs
from adcompare.gradbench import lstm as lstm_eval
from adcompare.gradbench import ode as ode_eval

#: Workloads timed, by eval and position in its list.
WORKLOADS = {"lstm": (0, 3), "ode": (3, 7)}


def recomputed_chain(
    cache, key, adjoint, params, start, steps, step_inputs, last_bars, constants=()
):
    """The chain's gradient with the forward pass replayed again inside each step's sweep."""
    p, k = len(params), len(start)
    example = (*params, *start, *step_inputs(0), *last_bars, *constants)
    first_bar = len(example) - len(constants) - len(last_bars)
    bars_at = tuple(range(first_bar, first_bar + k))
    forward = inputs.replayed(cache, (key, "forward"), adjoint, *example, argnums=bars_at)
    sweep = inputs.replayed(cache, (key, "sweep"), adjoint, *example, argnums=tuple(range(p + k)))
    states = [start]
    for t in range(steps - 1):
        states.append(forward.grad(*params, *states[-1], *step_inputs(t), *last_bars, *constants))
    total = [np.zeros_like(q) for q in params]
    bars = last_bars
    for t in range(steps - 1, -1, -1):
        found = sweep.grad(*params, *states[t], *step_inputs(t), *bars, *constants)
        for share, g in zip(total, found[:p]):
            share += g
        bars = found[p:]
    return total


def _cases():
    for name, positions in WORKLOADS.items():
        for position in positions:
            for strategy in ("recompute", "staged"):
                yield pytest.param(name, position, strategy, id=f"{name}-{position}-{strategy}")


@pytest.mark.parametrize(("name", "position", "strategy"), list(_cases()))
def test_chain(benchmark, monkeypatch, name, position, strategy):
    ev = get_eval(name)
    workload = ev.workloads()[position]
    prepared = ev.prepare(workload.make())
    gradient = ev.functions[ev.derivative]
    module = {"lstm": lstm_eval, "ode": ode_eval}[name]
    module._REPLAYS.clear()
    reverse = gradient(prepared, "reverse")
    if strategy == "recompute":
        monkeypatch.setattr(module, "chain_gradient", recomputed_chain)
    replayed = gradient(prepared, "replay")
    if name == "lstm":
        assert replayed.tobytes() == reverse.tobytes()
    else:
        assert np.max(np.abs(replayed - reverse) / np.spacing(np.abs(reverse))) <= 4.0
    benchmark.group = f"chain {name} {workload.description}"
    benchmark.extra_info.update(eval=name, workload=workload.description, strategy=strategy)
    benchmark(gradient, prepared, "replay")
