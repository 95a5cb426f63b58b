"""Options and settings of the pytest-benchmark suite.

The regular test run does not collect this folder (pyproject's testpaths),
and pyproject's addopts disable timing; run it with (about 7 minutes on two
idle cores)::

    mkdir -p reports/benchmarks
    pytest benchmarks --benchmark-enable --benchmark-json reports/benchmarks/bench.json
    adcompare report reports/benchmarks/bench.json --out reports/benchmarks

The JSON keeps each benchmark's statistics, not every round it timed (a
fast op runs tens of thousands of rounds: the full file was 168 MB); pass
``--benchmark-save-data`` to keep the rounds too.
"""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits

DEFAULT_SIZES = "8,64,512"
#: The modes timed unless --bench-modes names others: "default" stands for the modes a
#: sweep that names none measures.
DEFAULT_MODES = "default,reverse-replay,forward-replay"


def pytest_addoption(parser):
    group = parser.getgroup("adcompare")
    group.addoption(
        "--bench-sizes",
        default=DEFAULT_SIZES,
        help=f"sizes of the swept count, comma-separated (default {DEFAULT_SIZES}); Jacobian "
        "problems take every (n, m) pair of them",
    )
    group.addoption(
        "--bench-modes",
        default=DEFAULT_MODES,
        help="the modes to time, comma-separated: names or groups of 'adcompare bench --list' "
        f"(default {DEFAULT_MODES}: the sweep's default modes and the replays; add "
        "'eliminate' or 'reverse-reference' by name, as the sweep takes them)",
    )
    group.addoption(
        "--targets-small",
        action="store_true",
        help="time the performance targets at tiny sizes instead of the full ones",
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


def pytest_benchmark_update_json(config, benchmarks, output_json):
    """Drop every benchmark's list of rounds unless ``--benchmark-save-data`` asks for it.

    >>> class Config:
    ...     def getoption(self, name):
    ...         return False
    >>> output = {"benchmarks": [{"stats": {"median": 1.0, "data": [1.0, 1.1]}}]}
    >>> pytest_benchmark_update_json(Config(), [], output)
    >>> output["benchmarks"][0]["stats"]
    {'median': 1.0}
    """
    if config.getoption("benchmark_save_data"):
        return
    for bench in output_json.get("benchmarks", []):
        (bench.get("stats") or {}).pop("data", None)
