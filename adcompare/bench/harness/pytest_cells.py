"""One cell measured inside a pytest-benchmark test, as the sweep measures it.

The project's ``benchmarks/`` suite and the pytest plugin (the ``adcompare``
marker and the ``adcompare_bench`` fixture, found through the ``pytest11``
entry point) both time a cell with this module: the mode's work is
prepared and called once, its derivative checked against the other engine
(a wrong derivative fails the test before anything is timed), its counts
and peak memory taken in untimed calls, and the benchmark's ``group`` and
``extra_info`` set so that ``adcompare report`` reads the JSON back as cells
(:mod:`~adcompare.bench.harness.from_pytest`). A mode that cannot take the
instance (``Mode.unavailable``, or SymPy refusing a derivative too large to
trace, as the sweep skips it) gives a reason to skip instead.

A user's function enters as ``f(x)`` at a point ``x``, or ``f(*args)`` at
pytree arguments (written with numpy, it runs unchanged under every mode),
made a problem the way every problem is made
(:func:`~adcompare.bench.problems.problem`), named by the test and sized by
the marker's ``n`` and ``m``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare.bench.harness.measure import (
    check_derivative,
    count_work,
    peak_memory,
    refuse_non_finite,
)
from adcompare.bench.harness.modes import MODE_GROUPS, MODES, Mode, expand_modes
from adcompare.bench.problems import Instance, problem
from adcompare.symbolic import SymbolicSizeError

__all__ = ["SIZE_NAMES", "benchmark_group", "marked_modes", "measure", "user_instance"]

#: The size parameters the marker may sweep: the report plots against n or m, or maps (n, m).
SIZE_NAMES = ("n", "m")


def marked_modes(modes, sizes: dict) -> list[str]:
    """The modes named by ``@pytest.mark.adcompare(modes=..., **sizes)``, groups expanded,
    after checking the modes and the sizes; raises ``ValueError`` with one sentence.

    >>> marked_modes(["f", "reverse", "hvp"], {"n": [4, 16]})[:3]
    ['f', 'reverse', 'hvp:fwd-over-rev']
    >>> marked_modes(None, {"n": [4]})
    Traceback (most recent call last):
    ...
    ValueError: modes=None is not a list of mode names; name them as modes=['f', ...]
    >>> marked_modes(["backward"], {"n": [4]})
    Traceback (most recent call last):
    ...
    ValueError: unknown mode 'backward'; the modes are f, forward1, forward, ...
    """
    listed = modes if isinstance(modes, (list, tuple)) else []
    if not listed or not all(isinstance(m, str) for m in listed):
        raise ValueError(
            f"modes={modes!r} is not a list of mode names; "
            "name them as modes=['f', 'forward', 'reverse']"
        )
    groups = [g for g, names in MODE_GROUPS.items() if set(names) <= set(MODES)]
    for name in modes:
        if name not in MODES and name not in groups:
            raise ValueError(
                f"unknown mode {name!r}; the modes are {', '.join(MODES)}, "
                f"and the groups {', '.join(groups)}"
            )
    for key, values in sizes.items():
        if key not in SIZE_NAMES:
            raise ValueError(
                f"unknown size {key}={values!r}; the marker sweeps n (the input count) "
                "and m (the output count), e.g. n=[8, 64]"
            )
        if isinstance(values, (str, bytes)) or not _whole_positive(values):
            raise ValueError(f"{key}={values!r} is not a list of positive whole numbers")
    return expand_modes(list(modes))


def _whole_positive(values) -> bool:
    try:
        listed = list(values)
    except TypeError:
        return False
    return bool(listed) and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in listed
    )


def benchmark_group(name: str, size: dict) -> str:
    """The pytest-benchmark group of a problem at a size: its modes side by side.

    >>> benchmark_group("mymodel", {"n": 8, "m": 4})
    'mymodel n=8 m=4'
    """
    return " ".join([name, *(f"{k}={v}" for k, v in size.items())])


def user_instance(f: Callable, args: tuple, *, name: str, size: dict) -> Instance:
    """``f(*args)`` at these arguments and ``size``, built as every problem is
    (:func:`~adcompare.bench.problems.problem`: one array, or pytrees whose float leaves
    are the inputs; its family read off the swept sizes), checked on the way.

    >>> inst = user_instance(lambda x: x[:2] * x.sum(), (np.array([1.0, 2.0, 3.0]),),
    ...                      name="toy", size={"n": 3})
    >>> inst.n, inst.m, inst.family, inst.on(np)(inst.x).tolist()
    (3, 2, 'many-inputs', [6.0, 12.0])
    >>> grid = user_instance(np.sum, (np.ones((2, 3)),), name="toy", size={"n": 6, "m": 1})
    >>> grid.x.shape, grid.family, float(grid.on(np)(grid.x))
    ((6,), 'jacobian', 6.0)
    """
    inputs = args[0] if len(args) == 1 else args
    return problem(f, name=name, inputs=lambda **_: inputs, sweep=tuple(size)).build(**size)


def measure(benchmark, instance: Instance, mode: Mode) -> str | None:
    """Time ``mode`` on ``instance`` with pytest-benchmark's ``benchmark`` fixture.

    Returns why the mode cannot take the instance (the caller skips), or
    ``None`` once timed. Raises, before timing, ``AssertionError`` when the
    mode's derivative disagrees with the other engine's, and
    :class:`~adcompare.bench.problems.ProblemError` when it is NaN or inf.
    """
    reason = mode.unavailable(instance)
    if reason:
        return reason
    work = mode.prepare(instance)
    try:
        first = work()
    except SymbolicSizeError as refusal:
        return str(refusal)
    if mode.derivative:
        refuse_non_finite(instance, mode.name, first)
    check = check_derivative(instance, mode, first)
    if check is not None and not check["ok"]:
        raise AssertionError(
            f"{instance.problem}: the {mode.label} derivative disagrees with {check['against']} "
            f"(relative error {check['error']:.3g}, tolerance {check['tolerance']:g})"
        )
    benchmark.group = benchmark_group(instance.problem, instance.size)
    benchmark.extra_info.update(
        problem=instance.problem,
        family=instance.family,
        mode=mode.name,
        size=instance.size,
        n=instance.n,
        m=instance.m,
        counts=count_work(instance, mode, work) if mode.counted else None,
        peak_bytes=peak_memory(work) if mode.memory_traced else None,
        check=check,
    )
    benchmark(work)
    return None
