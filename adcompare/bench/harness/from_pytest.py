"""pytest-benchmark's JSON read as the harness's results, so ``adcompare report`` draws it.

A benchmark becomes a cell when its ``extra_info`` carries the cell's
identity and counts: ``problem``, ``mode``, ``size``, ``n`` and ``m`` (and
``family``, ``counts``, ``peak_bytes``, ``check``), as
:func:`~adcompare.bench.harness.pytest_cells.measure` writes them, both in
the project's ``benchmarks/`` suite and in a user's suite through the
pytest plugin (the ``adcompare`` marker). A benchmark without them (a
user's other benchmarks in the same suite) is passed over; one that has
them but does not fit the cell schema is left out and named in
:attr:`~adcompare.bench.harness.results.Results.rejected`. The statistics
become the cell's time (median, IQR, min, max per call; rounds as repeats).
"""

from __future__ import annotations

from pathlib import Path

from adcompare.bench.harness.cells import ResultsError, cell_problem
from adcompare.bench.harness.env import environment_key
from adcompare.bench.harness.results import Results

__all__ = ["IDENTITY", "from_pytest_benchmark", "is_pytest_benchmark"]

#: The ``extra_info`` fields that make a benchmark one of adcompare's cells.
IDENTITY = ("problem", "mode", "size", "n", "m")


def is_pytest_benchmark(data) -> bool:
    """Whether parsed JSON is pytest-benchmark's (``--benchmark-json``) rather than adcompare's.

    >>> is_pytest_benchmark({"machine_info": {}, "benchmarks": []}), is_pytest_benchmark({})
    (True, False)
    """
    return isinstance(data, dict) and "benchmarks" in data and "machine_info" in data


def _object(value) -> dict:
    return value if isinstance(value, dict) else {}


def _environment(data: dict) -> dict:
    machine = _object(data.get("machine_info"))
    cpu = _object(machine.get("cpu"))
    return {
        "machine": machine.get("node"),
        "platform": machine.get("platform") or machine.get("system"),
        "cpu": cpu.get("brand_raw"),
        "cpus_total": cpu.get("count"),
        "python": machine.get("python_version"),
        "source": "pytest-benchmark " + str(data.get("version", "")),
    }


def _cell(bench: dict, info: dict, stats: dict, env: str, finished) -> dict:
    return {
        "problem": info["problem"],
        "family": info.get("family"),
        "description": info.get("description"),
        "mode": info["mode"],
        "size": info["size"],
        "n": info["n"],
        "m": info["m"],
        "status": "ok",
        "time": {
            "median": stats.get("median"),
            "iqr": stats.get("iqr"),
            "min": stats.get("min"),
            "max": stats.get("max"),
            "repeats": stats.get("rounds"),
            "loops": stats.get("iterations", 1),
        },
        "counts": info.get("counts"),
        "memory": {"peak_bytes": info.get("peak_bytes")},
        "check": info.get("check"),
        "env": env,
        "source": f"pytest-benchmark: {bench.get('fullname', bench.get('name'))}",
        "finished": finished,
    }


def from_pytest_benchmark(data: dict, path: Path) -> Results:
    """The cells of pytest-benchmark JSON whose benchmarks carry adcompare's ``extra_info``.

    Raises :class:`~adcompare.bench.harness.cells.ResultsError` when none does.

    >>> stats = {"median": 2e-5, "iqr": 1e-6, "min": 1.9e-5, "max": 3e-5, "rounds": 9}
    >>> info = {"problem": "mine", "family": "many-inputs", "mode": "reverse",
    ...         "size": {"n": 8}, "n": 8, "m": 1}
    >>> data = {"machine_info": {}, "benchmarks": [
    ...     {"name": "test_mine[n8-reverse]", "stats": stats, "extra_info": info},
    ...     {"name": "test_other", "stats": stats, "extra_info": {}}]}
    >>> [(c["problem"], c["mode"], c["time"]["median"])
    ...  for c in from_pytest_benchmark(data, Path("out.json")).cells]
    [('mine', 'reverse', 2e-05)]
    """
    description = _environment(data)
    results = Results()
    key = environment_key(description)
    results.add_environment(key, description)
    benchmarks = data["benchmarks"] if isinstance(data["benchmarks"], list) else []
    for bench in map(_object, benchmarks):
        info = _object(bench.get("extra_info"))
        stats = _object(bench.get("stats"))
        if not all(k in info for k in IDENTITY) or not stats:
            continue
        cell = _cell(bench, info, stats, key, data.get("datetime"))
        problem = cell_problem(cell)
        if problem is None:
            results.add(cell)
        else:
            results.rejected.append(f"{path}: benchmark {bench.get('name')!r} {problem}; left out")
    if not results.cells:
        raise ResultsError(
            f"{path} is pytest-benchmark JSON, but none of its benchmarks has timings and "
            f"adcompare's extra_info ({', '.join(IDENTITY)}); time your function with the "
            "pytest plugin's adcompare_bench fixture (@pytest.mark.adcompare), or run "
            "'pytest benchmarks --benchmark-enable --benchmark-json FILE' for adcompare's own"
        )
    results.data["runs"].append({"started": data.get("datetime"), "config": {"source": str(path)}})
    return results
