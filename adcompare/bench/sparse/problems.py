"""The sparse study's problems: those of the one registry that list ``"sparse"``.

They are defined in :mod:`adcompare.bench.problems.sparse` by
:func:`~adcompare.bench.problems.problem`, as every problem is; the study
measures any problem it is given (a user's too): a map from n inputs to m
outputs has its Jacobian measured, a scalar function (m = 1) its Hessian.
"""

from __future__ import annotations

from adcompare.bench.problems import Instance, Problem, get_problem, problems_of

__all__ = ["SPARSE_PROBLEMS", "get_sparse_problem", "kind_of", "resolve"]

#: The problems the sparse study measures when none are named, by name.
SPARSE_PROBLEMS: dict[str, Problem] = {p.name: p for p in problems_of("sparse")}


def get_sparse_problem(name: str) -> Problem:
    """The problem called ``name`` (the sparse study's, or any registered one).

    >>> get_sparse_problem("arrowhead").sizes
    (16, 64, 256, 1024)
    """
    return get_problem(name)


def resolve(problem: str | Problem) -> Problem:
    """A problem given by name or as itself."""
    return problem if isinstance(problem, Problem) else get_sparse_problem(problem)


def kind_of(instance: Instance) -> str:
    """What the study differentiates: ``"hessian"`` for a scalar function, else
    ``"jacobian"``.

    >>> kind_of(get_sparse_problem("rosenbrock-hessian").build(8))
    'hessian'
    """
    return "hessian" if instance.m == 1 else "jacobian"
