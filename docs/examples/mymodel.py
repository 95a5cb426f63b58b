"""Measure your own function: its cost against n by every mode, the crossover, and a
recommendation, in reports/latest/mymodel/ (report.md, mymodel.png, summary.png).

Run it with ``python docs/examples/mymodel.py``.
"""

import numpy as np

import adcompare.bench as bench


def mymodel(x):
    """R^n -> R^4, plain numpy: a running tanh, a projection and a 4×4 solve."""
    n = x.size
    hidden = np.tanh(np.cumsum(x) / np.sqrt(n))
    projection = np.cos(np.outer(np.arange(1, 5), np.arange(n)) / n)
    z = np.einsum("kn,n->k", projection, hidden) / np.sqrt(n)
    system = 3.0 * np.eye(4) + np.einsum("i,j->ij", z, z) / 4
    return np.linalg.solve(system, z)


if __name__ == "__main__":
    problem = bench.problem(mymodel, description="a running tanh, a projection, a solve")
    results = bench.measure(problem, sizes=[4, 16, 64, 256, 1024])
    print(f"{len(results)} cells; report: {bench.LATEST / 'mymodel' / 'report.md'}")
