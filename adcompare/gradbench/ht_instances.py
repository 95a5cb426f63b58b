"""ht inputs the package makes itself: a synthetic hand of ADBench's structure, posed.

GradBench's ht eval reads ADBench's hand model files (544 or 10,000
vertices, 1,084 triangles), which cannot ship in this package. The hands
made here have the same structure: ADBench's 22 bones and their tree, a
seeded random rest pose (each bone a rotation and a short offset from its
parent, the inverse base absolutes computed from it, so the rest pose
leaves every vertex in place), vertices scattered around the bones, each
weighted to its bone and up to two neighbours of it (weights summing to 1),
and triangles of nearby vertices. Points are the model posed at a
perturbed ``theta``, plus noise, so residuals are small, as in ADBench's data.

>>> message = hand_input(nverts=50, ntriangles=40, npoints=6)
>>> len(message["theta"]), len(message["us"]), len(message["data"]["model"]["weights"])
(26, 6, 50)
>>> [w.description for w in ht_workloads()][:3]
['hand1_t26_c100', 'hand2_t26_c192', 'hand3_t26_c200']
"""

from __future__ import annotations

import functools

import numpy as np

from adcompare.gradbench.evals import Workload
from adcompare.gradbench.ht_input import read_input
from adcompare.gradbench.ht_model import BONE_NAMES, PARENTS, hand_residuals

__all__ = ["MODEL_SIZES", "POINTS", "hand_input", "ht_workloads", "synthetic_model"]

#: The correspondence counts of GradBench's twelve ht workloads, hand1 … hand12.
POINTS = (100, 192, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 100_000)
#: Vertices of ADBench's two hand models; both have 1,084 triangles.
MODEL_SIZES = {"small": 544, "big": 10_000}
_TRIANGLES = 1084


def _rotation(angle_axis: np.ndarray) -> np.ndarray:
    angle = np.linalg.norm(angle_axis)
    x, y, z = angle_axis / angle
    cross = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * cross + (1.0 - np.cos(angle)) * cross @ cross


def _rest_pose(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Base relatives (22, 4, 4) and the absolutes they compose to."""
    relatives = np.tile(np.eye(4), (22, 1, 1))
    absolutes = np.empty_like(relatives)
    for bone, parent in enumerate(PARENTS):
        relatives[bone, :3, :3] = _rotation(rng.normal(0.0, 0.6, 3))
        # A short offset from the parent, mostly along its z axis.
        relatives[bone, :3, 3] = rng.normal(0.0, 0.02, 3) + (0.0, 0.0, 0.03 * (parent >= 0))
        absolutes[bone] = relatives[bone] if parent < 0 else absolutes[parent] @ relatives[bone]
    return relatives, absolutes


def _skin(rng: np.random.Generator, nverts: int) -> tuple[np.ndarray, np.ndarray]:
    """Each vertex's bone (sorted, so neighbouring numbers lie near) and its weights."""
    bones = np.sort(rng.integers(0, 22, nverts))
    weights = np.zeros((nverts, 22))
    shares = rng.dirichlet((4.0, 1.0, 1.0), nverts)
    children = [[c for c, p in enumerate(PARENTS) if p == b] or [b] for b in range(22)]
    for v, bone in enumerate(bones):
        parent = max(PARENTS[bone], 0)
        child = children[bone][v % len(children[bone])]
        for other, share in zip((bone, parent, child), shares[v]):
            weights[v, other] += share
    return bones, weights


@functools.lru_cache(maxsize=4)
def synthetic_model(nverts: int, ntriangles: int = _TRIANGLES, seed: int = 0) -> dict:
    """A hand model in GradBench's ``data.model`` format (arrays, not yet lists).

    >>> model = synthetic_model(30)
    >>> model["base_positions"].shape, bool(np.allclose(model["weights"].sum(axis=1), 1.0))
    ((30, 4), True)
    """
    rng = np.random.default_rng(seed)
    relatives, absolutes = _rest_pose(rng)
    bones, weights = _skin(rng, nverts)
    offsets = rng.normal(0.0, 0.01, (nverts, 3)) + (0.0, 0.0, 0.015)
    positions = np.einsum("vij,vj->vi", absolutes[bones, :3, :3], offsets)
    positions += absolutes[bones, :3, 3]
    starts = rng.integers(0, max(nverts - 2, 1), ntriangles)
    return {
        "bone_count": 22,
        "bone_names": list(BONE_NAMES),
        "parents": list(PARENTS),
        "base_relatives": relatives,
        "inverse_base_absolutes": np.linalg.inv(absolutes),
        "base_positions": np.hstack([positions, np.ones((nverts, 1))]),
        "weights": weights,
        "triangles": (starts[:, None] + np.arange(3)) % nverts,
        "is_mirrored": False,
    }


def _as_json(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def _model_points(message: dict, theta: np.ndarray) -> np.ndarray:
    """The model points the correspondences pick, with the model posed by ``theta``."""
    problem = read_input(message)
    return -np.reshape(hand_residuals(theta, problem.us, problem.data), (-1, 3))


def hand_input(
    nverts: int,
    ntriangles: int = _TRIANGLES,
    npoints: int = 100,
    variant: str = "complicated",
    seed: int = 0,
    model: dict | None = None,
) -> dict:
    """An evaluate message's ht input: the synthetic hand of ``nverts`` vertices and
    ``ntriangles`` triangles (or ``model``, a ``data.model`` dict) posed with a
    random ``theta`` (seeded by ``seed``), and ``npoints`` correspondences.

    >>> hand_input(nverts=20, npoints=3, variant="simple")["us"]
    []
    """
    if variant not in ("simple", "complicated"):
        raise ValueError(f"hand_input: variant is 'simple' or 'complicated', not {variant!r}")
    rng = np.random.default_rng([seed, npoints])
    model = model or synthetic_model(nverts, ntriangles)
    count = len(model["triangles"] if variant == "complicated" else model["base_positions"])
    us = rng.uniform(0.0, 0.5, (npoints, 2)) if variant == "complicated" else np.zeros((0, 2))
    message = {
        "theta": rng.normal(0.0, 1.0, 26).tolist(),
        "us": us.tolist() if variant == "complicated" else [],
        "data": {
            "model": {key: _as_json(value) for key, value in model.items()},
            "correspondences": rng.integers(0, count, npoints).tolist(),
            "points": np.zeros((npoints, 3)).tolist(),
        },
        "min_runs": 1,
        "min_seconds": 1,
    }
    pose = np.asarray(message["theta"]) + rng.normal(0.0, 0.05, 26)
    points = _model_points(message, pose) + rng.normal(0.0, 0.002, (npoints, 3))
    message["data"]["points"] = points.tolist()
    return message


def ht_workloads(variant: str = "complicated", model: str = "big") -> tuple[Workload, ...]:
    """GradBench's ht workloads, hand1 … hand12, on synthetic hands: by default its
    eval's default list (the complicated variant, the big model's size).

    >>> [w.description for w in ht_workloads("simple", "small")][-1]
    'hand12_t26_c100000'
    """
    nverts = MODEL_SIZES[model]
    return tuple(
        Workload(
            f"hand{i}_t26_c{n}",
            lambda n=n, i=i: hand_input(nverts, npoints=n, variant=variant, seed=i),
        )
        for i, n in enumerate(POINTS, start=1)
    )
