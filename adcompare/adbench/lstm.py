"""ADBench's LSTM objective, written once against the op set.

ADBench's "LSTM" has diagonal weights: each gate of each unit sees one
input value. For layer j with weights W and biases B (four blocks each) and
the layer's input ``x``:

    forget = σ(x·W_f + B_f)     input  = σ(h·W_i + B_i)
    output = σ(x·W_o + B_o)     change = tanh(h·W_c + B_c)
    cell   = cell·forget + input·change
    h      = output·tanh(cell)

The first layer's input is ``character_t · in_weight``; each later layer's
is the previous layer's new h. The prediction is ``h_last · out_weight +
out_bias``, normalised by ADBench's logsumexp, which adds 2 inside the
logarithm (a quirk kept so that the numbers match). The objective is minus
the mean over all c − 1 steps and b bits of ``character_{t+1} ·
(prediction − logsumexp)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import adcompare as ad
from adcompare.adbench.flat import FlatParameters
from adcompare.adbench.lstm_format import LSTMData
from adcompare.ops.registry import shape_of

__all__ = ["LSTMProblem", "character_step", "layer_step", "lstm_objective"]


def layer_step(weight, bias, layer_input, hidden, cell, bits: int):
    """One time step of one layer: the new hidden and cell states.

    >>> import numpy as np
    >>> zeros = np.zeros(4)  # every gate ½: c = ½·2, h = ½·tanh(1)
    >>> hidden, cell = layer_step(zeros, zeros, zeros[:1], zeros[:1], np.array([2.0]), 1)
    >>> print(cell, np.round(hidden, 4))
    [1.] [0.3808]
    """
    gates = ad.concatenate([layer_input, hidden, layer_input, hidden]) * weight + bias
    sigmoids = ad.sigmoid(gates[: 3 * bits])
    change = ad.tanh(gates[3 * bits :])
    cell = cell * sigmoids[:bits] + sigmoids[bits : 2 * bits] * change
    hidden = sigmoids[2 * bits :] * ad.tanh(cell)
    return hidden, cell


def lstm_objective(main_params, extra_params, state: np.ndarray, sequence: np.ndarray):
    """ADBench's LSTM loss of ``main_params`` (l, 8b) and ``extra_params`` (3, b).

    >>> import numpy as np
    >>> bits = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> loss = lstm_objective(np.zeros((1, 16)), np.zeros((3, 2)), np.zeros((1, 2, 2)), bits)
    >>> print(round(float(loss), 12), round(np.log(4.0) / 2, 12))  # −(0 − log(2 + 2))/2
    0.69314718056 0.69314718056
    """
    layers, bits = shape_of(main_params)[0], sequence.shape[1]
    weights = [main_params[j, : 4 * bits] for j in range(layers)]
    biases = [main_params[j, 4 * bits :] for j in range(layers)]
    hidden = [state[j, 0] for j in range(layers)]
    cell = [state[j, 1] for j in range(layers)]
    in_weight, out_weight, out_bias = extra_params[0], extra_params[1], extra_params[2]
    log_likelihood = 0.0
    # The loss is summed step by step, as ADBench does: stacking the c − 1
    # predictions first would cost the forward engine O(c²) in concatenate.
    for t in range(sequence.shape[0] - 1):
        log_likelihood = log_likelihood + character_step(
            weights, biases, out_weight, out_bias, sequence[t] * in_weight, hidden, cell,
            sequence[t + 1],
        )  # fmt: skip
    return -log_likelihood / float((sequence.shape[0] - 1) * bits)


def character_step(weights, biases, out_weight, out_bias, layer_input, hidden, cell, following):
    """One character through every layer: ``hidden`` and ``cell`` (lists, a row per
    layer) are updated in place, and the log-likelihood of ``following`` is returned.

    >>> import numpy as np
    >>> hidden, cell = [np.zeros(2)], [np.zeros(2)]
    >>> term = character_step([np.zeros(8)], [np.zeros(8)], np.zeros(2), np.zeros(2),
    ...                       np.ones(2), hidden, cell, np.array([1.0, 0.0]))
    >>> print(round(float(term), 12), round(-np.log(4.0), 12))  # 0 − log(2 + 2)
    -1.38629436112 -1.38629436112
    """
    bits = shape_of(layer_input)[0]
    for j in range(len(weights)):
        hidden[j], cell[j] = layer_step(
            weights[j], biases[j], layer_input, hidden[j], cell[j], bits
        )
        layer_input = hidden[j]
    predicted = layer_input * out_weight + out_bias
    normaliser = ad.log(ad.sum(ad.exp(predicted)) + 2.0)
    return ad.sum(following * (predicted - normaliser))


@dataclass
class LSTMProblem(FlatParameters):
    """An LSTM instance as a function of ONE flat parameter vector.

    ``params`` holds the main parameters (layer by layer: 4 weight blocks,
    4 bias blocks) then the extra parameters. ``reference`` holds
    ``{"objective", "gradient"}`` when known.

    >>> from adcompare.adbench import bundled
    >>> problem = bundled("adbench-lstm")
    >>> problem.n_params
    266

    With every parameter 0 each prediction is 0 and its normaliser log(14 + 2), so
    the loss is log 16 times the share of ones among the predicted bits:

    >>> import numpy as np
    >>> zero = problem.objective(np.zeros(266))
    >>> bool(np.isclose(zero, np.log(16.0) * problem.data.sequence[1:].mean()))
    True
    """

    data: LSTMData
    name: str = "lstm"
    reference: dict | None = field(default=None, repr=False)

    def split(self, params):
        """``(main_params, extra_params)`` as views of the flat ``params``."""
        layers, _, bits = self.data.sizes
        self.check_flat(params)
        main = ad.reshape(params[: 8 * layers * bits], (layers, 8 * bits))
        return main, ad.reshape(params[8 * layers * bits :], (3, bits))

    def objective(self, params):
        """The loss at ``params`` (plain, dual or tensor values)."""
        main, extra = self.split(params)
        return lstm_objective(main, extra, self.data.state, self.data.sequence)
