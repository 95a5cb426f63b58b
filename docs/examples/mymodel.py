"""A function R^n -> R^16 written with plain numpy, to measure with adcompare.

    adcompare bench --function docs/examples/mymodel.py:f --sizes 16 64 256

measures f by every mode at n = 16, 64 and 256 and writes the cost-against-n
figure, the crossover and a recommendation into reports/latest/f/report.md.
"""

import numpy as np


def f(x):
    """Sixteen smoothed running sums of a solved linear system: R^n -> R^16."""
    n = x.size
    a = np.eye(n) * 4.0 + np.tanh(np.outer(np.arange(n), np.ones(n)) / n)
    y = np.linalg.solve(a, np.tanh(x))
    weights = np.einsum("i,j->ij", np.linspace(0.0, 1.0, 16), np.ones(n) / n)
    return np.tanh(weights @ np.cumsum(y))
