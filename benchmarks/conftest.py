"""Options and settings of the pytest-benchmark suite.

The regular test run does not collect this folder (pyproject's testpaths),
and pyproject's addopts disable timing; run it with::

    pytest benchmarks --benchmark-enable --benchmark-json bench.json
    adcompare report bench.json
"""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits

DEFAULT_SIZES = "8,64,512"


def pytest_addoption(parser):
    group = parser.getgroup("adcompare")
    group.addoption(
        "--bench-sizes",
        default=DEFAULT_SIZES,
        help=f"sizes of the swept count, comma-separated (default {DEFAULT_SIZES}); Jacobian "
        "problems take every (n, m) pair of them",
    )
    group.addoption(
        "--targets-small",
        action="store_true",
        help="time the performance targets at tiny sizes instead of the issue's",
    )
    group.addoption(
        "--bench-blas-threads",
        type=int,
        default=1,
        help="threads for numpy's BLAS while measuring (default 1, as 'adcompare bench')",
    )


@pytest.fixture(scope="session", autouse=True)
def blas_threads(request):
    """Measure with the same BLAS threads as ``adcompare bench``."""
    threads = request.config.getoption("--bench-blas-threads")
    with threadpool_limits(limits=threads, user_api="blas"):
        yield threads
