"""The ADBench objectives written by hand in plain numpy: the honest baseline.

A derivative's cost is published as a ratio to the tool's own fastest
objective. The op-set objectives (:mod:`~adcompare.adbench.gmm`,
:mod:`~adcompare.adbench.lstm`, :mod:`~adcompare.adbench.ba`) run on numpy
arrays through adcompare's dispatch, which costs time per op; these are the
same formulas as plain numpy calls, the fastest primal adcompare has. The
tests check each equal to its op-set objective to 1e-12.

>>> from adcompare import adbench
>>> gmm = adbench.bundled("adbench-gmm-test")
>>> bool(abs(plain_objective(gmm)(gmm.params) - gmm.objective(gmm.params)) < 1e-12)
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.adbench.ba import BAProblem
from adcompare.adbench.ba_format import CAMERA_PARAMS
from adcompare.adbench.gmm import CONVENTIONS, GMMProblem, gmm_constant, lower_positions
from adcompare.adbench.lstm import LSTMProblem

__all__ = ["ba_residuals_numpy", "gmm_objective_numpy", "lstm_objective_numpy", "plain_objective"]


def _logsumexp(values: np.ndarray, axis=None) -> np.ndarray:
    shift = np.max(values, axis=axis, keepdims=True)
    total = np.sum(np.exp(values - shift), axis=axis, keepdims=True)
    return np.squeeze(np.log(total) + shift, axis=axis)


def gmm_objective_numpy(problem: GMMProblem, params: np.ndarray) -> float:
    """The GMM objective of :func:`~adcompare.adbench.gmm.gmm_objective` in numpy."""
    d, k, _ = problem.data.sizes
    x, gamma, m = problem.data.x, problem.data.gamma, problem.data.m
    alpha = params[:k]
    mu = params[k : k + k * d].reshape(k, d)
    icf = params[k + k * d :].reshape(k, -1)
    q, lower = icf[:, :d], icf[:, d:]
    factors = np.zeros((k, d, d))
    diagonal = np.arange(d)
    factors[:, diagonal, diagonal] = np.exp(q)
    rows, cols = lower_positions(d)
    factors[:, rows, cols] = lower
    transposed = factors.transpose(0, 2, 1)
    shift = mu[:, None, :] @ transposed
    homogeneous = np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)
    mapped = homogeneous @ np.concatenate([transposed, -shift], axis=1)
    sum_q = q.sum(axis=1)
    main = (alpha + sum_q)[:, None] - 0.5 * np.sum(mapped * mapped, axis=2)
    n_points = x.shape[0]
    likelihood = np.sum(_logsumexp(main, axis=0)) - n_points * _logsumexp(alpha)
    sign = CONVENTIONS[problem.convention]
    prior = (sign * 0.5 * gamma**2) * np.sum(factors * factors) - (sign * m) * np.sum(sum_q)
    return likelihood + prior + gmm_constant(n_points, k, d, gamma, m, sign)


def lstm_objective_numpy(problem: LSTMProblem, params: np.ndarray) -> float:
    """The LSTM loss of :func:`~adcompare.adbench.lstm.lstm_objective` in numpy."""
    layers, _, bits = problem.data.sizes
    state, sequence = problem.data.state, problem.data.sequence
    main = params[: 8 * layers * bits].reshape(layers, 8 * bits)
    in_weight, out_weight, out_bias = params[8 * layers * bits :].reshape(3, bits)
    hidden = [state[j, 0] for j in range(layers)]
    cell = [state[j, 1] for j in range(layers)]
    log_likelihood = 0.0
    for t in range(sequence.shape[0] - 1):
        layer_input = sequence[t] * in_weight
        for j in range(layers):
            gates = (
                np.concatenate([layer_input, hidden[j], layer_input, hidden[j]])
                * main[j, : 4 * bits]
                + main[j, 4 * bits :]
            )
            sigmoids = 1.0 / (1.0 + np.exp(-gates[: 3 * bits]))
            change = np.tanh(gates[3 * bits :])
            cell[j] = cell[j] * sigmoids[:bits] + sigmoids[bits : 2 * bits] * change
            hidden[j] = sigmoids[2 * bits :] * np.tanh(cell[j])
            layer_input = hidden[j]
        predicted = layer_input * out_weight + out_bias
        normaliser = np.log(np.sum(np.exp(predicted)) + 2.0)
        log_likelihood = log_likelihood + np.sum(sequence[t + 1] * (predicted - normaliser))
    return -log_likelihood / float((sequence.shape[0] - 1) * bits)


def ba_residuals_numpy(problem: BAProblem, params: np.ndarray, xp=np) -> np.ndarray:
    """The residuals of :func:`~adcompare.adbench.ba.ba_residuals` in numpy (or in another
    array namespace ``xp`` with numpy's names, such as ``jax.numpy``)."""
    n, m, _ = problem.data.sizes
    cameras = params[: CAMERA_PARAMS * n].reshape(n, CAMERA_PARAMS)
    points = params[CAMERA_PARAMS * n : CAMERA_PARAMS * n + 3 * m].reshape(m, 3)
    weights = params[CAMERA_PARAMS * n + 3 * m :]
    observations, features = problem.data.observations, problem.data.features
    seen_by, seen = cameras[observations[:, 0]], points[observations[:, 1]]
    rotation, relative = seen_by[:, 0:3], seen - seen_by[:, 3:6]
    squared_angle = xp.sum(rotation * rotation, axis=1, keepdims=True)
    turning = squared_angle != 0.0
    angle = xp.sqrt(xp.where(turning, squared_angle, 1.0))
    axis = rotation / angle
    cos, sin = xp.cos(angle), xp.sin(angle)
    along_axis = xp.sum(axis * relative, axis=1, keepdims=True) * (1.0 - cos)
    rotated = relative * cos + xp.cross(axis, relative) * sin + axis * along_axis
    camera_frame = xp.where(turning, rotated, relative + xp.cross(rotation, relative))
    projected = camera_frame[:, 0:2] / camera_frame[:, 2:3]
    radius_sq = xp.sum(projected * projected, axis=1, keepdims=True)
    distortion = 1.0 + seen_by[:, 9:10] * radius_sq + seen_by[:, 10:11] * radius_sq * radius_sq
    pixels = projected * distortion * seen_by[:, 6:7] + seen_by[:, 7:9]
    reprojection = weights[:, None] * (pixels - features)
    return xp.concatenate([reprojection.reshape(-1), 1.0 - weights * weights])


_PLAIN = {
    GMMProblem: gmm_objective_numpy,
    LSTMProblem: lstm_objective_numpy,
    BAProblem: ba_residuals_numpy,
}


def plain_objective(problem) -> Callable[[np.ndarray], np.ndarray]:
    """The problem's objective (BA: its residuals) as a plain-numpy function of ``params``."""
    function = _PLAIN.get(type(problem))
    if function is None:
        raise TypeError(f"no plain-numpy objective for a {type(problem).__name__}")
    return lambda params: function(problem, np.asarray(params, dtype=np.float64))
