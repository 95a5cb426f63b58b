"""The hand tracking objective of ADBench (Šrajer et al. 2018), written against the op set.

A hand is 22 bones in a tree (``parents``, each bone after its parent) and a
mesh whose vertices each follow a weighted blend of the bones (linear blend
skinning). ``theta`` (26 numbers) poses it:

- ``theta[0:3]``: the global rotation, an angle-axis vector (Rodrigues; the
  identity below an angle of 1e-4, as ADBench does);
- ``theta[3:6]``: the global translation;
- ``theta[6:26]``: four angles per finger (thumb, index, middle, ring, pinky):
  the finger's second bone turns about x and z, its third and fourth about x.
  The wrist, each finger's first bone and the forearm are not posed.

A bone's posed relative transform is its ``base_relative`` times the Euler
rotation ``Rz·Ry·Rx`` of its three pose angles (stored x, z, y); absolute
transforms compose relatives down the tree; a vertex moves by
``Σ_b w_vb · absolute_b · inverse_base_absolute_b · base_position_v``, then
(for a mirrored model) x → −x, then the global rotation and translation.

Residual i is ``points[i]`` minus the model point matched to it: vertex
``correspondences[i]`` (the simple variant), or in the complicated variant the
point ``u0·v0 + u1·v1 + (1 − u0 − u1)·v2`` of triangle ``correspondences[i]``
with ``(u0, u1) = us[i]``.

Everything is batched over bones and points: the tree is walked one depth
level at a time, so a call runs a few dozen ops whatever the model's size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import adcompare as ad

__all__ = [
    "BONE_NAMES",
    "PARENTS",
    "HandData",
    "angle_axis_to_rotation",
    "corner_weights",
    "euler_to_rotation",
    "hand_residuals",
    "pose_angles",
]

#: ADBench's hand skeleton: bone names and each bone's parent (−1 for the root).
BONE_NAMES = (
    "wrist",
    *(f"{finger}{joint}" for finger in ("thumb", "index", "middle", "ring", "pinky")
      for joint in range(1, 5)),
    "forearm",
)  # fmt: skip
PARENTS = (-1, *(p for f in range(5) for p in (0, 4 * f + 1, 4 * f + 2, 4 * f + 3)), 0)

#: Where each bone's three pose angles (x, z, y) come from in theta: an index,
#: or 26, a zero appended to theta. Finger f's bones 4f+2, 4f+3, 4f+4 take
#: theta[6+4f : 10+4f]: two angles for the first of them, one for the others.
_POSE_SOURCE = np.full((22, 3), 26, dtype=np.intp)
for _finger in range(5):
    _first = 6 + 4 * _finger
    _POSE_SOURCE[4 * _finger + 2, :2] = (_first, _first + 1)
    _POSE_SOURCE[4 * _finger + 3, 0] = _first + 2
    _POSE_SOURCE[4 * _finger + 4, 0] = _first + 3


@dataclass(frozen=True)
class HandData:
    """A hand model and its correspondences, as arrays, checked and ready to pose.

    Only the vertices some correspondence reads are skinned: ``used`` lists
    them, and ``corners`` indexes ``used`` (one column for the simple
    variant, three triangle corners for the complicated one).
    ``levels`` groups the bones by depth in the tree, root first, and
    ``parent_slots`` says where each bone's parent sits in that order.
    """

    base_relatives: np.ndarray  # (bones, 4, 4)
    inverse_base_absolutes: np.ndarray  # (bones, 4, 4)
    weights: np.ndarray  # (bones, nused): vertex by vertex in columns
    base_positions: np.ndarray  # (4, nused)
    mirror: np.ndarray  # (3,): −1 for x of a mirrored model, else 1
    points: np.ndarray  # (npts, 3)
    used: np.ndarray  # (nused,) vertex numbers
    corners: np.ndarray  # (npts, 1) or (npts, 3), positions in used
    all_used: np.ndarray  # 0 … nused − 1
    levels: tuple[np.ndarray, ...]
    parent_slots: tuple[np.ndarray, ...]
    order: np.ndarray  # bone b's row in the level-ordered stack


def pose_angles(theta):
    """The (22, 3) Euler angles (x, z, y) of each bone, read from ``theta`` (26).

    >>> angles = pose_angles(np.arange(26.0))
    >>> angles[2].tolist(), angles[3].tolist(), angles[0].tolist()
    ([6.0, 7.0, 0.0], [8.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    """
    padded = ad.concatenate([theta, np.zeros(1)])
    return padded[_POSE_SOURCE]


def euler_to_rotation(angles):
    """``Rz(z)·Ry(y)·Rx(x)`` for each row ``(x, z, y)`` of ``angles`` (k, 3): (k, 3, 3).

    >>> R = euler_to_rotation(np.array([[0.3, 0.2, 0.1]]))[0]
    >>> bool(np.allclose(R @ R.T, np.eye(3)))
    True
    """
    cos, sin = ad.cos(angles), ad.sin(angles)
    cx, cz, cy = cos[:, 0], cos[:, 1], cos[:, 2]
    sx, sz, sy = sin[:, 0], sin[:, 1], sin[:, 2]
    rows = [
        [cz * cy, cz * sy * sx - sz * cx, sz * sx + cz * sy * cx],
        [sz * cy, cz * cx + sz * sy * sx, sz * sy * cx - cz * sx],
        [-sy, cy * sx, cy * cx],
    ]
    return ad.reshape(ad.stack([e for row in rows for e in row], axis=1), (-1, 3, 3))


def angle_axis_to_rotation(angle_axis):
    """The rotation matrix of an angle-axis vector (3): Rodrigues' formula, the
    identity below an angle of 1e-4 (as ADBench, whose derivative there is 0).

    >>> R = angle_axis_to_rotation(np.array([0.0, 0.0, np.pi / 2]))
    >>> np.round(R @ np.array([1.0, 0.0, 0.0]), 12).tolist()
    [0.0, 1.0, 0.0]
    """
    angle = ad.sqrt(ad.sum(angle_axis * angle_axis))
    if angle < 1e-4:
        return np.eye(3)
    axis = angle_axis / angle
    cos, sin = ad.cos(angle), ad.sin(angle)
    x, y, z = axis[0], axis[1], axis[2]
    cross = ad.reshape(ad.stack([0.0, -z, y, z, 0.0, -x, -y, x, 0.0]), (3, 3))
    outer = axis[:, None] * axis[None, :]
    return cos * np.eye(3) + sin * cross + (1.0 - cos) * outer


def _absolutes(relatives, data: HandData):
    """Each bone's absolute transform, composed down the tree one depth level at a time."""
    stacked = relatives[data.levels[0]]
    for level, slots in zip(data.levels[1:], data.parent_slots):
        below = ad.matmul(stacked[slots], relatives[level])
        stacked = ad.concatenate([stacked, below])
    return stacked[data.order]


def _bone_matrices(theta, data: HandData):
    """(3, bones·4): row j, column 4b + m holds entry (j, m) of bone b's full transform
    (posed absolute · inverse base absolute, mirrored, globally rotated)."""
    rotations = euler_to_rotation(pose_angles(theta))
    base = data.base_relatives
    relatives = ad.concatenate([ad.matmul(base[:, :, :3], rotations), base[:, :, 3:]], axis=2)
    transforms = ad.matmul(_absolutes(relatives, data), data.inverse_base_absolutes)[:, :3, :]
    rotation = angle_axis_to_rotation(theta[0:3]) * data.mirror  # R · diag(mirror)
    placed = ad.matmul(rotation, transforms)  # (bones, 3, 4)
    return ad.reshape(ad.transpose(placed, (1, 0, 2)), (3, -1))


def skinned_vertices(theta, data: HandData):
    """The posed positions (nused, 3) of the vertices ``data.used``.

    Vertex v is ``Σ_b w_vb · transform_b · base_v`` plus the translation: one
    product of the (3, bones·4) transforms with the (bones·4, nused) blend of
    each vertex's weights and base position. The transforms come first, so that
    with forward lanes each lane is one wide matrix product (with the lanes on
    the right, each would be a product three columns wide: three times slower).
    """
    weights, base = data.weights, data.base_positions
    blend = np.reshape(weights[:, None, :] * base[None, :, :], (-1, len(data.used)))
    moved = ad.matmul(_bone_matrices(theta, data), blend) + theta[3:6, None]
    return ad.transpose(moved)


def corner_weights(us, npoints: int):
    """Each residual's weights of its corners: ``(u0, u1, 1 − u0 − u1)`` a row (npts, 3),
    or a column of ones (npts, 1) for the simple variant (``us`` None).

    >>> corner_weights(np.array([[0.25, 0.5]]), 1).tolist()
    [[0.25, 0.5, 0.25]]
    """
    if us is None:
        return np.ones((npoints, 1))
    u0, u1 = us[:, 0], us[:, 1]
    return ad.stack([u0, u1, 1.0 - u0 - u1], axis=1)


def hand_residuals(theta, us, data: HandData):
    """Row i of the (npts, 3) result is ``points[i]`` minus model point i.

    ``us`` is ``None`` for the simple variant, else (npts, 2).
    """
    vertices = skinned_vertices(theta, data)
    # A gather of every used vertex, in order: with forward lanes it leaves the tangent
    # lanes-last in memory, so that the gather of each point's corners below copies
    # contiguous rows (two to three times faster at 100,000 points); without lanes it
    # copies the used vertices once.
    vertices = vertices[data.all_used]
    corners = vertices[data.corners]  # (npts, 1 or 3, 3)
    weights = corner_weights(us, len(data.points))
    return data.points + ad.einsum("ik,ikj->ij", -weights, corners)
