"""GradBench's ``ba`` eval: bundle adjustment's residuals and their sparse Jacobian.

The input holds one camera, point, weight and feature, replicated as ADBench
does (:func:`~adcompare.adbench.ba_format.replicated`) to n cameras, m points
and p observations. ``objective`` computes all 3p residuals
(:func:`~adcompare.adbench.plain.ba_residuals_numpy`) and sends one
representative of each kind with its count, as GradBench's output does.

``jacobian`` computes the whole (3p) × (11n + 3m + p) Jacobian, every one of
its 31p non-zeros, and assembles it as CSR. Observation i's three residuals
depend only on its own 15 inputs (its camera's 11, its point's 3, its
weight), so with those gathered into a (p, 15) array Z the residuals are a
function of Z whose rows do not interact, and each observation's 3 × 15
block comes from one Jacobian of 15 columns (forward: each lane moves one
column of Z in every row at once) or 3 rows (reverse: each cotangent lane is
one residual kind summed over the observations; Z's three parts are passed
as three arguments). Blocks of
``OBSERVATIONS_PER_BLOCK`` observations at a time keep memory bounded; the
blocks' values land in CSR order directly (camera columns, point columns,
weight column, as in ADBench). ``replay`` records the forward lanes once per
block shape (:func:`adcompare.compile`).

>>> prepared = EVAL.prepare({"n": 2, "m": 3, "p": 4, "cam": [0.1] * 3 + [0, 0, -5] +
...     [100, 0, 0, 0.01, 0.001], "x": [1.0, 2.0, 3.0], "w": 0.5, "feat": [10.0, 20.0]})
>>> jacobian = EVAL.functions["jacobian"](prepared, "forward")
>>> jacobian.shape, jacobian.nnz == 31 * 4
((12, 35), True)
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

import adcompare as ad
from adcompare.adbench.ba import (
    CAMERA_PARTS,
    BAProblem,
    camera_errors,
    observation_errors,
    weight_errors,
)
from adcompare.adbench.ba_format import CAMERA_PARAMS, BAData, replicated
from adcompare.adbench.generate import ba_observation
from adcompare.adbench.plain import ba_residuals_numpy
from adcompare.adbench.records import json_array, json_integer, json_number, json_object
from adcompare.gradbench.evals import Workload
from adcompare.gradbench.inputs import RUNS, objective_and_jacobian, replayed

__all__ = ["BA_SIZES", "EVAL", "OBSERVATIONS_PER_BLOCK"]

#: ``(n, m, p)`` of ADBench's and GradBench's ba1 … ba20, from their file names.
BA_SIZES = (
    (49, 7776, 31843), (21, 11315, 36455), (161, 48126, 182072), (372, 47423, 204472),
    (257, 65132, 225911), (539, 65220, 277273), (93, 61203, 287451), (88, 64298, 383937),
    (810, 88814, 393775), (1197, 126327, 563734), (1723, 156502, 678718),
    (253, 163691, 899155), (245, 198739, 1091386), (356, 226730, 1255268),
    (1102, 780462, 4052340), (1544, 942409, 4750193), (1778, 993923, 5001946),
    (1936, 649673, 5213733), (4585, 1324582, 9125125), (13682, 4456117, 2987644),
)  # fmt: skip
#: GradBench's eval sends ba1 … ba14 by default (its nightly run lists those).
DEFAULT_WORKLOADS = 14
#: Observations whose Jacobian blocks are computed together.
OBSERVATIONS_PER_BLOCK = 16384
#: Inputs per observation: its camera, its point, its weight.
INPUTS = CAMERA_PARAMS + 3 + 1

_REPLAYS: dict = {}


def _prepare(value) -> BAData:
    record = json_object(value, "ba", "an object with n, m, p, cam, x, w, feat")
    n, m, p = (json_integer(record, key, "ba") for key in "nmp")
    return replicated(
        n,
        m,
        p,
        json_array(record, "cam", (CAMERA_PARAMS,), "ba"),
        json_array(record, "x", (3,), "ba"),
        json_number(record, "w", "ba"),
        json_array(record, "feat", (2,), "ba"),
    )


def _objective(data: BAData, mode: str) -> np.ndarray:
    return ba_residuals_numpy(BAProblem(data), data.params)


def _rows(cameras, points, weights, features):
    """Each observation's residuals (p, 3) from the camera (p, 11), point (p, 3) and weight
    (p,) it holds."""
    reprojection, weight_error = observation_errors(cameras, points, weights, features)
    return ad.concatenate([reprojection, ad.reshape(weight_error, (-1, 1))], axis=1)


def _shifted_rows(shift, inputs, features):
    """The residuals with column j of every row of Z = [camera, point, weight] moved by
    ``shift[j]``."""
    moved = inputs + shift
    return _rows(moved[:, :CAMERA_PARAMS], moved[:, CAMERA_PARAMS:-1], moved[:, -1], features)


def _blocks(cameras, points, weights, features: np.ndarray, mode: str) -> tuple:
    """Each observation's 2 × 15 block of reprojection rows (p, 2, 15), and its weight
    row's one non-zero, d(1 − w²)/dw (p,)."""
    if mode in ("forward", "replay"):
        inputs = np.concatenate([cameras, points, weights[:, None]], axis=1)
        zero = np.zeros(INPUTS)
        if mode == "forward":
            blocks = ad.jacfwd(_shifted_rows)(zero, inputs, features)
        else:
            compiled = replayed(
                _REPLAYS, inputs.shape, _shifted_rows, zero, inputs, features, mode="forward"
            )
            blocks = compiled.jacobian(zero, inputs, features)
        return blocks[:, :2, :], blocks[:, 2, -1]
    # Two cotangent lanes, one per reprojection row: the weight row reads w alone, so
    # its derivative is a gradient of its own rather than a third lane through the whole
    # projection. The camera's parts, the point and the weight are separate arguments:
    # slicing one (p, 15) array would cost the sweep a scatter into a zero array of that
    # shape per slice.
    parts = [cameras[:, part] for part in CAMERA_PARTS.values()]
    totals = ad.jacrev(
        lambda *inputs: ad.sum(camera_errors(*inputs, features)[0], axis=0),
        argnums=tuple(range(len(parts) + 2)),
    )(*parts, points, weights)
    reprojection = np.concatenate([*totals[:-1], totals[-1][..., None]], axis=2)
    return reprojection.swapaxes(0, 1), ad.grad(lambda w: ad.sum(weight_errors(w)))(weights)


def _jacobian(data: BAData, mode: str) -> sparse.csr_array:
    p = data.sizes[2]
    values = np.empty(31 * p)
    reprojection = values[: 30 * p].reshape(p, 2, INPUTS)
    cameras, points = data.observations[:, 0], data.observations[:, 1]
    for start in range(0, p, OBSERVATIONS_PER_BLOCK):
        block = slice(start, min(start + OBSERVATIONS_PER_BLOCK, p))
        reprojection[block], values[30 * p :][block] = _blocks(
            data.cameras[cameras[block]],
            data.points[points[block]],
            data.weights[block],
            data.features[block],
            mode,
        )
    columns, row_starts = _pattern(data)
    return sparse.csr_array((values, columns, row_starts), shape=(3 * p, data.params.size))


def _pattern(data: BAData) -> tuple[np.ndarray, np.ndarray]:
    """The CSR column indices (31p) and row pointers (3p + 1), in int32 where they fit."""
    n, m, p = data.sizes
    dtype = np.int32 if data.params.size < 2**31 and 31 * p < 2**31 else np.int64
    columns = np.empty(31 * p, dtype=dtype)
    per_row = columns[: 30 * p].reshape(p, 2, INPUTS)
    per_row[:, :, :CAMERA_PARAMS] = (CAMERA_PARAMS * data.observations[:, 0, None, None]) + (
        np.arange(CAMERA_PARAMS, dtype=dtype)
    )
    point_start = CAMERA_PARAMS * n + 3 * data.observations[:, 1, None, None]
    per_row[:, :, CAMERA_PARAMS:-1] = point_start + np.arange(3, dtype=dtype)
    weight_columns = np.arange(CAMERA_PARAMS * n + 3 * m, CAMERA_PARAMS * n + 3 * m + p)
    per_row[:, :, -1] = weight_columns[:, None]
    columns[30 * p :] = weight_columns
    row_starts = np.concatenate(
        [np.arange(0, 30 * p + 1, INPUTS, dtype=dtype), np.arange(30 * p + 1, 31 * p + 1)]
    ).astype(dtype)
    return columns, row_starts


def _encode(function: str, result):
    if function == "objective":
        p = result.size // 3
        return {
            "reproj_error": {"elements": result[:2].tolist(), "repeated": p},
            "w_err": {"element": float(result[2 * p]), "repeated": p},
        }
    return {
        name: [*array[:30].tolist(), array[-1].item()]
        for name, array in (
            ("rows", result.indptr),
            ("cols", result.indices),
            ("vals", result.data),
        )
    }


def _workload(name: str, sizes: tuple[int, int, int]) -> Workload:
    def make() -> dict:
        camera, point, weight, feature = ba_observation(*sizes)
        n, m, p = sizes
        return {"n": n, "m": m, "p": p, "cam": camera.tolist(), "x": point.tolist(),
                "w": weight, "feat": feature.tolist(), **RUNS}  # fmt: skip

    return Workload(name, make)


def _workloads() -> tuple[Workload, ...]:
    return tuple(
        _workload(f"ba{i}_n{n}_m{m}_p{p}", (n, m, p))
        for i, (n, m, p) in enumerate(BA_SIZES[:DEFAULT_WORKLOADS], start=1)
    )


def _harness_objective(data: BAData):
    """One observation's three residuals (two reprojection errors, the weight's) as a
    function of its camera, point and weight: every observation of GradBench's input is
    the same, and the whole replicated problem is too large for a dense Jacobian."""
    feature = data.features[:1]

    def residuals(camera, point, weight):
        rows = _rows(camera[None, :], point[None, :], ad.reshape(weight, (1,)), feature)
        return ad.reshape(rows, (-1,))

    return residuals, (data.cameras[0], data.points[0], data.weights[:1].reshape(()))


EVAL = objective_and_jacobian(
    "ba", _prepare, _objective, _jacobian, _encode, _workloads, _harness_objective
)
