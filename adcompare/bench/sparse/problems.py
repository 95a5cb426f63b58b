"""Problems with sparse derivatives, swept over their size.

Each is written once against an array namespace ``xp`` (numpy or
adcompare), as :mod:`~adcompare.bench.problems` writes its problems, and
built at a size into an :class:`~adcompare.bench.problems.Instance`.

``kind`` says what is differentiated: ``"jacobian"`` (a map from ``n``
inputs to ``m`` outputs) or ``"hessian"`` (a scalar function's Hessian).
Bundle adjustment is generated as ADBench generates its instances from one
file: one camera, point, weight and feature, replicated so that observation
``i`` sees camera ``i mod n`` and point ``i mod m`` (here with a small
perturbation drawn from a fixed seed, so that the copies differ).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from adcompare import adbench
from adcompare.adbench.ba import BAProblem
from adcompare.adbench.ba_format import BAData
from adcompare.bench.problems import Instance

__all__ = ["SPARSE_PROBLEMS", "SparseProblem", "ba_instance", "get_sparse_problem"]


@dataclass(frozen=True)
class SparseProblem:
    """A family of functions with sparse derivatives; ``sizes`` is its default sweep.

    ``symmetric``: its Jacobian is symmetric (a gradient's), so it may be
    coloured as a Hessian.
    """

    name: str
    kind: str
    description: str
    make: Callable
    sizes: tuple
    size_name: str = "n"
    symmetric: bool = False

    def build(self, size) -> Instance:
        """The problem at ``size``.

        >>> inst = get_sparse_problem("arrowhead").build(5)
        >>> inst.n, inst.m
        (5, 5)
        """
        f, x = self.make(size)
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        out = np.asarray(f(np, x))
        return Instance(self.name, {self.size_name: size}, f, x, x.size, out.size, self.kind)


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
    return (lambda xp, x: problem.residuals(x)), problem.params


SPARSE_PROBLEMS: dict[str, SparseProblem] = {
    p.name: p
    for p in [
        SparseProblem(
            "bratu-1d",
            "jacobian",
            "1-D Bratu residual u'' + 2eᵘ on n points: a tridiagonal Jacobian",
            _bratu_1d,
            (16, 64, 256, 1024, 4096),
            symmetric=True,
        ),
        SparseProblem(
            "laplacian-2d",
            "jacobian",
            "2-D residual Δu + u³ − s on a k × k grid: the five-point stencil",
            _laplacian_2d,
            (4, 8, 16, 32, 64),
            size_name="k",
            symmetric=True,
        ),
        SparseProblem(
            "arrowhead",
            "jacobian",
            "arrowhead map F₀ = Σxᵢ², Fᵢ = x₀xᵢ + sin xᵢ",
            _arrowhead,
            (16, 64, 256, 1024),
        ),
        SparseProblem(
            "rosenbrock-hessian",
            "hessian",
            "chained Rosenbrock: a tridiagonal Hessian",
            _rosenbrock,
            (16, 64, 256, 1024, 4096),
        ),
        SparseProblem(
            "bundle-adjustment",
            "jacobian",
            "ADBench bundle adjustment: its test instance, then generated with 10, 100 and "
            f"1,000 cameras ({BA_POINTS_PER_CAMERA} points and {BA_OBSERVATIONS_PER_CAMERA} "
            "observations per camera)",
            _bundle_adjustment,
            ("test", 10, 100, 1000),
            size_name="cameras",
        ),
    ]
}


def get_sparse_problem(name: str) -> SparseProblem:
    """The sparse problem called ``name``, with a clear error for an unknown one.

    >>> get_sparse_problem("arrowhead").kind
    'jacobian'
    """
    try:
        return SPARSE_PROBLEMS[name]
    except KeyError:
        raise ValueError(
            f"unknown sparse problem {name!r}; the sparse problems are {', '.join(SPARSE_PROBLEMS)}"
        ) from None
