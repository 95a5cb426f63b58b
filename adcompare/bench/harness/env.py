"""What produced a measurement: the machine, the library versions, the threads.

Every cell of a results file names one of these descriptions by its key,
so results from different machines can be merged and still be told apart.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import platform
import sys
from importlib import metadata

__all__ = [
    "ALLOCATOR",
    "THREAD_VARIABLES",
    "allocator_setting",
    "describe",
    "environment_key",
    "pin_allocator",
]

#: Environment variables that set how many threads numpy's BLAS uses.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


#: glibc's ``mallopt`` parameters (malloc.h) and the values a sweep pins them to.
#: Left adaptive, glibc raises its mmap threshold each time a large block is freed,
#: so whether numpy's temporaries of a few MB come from reused heap pages or fresh
#: mmap'd ones (page faults on every call) depends on what ran before: numpy's f
#: for Rosenbrock at n = 10⁶ varied 4× in one process. Pinned, every block below
#: 32 MiB (glibc's largest threshold on 64-bit) comes from the heap, and freed
#: memory below 1 GiB stays mapped for the next call.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
ALLOCATOR = {"mmap_threshold": 32 * 2**20, "trim_threshold": 2**30}

_pinned: dict | None = None


def _glibc():
    """glibc as a ctypes library, or ``None`` on another C library or system."""
    if not hasattr(os, "confstr"):
        return None
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except (OSError, ValueError):
        return None


def pin_allocator() -> dict:
    """Fix glibc's mmap and trim thresholds for the rest of the process.

    Returns what :func:`allocator_setting` reports afterwards. A no-op
    (saying so) where the C library is not glibc. The thresholds cannot be
    made adaptive again, so a sweep pins them once, before its first cell.

    >>> pin_allocator()["pinned"] in (True, False)
    True
    """
    global _pinned
    libc = _glibc()
    if libc is None:
        return allocator_setting()
    applied = all(
        libc.mallopt(parameter, ALLOCATOR[name]) == 1
        for parameter, name in (
            (M_MMAP_THRESHOLD, "mmap_threshold"),
            (M_TRIM_THRESHOLD, "trim_threshold"),
        )
    )
    if applied:
        _pinned = dict(ALLOCATOR)
    return allocator_setting()


def allocator_setting() -> dict:
    """The allocator as recorded with the machine: the C library, whether the
    thresholds are pinned, and their values when they are.

    >>> {"library", "pinned"} <= set(allocator_setting())
    True
    """
    library = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    if _pinned is not None:
        return {"library": library, "pinned": True, **_pinned}
    return {"library": library or "unknown", "pinned": False}


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
    ['allocator', 'blas', 'cpu', 'cpus_available']
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
        "allocator": allocator_setting(),
    }


def environment_key(description: dict) -> str:
    """A short stable key for a description (equal descriptions, equal keys).

    >>> environment_key({"a": 1}) == environment_key({"a": 1})
    True
    """
    text = json.dumps(description, sort_keys=True, default=str)
    return "env-" + hashlib.sha256(text.encode()).hexdigest()[:10]
