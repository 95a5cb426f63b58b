"""Bundle adjustment: reprojection and weight errors, written once against the op set.

For observation i of point X by camera (r, C, f, u₀, k):

    Xcam  = rotate(r, X − C)                      Rodrigues rotation by r
    u     = Xcam[:2] / Xcam[2]
    u     = u·(1 + k₁‖u‖² + k₂‖u‖⁴)               radial distortion
    proj  = f·u + (u₀, v₀)
    reprojection error = wᵢ·(proj − featureᵢ)      2 values
    weight error       = 1 − wᵢ²                   1 value

Each observation's two residuals depend only on its camera (11), its point
(3) and its weight (1): a sparse Jacobian of 15 non-zeros a row, plus one
per weight row. ADBench stores it in compressed sparse row (CSR) order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import adcompare as ad
from adcompare.adbench.ba_format import CAMERA_PARAMS, BAData
from adcompare.adbench.flat import FlatParameters
from adcompare.ops.registry import raw

__all__ = ["BAProblem", "ba_residuals", "observation_errors", "rodrigues_rotate"]


def _cross(a, b):
    """Row-wise cross product of two (p, 3) arrays."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    return ad.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


def rodrigues_rotate(rotation, points):
    """Rotate each row of ``points`` (p, 3) by the axis-angle vector in ``rotation`` (p, 3).

    At a zero angle the rotation is the identity plus its first-order term
    ``r × X``, as in ADBench, so derivatives there are finite.

    >>> import numpy as np
    >>> quarter_turn_about_z = np.array([[0.0, 0.0, np.pi / 2]])
    >>> print(np.round(rodrigues_rotate(quarter_turn_about_z, np.array([[1.0, 0.0, 0.0]])), 12))
    [[0. 1. 0.]]
    """
    squared_angle = ad.sum(rotation * rotation, axis=1, keepdims=True)
    turning = np.not_equal(raw(squared_angle), 0.0)
    # Keep sqrt and the division away from 0 where the first-order branch is used.
    angle = ad.sqrt(ad.where(turning, squared_angle, 1.0))
    axis = rotation / angle
    cos, sin = ad.cos(angle), ad.sin(angle)
    along_axis = ad.sum(axis * points, axis=1, keepdims=True) * (1.0 - cos)
    rotated = points * cos + _cross(axis, points) * sin + axis * along_axis
    return ad.where(turning, rotated, points + _cross(rotation, points))


def observation_errors(seen_by, seen, weights, features: np.ndarray):
    """Each observation's two reprojection errors (p, 2) and its weight error (p,), from
    the camera (p, 11) and point (p, 3) it sees, its weight (p,) and its feature (p, 2).

    >>> import numpy as np
    >>> camera = np.array([[0.0] * 3 + [0.0, 0.0, -1.0] + [1.0, 0, 0, 0, 0]])
    >>> reprojection, weight_error = observation_errors(
    ...     camera, np.array([[1.0, 2.0, 0.0]]), np.array([0.5]), np.zeros((1, 2)))
    >>> print(reprojection, weight_error)  # 0.5·(1, 2)/1 and 1 − 0.5²
    [[0.5 1. ]] [0.75]
    """
    return camera_errors(
        *(seen_by[:, part] for part in CAMERA_PARTS.values()), seen, weights, features
    )


#: The columns of a camera's 11 parameters: rotation (axis-angle), centre, focal
#: length, principal point, radial distortion.
CAMERA_PARTS = {
    "rotation": slice(0, 3),
    "centre": slice(3, 6),
    "focal": slice(6, 7),
    "principal": slice(7, 9),
    "distortion": slice(9, 11),
}


def camera_errors(rotation, centre, focal, principal, distortion, seen, weights, features):
    """:func:`observation_errors` with each camera's parameters in their
    :data:`CAMERA_PARTS`, each a (p, k) array: a derivative with respect to
    the parts needs no scatter of slices into one (p, 11) array.

    >>> import numpy as np
    >>> errors, _ = camera_errors(np.zeros((1, 3)), np.array([[0.0, 0.0, -1.0]]),
    ...     np.ones((1, 1)), np.zeros((1, 2)), np.zeros((1, 2)),
    ...     np.array([[1.0, 2.0, 0.0]]), np.array([0.5]), np.zeros((1, 2)))
    >>> print(errors)
    [[0.5 1. ]]
    """
    camera_frame = rodrigues_rotate(rotation, seen - centre)
    projected = camera_frame[:, 0:2] / camera_frame[:, 2:3]
    radius_sq = ad.sum(projected * projected, axis=1, keepdims=True)
    distortion = 1.0 + distortion[:, 0:1] * radius_sq + distortion[:, 1:2] * radius_sq * radius_sq
    pixels = projected * distortion * focal + principal
    return ad.reshape(weights, (-1, 1)) * (pixels - features), weight_errors(weights)


def weight_errors(weights):
    """Each observation's weight error, 1 − w².

    >>> print(weight_errors(np.array([0.5, 2.0])))
    [ 0.75 -3.  ]
    """
    return 1.0 - weights * weights


def ba_residuals(cameras, points, weights, observations: np.ndarray, features: np.ndarray):
    """The 2p reprojection errors (observation by observation) then the p weight errors.

    >>> from adcompare.adbench.ba_format import replicated
    >>> data = replicated(2, 10, 10, [0.0] * 3 + [0.0, 0.0, -1.0] + [1.0, 0, 0, 0, 0],
    ...                   [1.0, 2.0, 0.0], 0.5, [0.0, 0.0])
    >>> residuals = ba_residuals(data.cameras, data.points, data.weights,
    ...                          data.observations, data.features)
    >>> print(residuals.shape, residuals[:2], residuals[-1])
    (30,) [0.5 1. ] 0.75
    """
    seen_by = cameras[observations[:, 0]]  # (p, 11)
    seen = points[observations[:, 1]]  # (p, 3)
    reprojection, weight_error = observation_errors(seen_by, seen, weights, features)
    return ad.concatenate([ad.reshape(reprojection, (-1,)), weight_error])


@dataclass
class BAProblem(FlatParameters):
    """A BA instance as a vector function of ONE flat parameter vector.

    ``params`` holds the cameras (11 each), the points (3 each), then the
    weights. ``reference`` holds ``{"reprojection_error", "weight_error",
    "jacobian_csr_values"}`` when known.

    >>> from adcompare.adbench import bundled
    >>> problem = bundled("adbench-ba-test")
    >>> rows, cols = problem.jacobian_pattern()
    >>> problem.n_params, problem.residuals(problem.params).shape, len(rows)
    (62, (30,), 310)
    """

    data: BAData
    name: str = "ba"
    reference: dict | None = field(default=None, repr=False)

    @property
    def n_residuals(self) -> int:
        """How many residuals there are: 2p reprojection and p weight errors."""
        return 3 * self.data.sizes[2]

    def split(self, params):
        """``(cameras, points, weights)`` as views of the flat ``params``."""
        n, m, _ = self.data.sizes
        self.check_flat(params)
        cameras = ad.reshape(params[: CAMERA_PARAMS * n], (n, CAMERA_PARAMS))
        points = ad.reshape(params[CAMERA_PARAMS * n : CAMERA_PARAMS * n + 3 * m], (m, 3))
        return cameras, points, params[CAMERA_PARAMS * n + 3 * m :]

    def residuals(self, params):
        """The stacked residual vector at ``params``: reprojection, then weight errors."""
        cameras, points, weights = self.split(params)
        return ba_residuals(cameras, points, weights, self.data.observations, self.data.features)

    def jacobian_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of the structural non-zeros, in ADBench's CSR order.

        Row 2i + r (r = 0, 1) holds observation i's camera block, point block
        and weight column in increasing column order; row 2p + i holds weight
        i's column.
        """
        n, m, p = self.data.sizes
        rows, cols = [], []
        for i, (camera, point) in enumerate(self.data.observations):
            columns = [
                *range(CAMERA_PARAMS * camera, CAMERA_PARAMS * (camera + 1)),
                *range(CAMERA_PARAMS * n + 3 * point, CAMERA_PARAMS * n + 3 * point + 3),
                CAMERA_PARAMS * n + 3 * m + i,
            ]
            for r in (0, 1):
                rows += [2 * i + r] * len(columns)
                cols += columns
        rows += [2 * p + i for i in range(p)]
        cols += [CAMERA_PARAMS * n + 3 * m + i for i in range(p)]
        return np.array(rows), np.array(cols)

    def csr_values(self, jacobian: np.ndarray) -> np.ndarray:
        """The entries of a dense (3p, n_params) Jacobian at the pattern, in CSR order."""
        expected = (self.n_residuals, self.n_params)
        if np.shape(jacobian) != expected:
            raise ValueError(
                f"{self.name}: a Jacobian of shape {np.shape(jacobian)}; expected {expected}"
            )
        rows, cols = self.jacobian_pattern()
        return np.asarray(jacobian)[rows, cols]
