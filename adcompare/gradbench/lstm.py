"""GradBench's ``lstm`` eval: ADBench's LSTM loss and its gradient.

The mathematics is :mod:`adcompare.adbench.lstm`; GradBench's input is the
same model laid out as rows: ``main_params`` (2l × 4b: per layer its weight
row then its bias row), ``extra_params`` (3 × b), ``state`` (2l × b: per
layer hidden then cell) and ``sequence`` (c × b bits). The gradient is sent
flat, 8lb + 3b numbers: ``main_params`` row by row, then ``extra_params``.
``objective`` is the hand-written numpy form
(:func:`~adcompare.adbench.plain.lstm_objective_numpy`); ``jacobian`` answers
in reverse mode, forward mode (8lb + 3b lanes) or replay, the mode ``auto``
stands for: one character's step recorded by :func:`adcompare.compile`
(once per l and b, in milliseconds) and replayed along the sequence and back,
reverse mode's gradient bit for bit (:func:`_replayed_gradient`).

Workloads are generated (:func:`~adcompare.adbench.generate.generate_lstm`):
GradBench reads its characters from a text file adcompare does not ship, so
the sequence here encodes generated text (printable ASCII drawn uniformly),
14 bits per character as GradBench's.

>>> prepared = EVAL.prepare({**EVAL.workloads()[0].make(), "sequence": [[0.0] * 14] * 3})
>>> len(EVAL.encode("jacobian", EVAL.functions["jacobian"](prepared, "reverse")))
266
"""

from __future__ import annotations

import numpy as np

import adcompare as ad
from adcompare.adbench.generate import generate_lstm
from adcompare.adbench.lstm import LSTMProblem, character_step
from adcompare.adbench.lstm_format import LSTMData
from adcompare.adbench.plain import lstm_objective_numpy
from adcompare.adbench.records import json_array, json_object
from adcompare.adbench.tokens import FormatError
from adcompare.gradbench.evals import Workload
from adcompare.gradbench.inputs import RUNS, chain_gradient, objective_and_jacobian

__all__ = ["BITS", "EVAL", "SIZES"]

#: GradBench's default (l, c) pairs, in its order.
SIZES = ((2, 1024), (4, 1024), (6, 1024), (2, 4096), (2, 8192), (4, 4096), (6, 4096),
         (4, 8192), (6, 8192))  # fmt: skip
#: Bits per character.
BITS = 14

_REPLAYS: dict = {}


def _rows(record: dict, key: str) -> tuple[int, int]:
    """The shape of ``record[key]``, a non-empty list of equally long lists."""
    value = record.get(key)
    if not isinstance(value, list) or not value or not isinstance(value[0], list):
        raise FormatError(f"lstm: {key!r} is missing or not a list of rows; send a 2-D array")
    return len(value), len(value[0])


def _prepare(value) -> LSTMProblem:
    record = json_object(value, "lstm", "an object with main_params, extra_params, state, sequence")
    rows, columns = _rows(record, "main_params")
    if rows % 2 or columns % 4:
        raise FormatError(
            f"lstm: 'main_params' has shape ({rows}, {columns}); send 2l rows of 4b numbers "
            "(a weight row and a bias row per layer)"
        )
    layers, bits = rows // 2, columns // 4
    characters = _rows(record, "sequence")[0]
    if characters < 2:
        raise FormatError(
            f"lstm: 'sequence' has {characters} character; send at least 2 (each predicts the next)"
        )
    data = LSTMData(
        main_params=json_array(record, "main_params", (rows, columns), "lstm").reshape(layers, -1),
        extra_params=json_array(record, "extra_params", (3, bits), "lstm"),
        state=json_array(record, "state", (rows, bits), "lstm").reshape(layers, 2, bits),
        sequence=json_array(record, "sequence", (characters, bits), "lstm"),
    )
    return LSTMProblem(data, name="lstm")


def _objective(problem: LSTMProblem, mode: str) -> float:
    return float(lstm_objective_numpy(problem, problem.params))


def _gradient(problem: LSTMProblem, mode: str) -> np.ndarray:
    if mode == "replay":
        return _replayed_gradient(problem)
    return ad.grad(problem.objective, mode=mode)(problem.params)


def _step_adjoint(*arguments):
    """⟨new hidden, hidden bars⟩ + ⟨new cell, cell bars⟩ + loss bar · the character's
    log-likelihood: its gradient is one character's step taken backwards.

    The arguments are each layer's weights, then each layer's biases (4b each), the
    three extra rows, each layer's hidden then cell state, the character and the next,
    each layer's hidden then cell bar, and the loss bar: one array a row, so the replay
    neither slices the parameters nor assembles the state and the gradients.
    """
    layers = (len(arguments) - 6) // 6
    weights, biases = arguments[:layers], arguments[layers : 2 * layers]
    in_weight, out_weight, out_bias = arguments[2 * layers : 2 * layers + 3]
    state = arguments[2 * layers + 3 : 4 * layers + 3]
    hidden, cell = list(state[:layers]), list(state[layers:])
    now, following = arguments[4 * layers + 3 : 4 * layers + 5]
    bars, loss_bar = arguments[4 * layers + 5 : 6 * layers + 5], arguments[-1]
    term = character_step(
        weights, biases, out_weight, out_bias, now * in_weight, hidden, cell, following
    )
    total = term * loss_bar
    for j in range(layers):
        total = total + ad.sum(hidden[j] * bars[j]) + ad.sum(cell[j] * bars[layers + j])
    return total


def _replayed_gradient(problem: LSTMProblem) -> np.ndarray:
    """The gradient by one recorded character, replayed along the sequence and back
    (:func:`~adcompare.gradbench.inputs.chain_gradient` of :func:`_step_adjoint`):
    reverse mode's gradient bit for bit, recorded in milliseconds where the whole
    chain (hundreds of thousands of instructions) would take seconds to minutes."""
    data = problem.data
    layers, characters, bits = data.sizes
    sequence = data.sequence
    main, extra = problem.split(problem.params)
    rows = (*main[:, : 4 * bits], *main[:, 4 * bits :], *extra)
    state = (*data.state[:, 0], *data.state[:, 1])
    gradient = chain_gradient(
        _REPLAYS,
        (layers, bits),
        _step_adjoint,
        rows,
        state,
        characters - 1,
        lambda t: (sequence[t], sequence[t + 1]),
        tuple(np.zeros(bits) for _ in state),
        (-1.0 / float((characters - 1) * bits),),
    )
    weights, biases = gradient[:layers], gradient[layers : 2 * layers]
    by_main = [part for j in range(layers) for part in (weights[j], biases[j])]
    return np.concatenate([*by_main, *gradient[2 * layers :]])


def _encode(function: str, result):
    return float(result) if function == "objective" else result.tolist()


def _input(data: LSTMData) -> dict:
    layers, _, bits = data.sizes
    return {
        "main_params": data.main_params.reshape(2 * layers, 4 * bits).tolist(),
        "extra_params": data.extra_params.tolist(),
        "state": data.state.reshape(2 * layers, bits).tolist(),
        "sequence": data.sequence.tolist(),
        **RUNS,
    }


def _workload(layers: int, characters: int) -> Workload:
    return Workload(
        f"l={layers},c={characters}", lambda: _input(generate_lstm(layers, characters, BITS))
    )


def _workloads() -> tuple[Workload, ...]:
    return tuple(_workload(layers, characters) for layers, characters in SIZES)


def _harness_objective(problem):
    """The objective of the flat parameter vector, as the harness measures it."""
    return problem.objective, (problem.params,)


EVAL = objective_and_jacobian(
    "lstm", _prepare, _objective, _gradient, _encode, _workloads, _harness_objective, "replay"
)
