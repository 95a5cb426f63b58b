"""ADBench's hand files read as GradBench's ht input, for the tests that compare with them.

The files (``../shared/data/gradbench/files/ht``) stay outside the repository:
``<variant>_<size>/model/{bones,vertices,triangles}.txt`` hold the model
(colon-separated: a bone's name, parent, base relative and inverse base
absolute, 16 numbers each, row by row; a vertex's position, normal and
texture coordinates, then its weights as a count and bone:weight pairs; a
triangle's three vertices) and ``hand<k>_t26_c<n>.txt`` an instance (``npts
26``, then per point its correspondence and coordinates, then in the
complicated variant per point its ``us``, then theta).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _rows(path: Path, separator: str | None = ":") -> list[list[str]]:
    return [line.split(separator) for line in path.read_text().splitlines() if line.strip()]


def read_model(folder: Path) -> dict:
    """The ``data.model`` object of GradBench's ht input, from an ADBench model folder."""
    bones = _rows(folder / "bones.txt")
    vertices = _rows(folder / "vertices.txt")
    weights = np.zeros((len(vertices), len(bones)))
    for v, row in enumerate(vertices):
        pairs = row[9 : 9 + 2 * int(row[8])]
        for bone, weight in zip(pairs[::2], pairs[1::2]):
            weights[v, int(bone)] = float(weight)

    def matrices(start: int) -> list:
        return [
            np.reshape([float(x) for x in b[start : start + 16]], (4, 4)).tolist() for b in bones
        ]

    return {
        "bone_count": len(bones),
        "bone_names": [b[0] for b in bones],
        "parents": [int(b[1]) for b in bones],
        "base_relatives": matrices(2),
        "inverse_base_absolutes": matrices(18),
        "base_positions": [[float(x) for x in row[:3]] + [1.0] for row in vertices],
        "weights": weights.tolist(),
        "triangles": [[int(x) for x in row] for row in _rows(folder / "triangles.txt")],
        "is_mirrored": False,
    }


def read_instance(path: Path, complicated: bool) -> dict:
    """GradBench's ht input for one ADBench instance file (its model beside it)."""
    rows = _rows(path, None)
    npoints, ntheta = int(rows[0][0]), int(rows[0][1])
    points = rows[1 : 1 + npoints]
    us = rows[1 + npoints : 1 + 2 * npoints] if complicated else []
    theta = rows[len(rows) - ntheta :]
    return {
        "theta": [float(row[0]) for row in theta],
        "us": [[float(x) for x in row] for row in us],
        "data": {
            "model": read_model(path.parent / "model"),
            "correspondences": [int(row[0]) for row in points],
            "points": [[float(x) for x in row[1:]] for row in points],
        },
        "min_runs": 1,
        "min_seconds": 1,
    }
