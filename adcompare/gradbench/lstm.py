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


def _step_adjoint(main_params, extra_params, hidden, cell, now, following, *bars):
    """⟨new hidden, hidden bar⟩ + ⟨new cell, cell bar⟩ + loss bar · the character's
    log-likelihood: its gradient is one character's step taken backwards."""
    layers, bits = np.shape(main_params)[0], np.shape(now)[0]
    hidden = [hidden[j] for j in range(layers)]
    cell = [cell[j] for j in range(layers)]
    term = character_step(
        [main_params[j, : 4 * bits] for j in range(layers)],
        [main_params[j, 4 * bits :] for j in range(layers)],
        extra_params[1], extra_params[2], now * extra_params[0], hidden, cell, following,
    )  # fmt: skip
    hidden_bar, cell_bar, loss_bar = bars
    total = term * loss_bar
    for j in range(layers):  # row by row: numpy's stack is a Python loop of expand_dims
        total = total + ad.sum(hidden[j] * hidden_bar[j]) + ad.sum(cell[j] * cell_bar[j])
    return total


def _replayed_gradient(problem: LSTMProblem) -> np.ndarray:
    """The gradient by one recorded character, replayed along the sequence and back
    (:func:`~adcompare.gradbench.inputs.chain_gradient` of :func:`_step_adjoint`):
    reverse mode's gradient bit for bit, recorded in milliseconds where the whole
    chain (hundreds of thousands of instructions) would take seconds to minutes."""
    data = problem.data
    layers, characters, bits = data.sizes
    sequence = data.sequence
    by_main, by_extra = chain_gradient(
        _REPLAYS,
        (layers, bits),
        _step_adjoint,
        problem.split(problem.params),
        (data.state[:, 0], data.state[:, 1]),
        characters - 1,
        lambda t: (sequence[t], sequence[t + 1]),
        (np.zeros((layers, bits)), np.zeros((layers, bits))),
        (-1.0 / float((characters - 1) * bits),),
    )
    return np.concatenate([by_main.ravel(), by_extra.ravel()])


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
