"""Forward against reverse mode on my own function, timed by pytest-benchmark."""

import numpy as np
import pytest

FREQUENCIES = np.arange(1.0, 9.0)[:, None]


def mymodel(x):
    """R^n → R^8: eight smooth features of n parameters, written with plain numpy."""
    hidden = np.tanh(np.cumsum(x) / np.sqrt(x.size))
    return np.sum(np.sin(FREQUENCIES * hidden), axis=1)


@pytest.mark.adcompare(modes=["f", "forward", "reverse"], n=[2, 8, 32, 128])
def test_mymodel(adcompare_bench, n):
    adcompare_bench(mymodel, np.linspace(-1.0, 1.0, n))
