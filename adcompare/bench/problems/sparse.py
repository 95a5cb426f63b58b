"""Problems with sparse derivatives, swept over their size: the sparse study's.

Each is written once against an array namespace ``xp`` (numpy or
adcompare) and defined by :func:`~adcompare.bench.problems.problem`, as every
problem is, with ``studies=("sparse",)``: the sparse study lists them from
the one registry. A map from ``n`` inputs to ``m`` outputs has its Jacobian
measured, a scalar function its Hessian.
Bundle adjustment is generated as ADBench generates its instances from one
file: one camera, point, weight and feature, replicated so that observation
``i`` sees camera ``i mod n`` and point ``i mod m`` (here with a small
perturbation drawn from a fixed seed, so that the copies differ).
"""

from __future__ import annotations

import zlib

import numpy as np

from adcompare import adbench
from adcompare.adbench.ba import BAProblem
from adcompare.adbench.ba_format import BAData
from adcompare.adbench.plain import ba_residuals_numpy
from adcompare.bench.problems.define import problem

__all__ = ["SPARSE_PROBLEMS", "ba_instance"]


def _rng(name: str, size) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(name.encode()), zlib.crc32(str(size).encode())])


def _bratu_1d(n: int):
    """F(u) = u'' + λ eᵘ on n interior points, u = 0 at both ends: tridiagonal."""
    scale = float((n + 1) ** 2)
    zero = np.zeros(1)

    def f(xp, u):
        padded = xp.concatenate([zero, u, zero])
        return (padded[:-2] - 2.0 * u + padded[2:]) * scale + 2.0 * xp.exp(u)

    return f, _rng("bratu", n).uniform(0.0, 0.5, n)


def _laplacian_2d(k: int):
    """F(u) = Δu + u³ − s on a k × k grid, five-point Laplacian, zero boundary."""
    scale = float((k + 1) ** 2)
    rng = _rng("laplacian", k)
    source = rng.standard_normal(k * k)
    row, column = np.zeros((1, k)), np.zeros((k + 2, 1))

    def f(xp, u):
        grid = xp.reshape(u, (k, k))
        padded = xp.concatenate([row, grid, row], axis=0)
        padded = xp.concatenate([column, padded, column], axis=1)
        neighbours = padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
        laplacian = (neighbours - 4.0 * grid) * scale
        return xp.reshape(laplacian, (k * k,)) + u**3 - source

    return f, rng.uniform(-1.0, 1.0, k * k)


def _arrowhead(n: int):
    """F₀ = Σ xᵢ², Fᵢ = x₀xᵢ + sin xᵢ: one dense row, one dense column, a diagonal."""

    def f(xp, x):
        head = xp.reshape(xp.sum(x * x), (1,))
        return xp.concatenate([head, x[0] * x[1:] + xp.sin(x[1:])])

    return f, _rng("arrowhead", n).uniform(-1.0, 1.0, n)


def _rosenbrock(n: int):
    """Chained Rosenbrock Σ 100(x_{i+1} − x_i²)² + (1 − x_i)²: a tridiagonal Hessian."""

    def f(xp, x):
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    return f, np.where(np.arange(n) % 2 == 0, -1.2, 1.0)


#: Points and observations per camera in the generated BA instances.
BA_POINTS_PER_CAMERA = 5
BA_OBSERVATIONS_PER_CAMERA = 12


def ba_instance(cameras: int | str) -> BAProblem:
    """ADBench's bundled test instance (``"test"``), or one generated with ``cameras``.

    >>> problem = ba_instance(10)
    >>> problem.data.sizes, problem.n_params
    ((10, 50, 120), 380)
    """
    template = adbench.bundled("adbench-ba-test")
    if cameras == "test":
        return template
    n = int(cameras)
    m, p = BA_POINTS_PER_CAMERA * n, BA_OBSERVATIONS_PER_CAMERA * n
    rng = _rng("ba", n)
    one = template.data
    index = np.arange(p)
    data = BAData(
        cameras=one.cameras[:1] * (1.0 + 0.01 * rng.standard_normal((n, 11))),
        points=one.points[:1] * (1.0 + 0.01 * rng.standard_normal((m, 3))),
        weights=one.weights[:1] * (1.0 + 0.01 * rng.standard_normal(p)),
        observations=np.stack([index % n, index % m], axis=1),
        features=one.features[:1] * (1.0 + 0.01 * rng.standard_normal((p, 2))),
    )
    return BAProblem(data, name=f"ba-{n}")


def _bundle_adjustment(cameras):
    problem = ba_instance(cameras)

    def f(xp, x):
        # The op set's BA for numpy and adcompare; the same formulas in another library's.
        if xp.__name__ in ("numpy", "adcompare"):
            return problem.residuals(x)
        return ba_residuals_numpy(problem, x, xp)

    return f, problem.params


#: The sparse study's problems, in the order it measures them.
SPARSE_PROBLEMS = [
    problem(
        build=_bratu_1d,
        name="bratu-1d",
        description="1-D Bratu residual u'' + 2eᵘ on n points: a tridiagonal Jacobian",
        sizes=(16, 64, 256, 1024, 4096),
        xp=True,
        studies=("sparse",),
        symmetric=True,
    ),
    problem(
        build=_laplacian_2d,
        name="laplacian-2d",
        sweep=("k",),
        description="2-D residual Δu + u³ − s on a k × k grid: the five-point stencil",
        sizes=(4, 8, 16, 32, 64),
        xp=True,
        studies=("sparse",),
        symmetric=True,
    ),
    problem(
        build=_arrowhead,
        name="arrowhead",
        description="arrowhead map F₀ = Σxᵢ², Fᵢ = x₀xᵢ + sin xᵢ",
        sizes=(16, 64, 256, 1024),
        xp=True,
        studies=("sparse",),
    ),
    problem(
        build=_rosenbrock,
        name="rosenbrock-hessian",
        description="chained Rosenbrock: a tridiagonal Hessian",
        sizes=(16, 64, 256, 1024, 4096),
        xp=True,
        studies=("sparse",),
    ),
    problem(
        build=_bundle_adjustment,
        name="bundle-adjustment",
        sweep=("cameras",),
        description="ADBench bundle adjustment: its test instance, then generated with 10, 100 "
        f"and 1,000 cameras ({BA_POINTS_PER_CAMERA} points and {BA_OBSERVATIONS_PER_CAMERA} "
        "observations per camera)",
        sizes=("test", 10, 100, 1000),
        xp=True,
        studies=("sparse",),
    ),
]
