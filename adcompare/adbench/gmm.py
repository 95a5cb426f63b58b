"""The Gaussian mixture objective, written once against the op set.

Two conventions share one formula. With Q_k lower triangular (diagonal
exp(q_k), strictly lower part filled column by column from l_k),
n = D + m + 1 and log Γ_D the multivariate log-gamma function,

    likelihood = −N·D/2·log 2π + Σ_i logsumexp_k(α_k + Σ_j q_kj − ½‖Q_k (x_i − μ_k)‖²)
                 − N·logsumexp(α)
    prior      = Σ_k [½γ²(‖exp(q_k)‖² + ‖l_k‖²) − m·Σ_j q_kj]
                 − K·[n·D·(log γ − ½ log 2) − log Γ_D(n/2)]

ADBench's objective is ``likelihood + prior``. GradBench's is ``likelihood −
prior``: the log posterior under a Wishart prior on the precision matrices
Q_kᵀQ_k. GradBench lists two further corrections (the transposition of the
precision factors, and the prior being on precisions rather than
covariances); they correct ADBench's paper, not its formula as implemented
above, which GradBench's reference outputs confirm: with Q_k transposed its
1000-point instance would give −3805.2, not its reference −3916.46.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

import adcompare as ad
from adcompare.adbench.flat import FlatParameters
from adcompare.adbench.gmm_format import GMMData

__all__ = [
    "CONVENTIONS",
    "GMMProblem",
    "gmm_constant",
    "gmm_objective",
    "log_multigamma",
    "lower_positions",
]

#: The sign of the prior term under each convention.
CONVENTIONS = {"adbench": 1.0, "gradbench": -1.0}


def log_multigamma(a: float, d: int) -> float:
    """log Γ_d(a) = d(d−1)/4·log π + Σ_{j=1..d} lgamma(a + (1−j)/2).

    >>> round(log_multigamma(2.5, 1), 12) == round(math.lgamma(2.5), 12)
    True
    """
    return d * (d - 1) / 4 * math.log(math.pi) + sum(
        math.lgamma(a + (1 - j) / 2) for j in range(1, d + 1)
    )


def _precision_factors(q, lower, k: int, d: int):
    """The K lower-triangular matrices Q_k, shape (K, D, D)."""
    diagonal = np.arange(d)
    factors = ad.scatter_add(ad.exp(q), index=(slice(None), diagonal, diagonal), shape=(k, d, d))
    if d == 1:
        return factors
    rows, cols = lower_positions(d)
    return factors + ad.scatter_add(lower, index=(slice(None), rows, cols), shape=(k, d, d))


@functools.lru_cache(maxsize=16)
def lower_positions(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the strictly lower triangle, column by column: Q[j, i] for
    i < j takes the next value of l. Built once per d (read-only): at d = 64 building
    them took a tenth of the objective's time.

    >>> [positions.tolist() for positions in lower_positions(3)]
    [[1, 2, 2], [0, 0, 1]]
    """
    rows = np.array([j for i in range(d) for j in range(i + 1, d)])
    cols = np.array([i for i in range(d) for _ in range(i + 1, d)])
    rows.setflags(write=False)
    cols.setflags(write=False)
    return rows, cols


def gmm_objective(alpha, mu, q, lower, x: np.ndarray, gamma: float, m: int, convention: str):
    """The GMM objective of α (K), μ (K, D), q (K, D) and l (K, D(D−1)/2).

    ``convention`` is ``"adbench"`` or ``"gradbench"`` (see the module).

    >>> import numpy as np
    >>> one = np.zeros((1, 1))
    >>> value = gmm_objective(np.zeros(1), one, one, np.zeros((1, 0)), one, 1.0, 0, "adbench")
    >>> print(round(float(value), 9), round(-0.5 * np.log(2 * np.pi) + 0.5 + np.log(2), 9))
    0.274208647 0.274208647
    """
    if convention not in CONVENTIONS:
        raise ValueError(
            f"gmm_objective: unknown convention {convention!r}; use one of {sorted(CONVENTIONS)}"
        )
    n_points, d = x.shape
    k = alpha.shape[0]
    factors = _precision_factors(q, lower, k, d)
    # Q_k (x_i − μ_k) = Q_k x_i − Q_k μ_k, as one product of the points in homogeneous
    # coordinates (x_i, 1) with [Q_kᵀ; −(Q_k μ_k)ᵀ]. The points are data, so the
    # derivative takes one product of the big (K, N, D) cotangent with them (for the
    # factors and, through the column of ones, for Q_k μ_k: the sum over the points),
    # not a second one with the factors for the centred points, and no (K, N, D)
    # subtraction or sum is made.
    transposed = ad.transpose(factors, (0, 2, 1))
    shift = ad.matmul(ad.reshape(mu, (k, 1, d)), transposed)  # (Q_k μ_k)ᵀ, (K, 1, D)
    homogeneous = np.concatenate([x, np.ones((n_points, 1))], axis=1)
    mapped = ad.matmul(homogeneous, ad.concatenate([transposed, -shift], axis=1))
    sum_q = ad.sum(q, axis=1)
    main = ad.reshape(alpha + sum_q, (k, 1)) - 0.5 * ad.sum(mapped * mapped, axis=2)
    likelihood = ad.sum(ad.logsumexp(main, axis=0)) - n_points * ad.logsumexp(alpha)
    # Σ_k ‖exp(q_k)‖² + ‖l_k‖² is the squared Frobenius norm of the factors already
    # built (ADBench's PyTorch code likewise reuses exp(q)); the prior's sign and the
    # Python numbers are multiplied out first, and both constant terms join in one.
    sign = CONVENTIONS[convention]
    prior = (sign * 0.5 * gamma**2) * ad.sum(factors * factors) - (sign * m) * ad.sum(sum_q)
    return likelihood + prior + gmm_constant(n_points, k, d, gamma, m, sign)


def gmm_constant(n_points: int, k: int, d: int, gamma: float, m: int, sign: float) -> float:
    """The objective's terms that no parameter enters: −N·D/2·log 2π − sign·K·C, with
    C = n·D·(log γ − ½ log 2) − log Γ_D(n/2) and n = D + m + 1 (``sign``: the prior's,
    :data:`CONVENTIONS`).

    >>> d, m, gamma = 2, 0, 1.0
    >>> c = 3 * d * (math.log(gamma) - 0.5 * math.log(2)) - log_multigamma(1.5, d)
    >>> bool(gmm_constant(10, 4, d, gamma, m, -1.0) == -10 * math.log(2 * math.pi) + 4 * c)
    True
    """
    dof = d + m + 1
    per_component = dof * d * (math.log(gamma) - 0.5 * math.log(2)) - log_multigamma(dof / 2, d)
    return -n_points * d / 2 * math.log(2 * math.pi) - sign * k * per_component


@dataclass
class GMMProblem(FlatParameters):
    """A GMM instance as a function of ONE flat parameter vector.

    ``params`` is laid out as ADBench's gradient: α, μ row by row, then each
    component's q and l. ``reference`` holds ``{"objective", "gradient"}``
    computed by another tool, when known.

    >>> from adcompare.adbench import bundled
    >>> problem = bundled("adbench-gmm-test")
    >>> problem.n_params, problem.data.sizes  # α 3, μ 3×2, q 3×2, l 3×1
    (18, (2, 3, 1))
    """

    data: GMMData
    convention: str
    name: str = "gmm"
    reference: dict | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.convention not in CONVENTIONS:
            raise ValueError(
                f"GMMProblem: unknown convention {self.convention!r}; use one of "
                f"{sorted(CONVENTIONS)}"
            )

    def split(self, params):
        """``(α, μ, q, l)`` as views of the flat ``params`` (any op-set value)."""
        d, k, _ = self.data.sizes
        self.check_flat(params)
        alpha = params[:k]
        mu = ad.reshape(params[k : k + k * d], (k, d))
        icf = ad.reshape(params[k + k * d :], (k, -1))
        return alpha, mu, icf[:, :d], icf[:, d:]

    def objective(self, params):
        """The objective at ``params`` (plain, dual or tensor values)."""
        alpha, mu, q, lower = self.split(params)
        return gmm_objective(
            alpha, mu, q, lower, self.data.x, self.data.gamma, self.data.m, self.convention
        )
