"""Instances the package generates itself, in ADBench's and GradBench's layouts.

No data file ships with adcompare: every built-in GMM, BA and LSTM instance
is drawn here from NumPy's generator seeded by the problem and its sizes, so
the same sizes always give the same instance. The distributions follow the
published inputs' kinds, not their values:

- GMM: points x, weights α, log-diagonals q and lower entries l standard
  normal, means μ uniform on [0, 1); γ = 1, m = 0 unless given.
- BA: one camera (rotation, centre, focal length, principal point, radial
  distortion), one point seen in front of it, one weight in (0.2, 1) and one
  feature near the point's projection, replicated as ADBench does
  (:func:`~adcompare.adbench.ba_format.replicated`).
- LSTM: parameters and initial state uniform on [0, 1); the sequence is
  ``b``-bit codes (most significant bit first) of generated text: printable
  ASCII characters drawn uniformly, not a real text.
"""

from __future__ import annotations

import numpy as np

from adcompare.adbench.ba import ba_residuals
from adcompare.adbench.ba_format import BAData, replicated
from adcompare.adbench.gmm_format import GMMData
from adcompare.adbench.lstm_format import LSTMData

__all__ = ["ba_observation", "generate_ba", "generate_gmm", "generate_lstm", "text_bits"]

# The first entry of each seed names the problem, so equal sizes differ between problems.
_GMM, _BA, _LSTM = 1, 2, 3


def generate_gmm(d: int, k: int, n: int, gamma: float = 1.0, m: int = 0) -> GMMData:
    """A GMM instance of ``k`` components in ``d`` dimensions and ``n`` points.

    >>> data = generate_gmm(2, 3, 10)
    >>> data.sizes, data.icf.shape, bool((generate_gmm(2, 3, 10).x == data.x).all())
    ((2, 3, 10), (3, 3), True)
    """
    rng = np.random.default_rng([_GMM, d, k, n])
    alpha = rng.standard_normal(k)
    mu = rng.random((k, d))
    icf = rng.standard_normal((k, d + d * (d - 1) // 2))
    x = rng.standard_normal((n, d))
    return GMMData(alpha, mu, icf, x, float(gamma), int(m))


def generate_ba(n: int, m: int, p: int) -> BAData:
    """A BA instance of ``n`` cameras, ``m`` points and ``p`` observations: the copies of
    :func:`ba_observation`'s camera, point, weight and feature.

    >>> data = generate_ba(2, 10, 10)
    >>> data.sizes, data.params.size
    ((2, 10, 10), 62)
    """
    return replicated(n, m, p, *ba_observation(n, m, p))


def ba_observation(n: int, m: int, p: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """The one camera (11), point (3), weight and feature (2) of the BA instance of these
    sizes, as ADBench's and GradBench's files hold them.

    >>> camera, point, weight, feature = ba_observation(2, 10, 10)
    >>> camera.shape, point.shape, 0.2 <= weight < 1.0, feature.shape
    ((11,), (3,), True, (2,))
    """
    rng = np.random.default_rng([_BA, n, m, p])
    while True:
        camera = np.concatenate(
            [
                rng.normal(0.0, 0.5, 3),  # Rodrigues rotation
                rng.normal(0.0, 10.0, 3),  # centre
                rng.uniform(200.0, 500.0, 1),  # focal length
                rng.normal(0.0, 10.0, 2),  # principal point
                rng.uniform(0.0, 0.1, 1),  # k1
                rng.uniform(0.0, 0.01, 1),  # k2
            ]
        )
        point = rng.normal(0.0, 10.0, 3)
        one = replicated(1, 1, 1, camera, point, 1.0, np.zeros(2))
        pixel = ba_residuals(one.cameras, one.points, one.weights, one.observations, one.features)
        # Keep the point well in front of or behind the camera: its image is finite.
        if np.all(np.abs(pixel[:2]) < 1e4):
            break
    feature = pixel[:2] + rng.normal(0.0, 2.0, 2)
    return camera, point, float(rng.uniform(0.2, 1.0)), feature


def text_bits(codes: np.ndarray, bits: int) -> np.ndarray:
    """Each character code as a row of ``bits`` 0/1 floats, most significant bit first.

    >>> print(text_bits(np.array([ord("A")]), 8))
    [[0. 1. 0. 0. 0. 0. 0. 1.]]
    """
    shifts = np.arange(bits - 1, -1, -1)
    return ((np.asarray(codes)[:, None] >> shifts) & 1).astype(np.float64)


def generate_lstm(layers: int, characters: int, bits: int = 14) -> LSTMData:
    """An LSTM instance of ``layers`` layers over ``characters`` generated characters.

    >>> data = generate_lstm(2, 5)
    >>> data.sizes, data.params.size, np.unique(data.sequence).tolist()
    ((2, 5, 14), 266, [0.0, 1.0])
    """
    rng = np.random.default_rng([_LSTM, layers, characters, bits])
    main = rng.random((layers, 8 * bits))
    extra = rng.random((3, bits))
    state = rng.random((layers, 2, bits))
    text = rng.integers(32, 127, characters)  # printable ASCII
    return LSTMData(main, extra, state, text_bits(text, bits))
