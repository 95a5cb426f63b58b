"""What produced a measurement: the machine, the library versions, the threads.

Every cell of a results file names one of these descriptions by its key,
so results from different machines can be merged and still be told apart.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from importlib import metadata

__all__ = ["THREAD_VARIABLES", "describe", "environment_key"]

#: Environment variables that set how many threads numpy's BLAS uses.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas() -> str | None:
    import numpy as np

    try:
        config = np.show_config(mode="dicts")
    except (TypeError, ValueError):
        return None
    blas = (config or {}).get("Build Dependencies", {}).get("blas", {})
    name, version = blas.get("name"), blas.get("version")
    return f"{name} {version}" if name else None


def _threads() -> dict:
    from threadpoolctl import threadpool_info

    threads = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    threads["blas_pools"] = [
        {"library": pool.get("internal_api"), "threads": pool.get("num_threads")}
        for pool in threadpool_info()
    ]
    return threads


def describe() -> dict:
    """This process's machine, libraries, dtype and thread settings.

    >>> sorted(describe())[:4]
    ['blas', 'cpu', 'cpus_available', 'cpus_total']
    """
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:
        available = os.cpu_count()
    return {
        "machine": platform.node(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpus_total": os.cpu_count(),
        "cpus_available": available,
        "python": sys.version.split()[0],
        "versions": {
            package: _version(package) for package in ("adcompare", "numpy", "matplotlib", "sympy")
        },
        "blas": _blas(),
        "dtype": "float64",
        "threads": _threads(),
    }


def environment_key(description: dict) -> str:
    """A short stable key for a description (equal descriptions, equal keys).

    >>> environment_key({"a": 1}) == environment_key({"a": 1})
    True
    """
    text = json.dumps(description, sort_keys=True, default=str)
    return "env-" + hashlib.sha256(text.encode()).hexdigest()[:10]
