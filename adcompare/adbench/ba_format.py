"""Reader for ADBench's bundle-adjustment text format.

The file holds ``n m p`` (cameras, points, observations) and then ONE
camera (11 values: Rodrigues rotation r1..r3, centre C1..C3, focal length f,
principal point u0 v0, radial distortion k1 k2), ONE point (3 values), ONE
weight and ONE feature (x, y). As ADBench's own reader does, every camera,
point, weight and feature is a copy of these, and observation i sees camera
``i mod n`` and point ``i mod m``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adcompare.adbench.tokens import NumberStream

__all__ = ["CAMERA_PARAMS", "BAData", "read_adbench_ba", "replicated"]

#: Parameters per camera.
CAMERA_PARAMS = 11


@dataclass(frozen=True)
class BAData:
    """A bundle-adjustment instance."""

    cameras: np.ndarray  # (n, 11)
    points: np.ndarray  # (m, 3)
    weights: np.ndarray  # (p,)
    observations: np.ndarray  # (p, 2): camera index, point index
    features: np.ndarray  # (p, 2)

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(n, m, p)``: cameras, points, observations."""
        return self.cameras.shape[0], self.points.shape[0], self.weights.shape[0]

    @property
    def params(self) -> np.ndarray:
        """The flat parameter vector: cameras, then points, then weights."""
        return np.concatenate([self.cameras.ravel(), self.points.ravel(), self.weights])


def replicated(n: int, m: int, p: int, camera, point, weight: float, feature) -> BAData:
    """n copies of ``camera``, m of ``point``, p of ``weight`` and ``feature``, as ADBench
    and GradBench build an instance: observation i sees camera ``i mod n`` and point ``i mod m``.

    >>> data = replicated(2, 3, 4, np.arange(11.0), np.ones(3), 0.5, np.zeros(2))
    >>> data.sizes, data.observations[3].tolist()
    ((2, 3, 4), [1, 0])
    """
    index = np.arange(p)
    return BAData(
        cameras=np.tile(np.asarray(camera, dtype=np.float64), (n, 1)),
        points=np.tile(np.asarray(point, dtype=np.float64), (m, 1)),
        weights=np.full(p, float(weight)),
        observations=np.stack([index % n, index % m], axis=1),
        features=np.tile(np.asarray(feature, dtype=np.float64), (p, 1)),
    )


def read_adbench_ba(path: str | Path) -> BAData:
    """Read an ADBench BA file and replicate its camera, point, weight and feature.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ba.txt"
    >>> _ = path.write_text("2 10 10\\n" + "0.1 " * 11 + "\\n1 2 3\\n0.5\\n10 20\\n")
    >>> data = read_adbench_ba(path)
    >>> data.sizes, data.params.size
    ((2, 10, 10), 62)
    """
    stream = NumberStream(path)
    n, m, p = (int(v) for v in stream.ints(3, "the sizes n m p", minimum=1))
    camera = stream.floats(CAMERA_PARAMS, "one camera (r1 r2 r3 C1 C2 C3 f u0 v0 k1 k2)")
    point = stream.floats(3, "one 3-D point")
    weight = stream.floats(1, "one weight")
    feature = stream.floats(2, "one feature (x y)")
    stream.expect_end()
    return replicated(n, m, p, camera, point, weight[0], feature)
