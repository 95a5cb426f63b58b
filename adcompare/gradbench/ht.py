"""GradBench's ``ht`` eval: ADBench's hand tracking residuals and their Jacobian.

``objective`` gives the 3·npts residuals of :func:`~adcompare.gradbench.ht_model.hand_residuals`;
``jacobian`` their derivative, one row per residual: 26 columns (``theta``)
in the simple variant, 28 in the complicated one, where columns 0 and 1 of
row 3i + j hold the derivative with respect to ``us[i][0]`` and ``us[i][1]``
(the us block is block-diagonal, so GradBench sends it compressed) and
columns 2 … 27 the derivatives with respect to ``theta``.

Modes of the Jacobian:

- ``forward``: a lane per column: one forward pass with 26 lanes seeded with
  the identity over ``theta``, and in the complicated variant a second pass
  with 2 lanes over a shift ``s`` (2) added to every point's us, so that each
  lane moves ``us[i][0]`` (then ``us[i][1]``) of every point at once. That is
  exact because residual i reads ``us[i]`` only: a colouring of the us
  columns with two colours, which gives the compressed columns GradBench
  wants. Two passes rather than one of 28 lanes, so that the theta lanes
  meet ``us`` as a constant (one product a lane, not the product rule's two).
- ``replay``: the same lanes through ``ad.compile(..., mode="forward")``'s
  tangent programs, one over theta and one over the shift, recorded on the
  first call for an input.
- ``reverse``: ``ad.jacrev`` over ``theta``, one reverse lane per residual
  (3·npts of them, in chunks), and three pullbacks for the us columns (the
  rows 3i + j of one j read disjoint us entries). Every residual depends on
  all of ``theta``, so its cost grows with npts times the model: the mode
  for small inputs only.
- ``auto``: ``replay`` below :data:`FORWARD_POINTS` points, ``forward`` from
  there (:func:`_auto`). On GradBench's twelve default workloads (synthetic
  hands of its sizes; CPU time, one BLAS thread, the recording counted in
  the mean of one second of calls, as GradBench times) replay is 2–3 times
  faster than ``forward`` from 100 to 400 points, where a call is mostly the
  op set's per-op overhead, and 1.2–1.6 times up to 25,600; from 51,200
  points, where the work is in the arrays, ``forward`` is the faster (it
  records nothing, where replay's recording in the first call takes up to a
  second).
  Both are far ahead of ``reverse`` (3·npts rows).

>>> from adcompare.gradbench.ht_instances import hand_input
>>> problem = EVAL.prepare(hand_input(nverts=30, ntriangles=20, npoints=4))
>>> EVAL.functions["objective"](problem, "auto").shape
(12,)
>>> EVAL.functions["jacobian"](problem, "forward").shape
(12, 28)
"""

from __future__ import annotations

import numpy as np

import adcompare as ad
from adcompare.gradbench.evals import MODES
from adcompare.gradbench.ht_input import HTProblem, read_input
from adcompare.gradbench.ht_instances import ht_workloads
from adcompare.gradbench.ht_model import hand_residuals
from adcompare.gradbench.inputs import objective_and_jacobian

__all__ = ["EVAL", "jacobian", "objective"]

#: From how many points ``auto`` answers in forward mode rather than replay.
FORWARD_POINTS = 51_200


def _auto(problem: HTProblem) -> str:
    """The mode ``auto`` stands for at this input (see the module's docstring).

    >>> from adcompare.gradbench.ht_instances import hand_input
    >>> _auto(read_input(hand_input(nverts=30, ntriangles=20, npoints=4)))
    'replay'
    """
    return "forward" if problem.data.points.shape[0] >= FORWARD_POINTS else "replay"


def objective(problem: HTProblem, mode: str = "auto") -> np.ndarray:
    """The 3·npts residuals (the primal; every mode computes it the same way)."""
    return np.reshape(hand_residuals(problem.theta, problem.us, problem.data), -1)


#: No shift of the us (see :func:`_residuals_of`).
_NO_SHIFT = np.zeros(2)


def _residuals_of(problem: HTProblem):
    """The (npts, 3) residuals as a function of ``(theta, shift)``, where ``shift`` (2)
    moves every point's us at once. Residual i reads ``us[i]`` only, so the derivative
    with respect to ``shift`` is the us columns, compressed as GradBench sends them (the
    simple variant has no us and ignores ``shift``)."""
    if not problem.complicated:
        return lambda theta, shift: hand_residuals(theta, None, problem.data)
    return lambda theta, shift: hand_residuals(theta, problem.us + shift, problem.data)


def _columns(problem: HTProblem, by_theta: np.ndarray, by_us) -> np.ndarray:
    """The (3·npts, 26 or 28) Jacobian from the lanes over theta (26, npts, 3) and, when
    complicated, those over the us shift (2, npts, 3), computed by ``by_us()``."""
    npoints, us_columns = len(problem.data.points), 2 * problem.complicated
    jacobian = np.empty((npoints, 3, us_columns + 26))
    jacobian[:, :, us_columns:] = np.moveaxis(by_theta, 0, -1)
    if problem.complicated:
        jacobian[:, :, :2] = np.moveaxis(by_us(), 0, -1)
    return jacobian.reshape(3 * npoints, -1)


def _forward(problem: HTProblem) -> np.ndarray:
    theta, residuals = problem.theta, _residuals_of(problem)
    by_theta = residuals(ad.Dual(theta, np.eye(26)), _NO_SHIFT).tangent
    return _columns(
        problem, by_theta, lambda: residuals(theta, ad.Dual(_NO_SHIFT, np.eye(2))).tangent
    )


def _replayed(problem: HTProblem, argnum: int):
    """The tangent program over argument ``argnum`` of ``(theta, shift)``, recorded on
    the first call for this input."""
    if argnum not in problem.cache:
        problem.cache[argnum] = ad.compile(
            _residuals_of(problem), problem.theta, _NO_SHIFT, argnums=argnum, mode="forward"
        )
    return problem.cache[argnum]


def _replay(problem: HTProblem) -> np.ndarray:
    arguments = (problem.theta, _NO_SHIFT)
    by_theta = _replayed(problem, 0).jvp(arguments, (np.eye(26),))[1]
    return _columns(
        problem, by_theta, lambda: _replayed(problem, 1).jvp(arguments, (np.eye(2),))[1]
    )


def _reverse(problem: HTProblem) -> np.ndarray:
    theta, us, data = problem.theta, problem.us, problem.data
    by_theta = ad.jacrev(lambda t: ad.reshape(hand_residuals(t, us, data), -1))(theta)
    if not problem.complicated:
        return by_theta
    jacobian = np.empty((len(by_theta), 28))
    jacobian[:, 2:] = by_theta
    pullback = ad.vjp(lambda u: hand_residuals(theta, u, data), us)[1]
    for j in range(3):
        cotangent = np.zeros((len(us), 3))
        cotangent[:, j] = 1.0
        jacobian[j::3, :2] = pullback(cotangent)[0]
    return jacobian


_JACOBIANS = {"forward": _forward, "replay": _replay, "reverse": _reverse}


def jacobian(problem: HTProblem, mode: str = "auto") -> np.ndarray:
    """The (3·npts, 26 or 28) Jacobian GradBench's ``jacobian`` sends, by ``mode``.

    >>> from adcompare.gradbench.ht_instances import hand_input
    >>> problem = read_input(hand_input(nverts=30, ntriangles=20, npoints=3, variant="simple"))
    >>> by_mode = [jacobian(problem, mode) for mode in ("forward", "replay", "reverse")]
    >>> all(np.allclose(by_mode[0], other) for other in by_mode[1:])
    True
    """
    if mode not in MODES:
        raise ValueError(f"ht: no mode {mode!r}; use one of {', '.join(MODES)}")
    return _JACOBIANS[_auto(problem) if mode == "auto" else mode](problem)


def _encode(function: str, result: np.ndarray):
    return np.asarray(result).tolist()


def _objective(problem: HTProblem):
    """The 3·npts residuals as a function of theta and, when complicated, of the us."""
    data = problem.data
    if not problem.complicated:
        return (lambda theta: ad.reshape(hand_residuals(theta, None, data), -1)), (problem.theta,)
    return (
        (lambda theta, us: ad.reshape(hand_residuals(theta, us, data), -1)),
        (problem.theta, problem.us),
    )


EVAL = objective_and_jacobian(
    "ht", read_input, objective, jacobian, _encode, ht_workloads, _objective, _auto
)
