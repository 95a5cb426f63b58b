"""Small sweeps and hand-made results shared by the benchmark tests."""

from __future__ import annotations

from adcompare.bench.harness.results import Results
from adcompare.bench.harness.sweep import SweepConfig


def tiny_config(**overrides) -> SweepConfig:
    """A sweep that takes a second or two: tiny sizes, one repeat, no memory run."""
    settings = {
        "problems": ["rosenbrock", "fourier"],
        "modes": ["f", "forward1", "forward", "reverse"],
        "sizes": [2, 4],
        "grid": [2, 4],
        "repeats": 1,
        "budget": 5.0,
        "min_repeat_time": 0.0,
        "memory": False,
    }
    settings.update(overrides)
    return SweepConfig(**settings)


def synthetic_cell(problem, family, mode, size, n, m, seconds, work, **extra) -> dict:
    """A measured cell with the given median time and element work."""
    cell = {
        "problem": problem,
        "family": family,
        "mode": mode,
        "size": size,
        "n": n,
        "m": m,
        "status": "ok",
        "time": {"median": seconds, "iqr": 0.1 * seconds, "min": 0.9 * seconds},
        "counts": {"elements": {"numpy": work}, "tape_bytes": 0},
        "memory": {"peak_bytes": 1000 * n * m},
        "check": None
        if mode == "f"
        else {"against": "x", "error": 1e-15, "tolerance": 1e-8, "ok": True},
        "env": "env-test",
    }
    cell.update(extra)
    return cell


def synthetic_results(forward_per_input=1e-4, reverse_time=1e-3) -> Results:
    """Rosenbrock whose forward time is ``forward_per_input·n`` and reverse time constant.

    Forward (1 lane) and reverse cross where forward_per_input·n = reverse_time.
    """
    results = Results()
    results.add_environment("env-test", {"machine": "test", "cpu": "test", "versions": {}})
    for n in (4, 16, 64, 256):
        size = {"n": n}
        for mode, seconds, work in (
            ("f", 1e-5, 10 * n),
            ("forward1", forward_per_input * n, 30 * n * n),
            ("reverse", reverse_time, 32 * n),
        ):
            results.add(
                synthetic_cell("rosenbrock", "many-inputs", mode, size, n, 1, seconds, work)
            )
    return results
