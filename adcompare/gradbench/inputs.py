"""What the gmm, ba, lstm and ht evals share: input checks that speak the eval's language,
and the replayed programs they keep between calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adcompare as ad
from adcompare.adbench import FormatError
from adcompare.gradbench.evals import Eval, InputError, Workload

__all__ = [
    "RUNS",
    "chain_gradient",
    "checked",
    "flat_gradient",
    "objective_and_jacobian",
    "replayed",
    "replayed_vjp",
]

#: The timing fields GradBench's evals send by default (its CLI's ``--min-runs 1
#: --min-seconds 1``), added to every generated workload's input.
RUNS = {"min_runs": 1, "min_seconds": 1}

#: Programs an eval keeps recorded at once (ba's blocks come in two shapes: full and last).
REPLAYS_KEPT = 2


def checked(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``parse`` with the readers' :class:`~adcompare.adbench.FormatError` raised as
    :class:`~adcompare.gradbench.evals.InputError`, the sentence unchanged.

    >>> from adcompare.adbench.records import json_integer
    >>> checked(lambda record: json_integer(record, "n", "ba"))({"n": 0})
    Traceback (most recent call last):
    ...
    adcompare.gradbench.evals.InputError: ba: 'n' is 0; expected a positive integer
    """

    def prepare(value):
        try:
            return parse(value)
        except FormatError as error:
            raise InputError(str(error)) from None

    return prepare


def replayed(
    cache: dict, key, f: Callable, *args, kept: int = REPLAYS_KEPT, **options
) -> ad.CompiledFunction:
    """``ad.compile(f, *args, **options)``, recorded at the first call with ``key`` and
    kept in ``cache``, which holds at most ``kept`` programs (a new key beyond them
    drops the others: each program holds its buffers).

    ``key`` must hold everything ``f`` reads that is not an argument (sizes,
    constants), as the compiled program bakes those in.

    >>> cache = {}
    >>> first = replayed(cache, 2, lambda x: x * x, 3.0)
    >>> print(first.grad(3.0), replayed(cache, 2, lambda x: x * x, 5.0) is first)
    6.0 True
    """
    compiled = cache.get(key)  # one lookup a call: gmm's and ba's replays are timed calls
    if compiled is None:
        if len(cache) >= kept:
            cache.clear()
        compiled = cache[key] = ad.compile(f, *args, **options)
    return compiled


def chain_gradient(
    cache: dict,
    key,
    adjoint: Callable,
    params: tuple,
    start: tuple,
    steps: int,
    step_inputs: Callable[[int], tuple],
    last_bars: tuple,
    constants: tuple = (),
) -> list:
    """The gradient with respect to ``params`` of a function made of ``steps`` identical
    steps, by one step recorded and replayed along the chain and back.

    ``adjoint(*params, *state, *step_inputs(t), *bars, *constants)`` is the
    step's adjoint: ⟨the new state, bars⟩ plus whatever the step adds to the
    function itself. Its gradient with respect to the bars is the new state.
    It is recorded once per ``key`` (everything the step reads that is not an
    argument: its sizes), a step's few hundred instructions in milliseconds
    where the whole chain would be hundreds of thousands, with ``argnums`` the
    parameters, the state and the bars, and replayed in two stages
    (:meth:`~adcompare.CompiledFunction.staged`, the bars late): along the
    chain, the first stage gives each new state and keeps what the sweep will
    read; back from the last step to the first, the second stage carries the
    state's cotangent (``last_bars``: the function's own cotangent of the final
    state) and adds the parameters' shares in the order reverse mode's sweep
    adds them. No step's forward pass runs twice. The first step has programs
    of its own, recorded with ``argnums`` the parameters and the bars: the
    start's cotangent is not wanted, and not computed.

    >>> def adjoint(rate, y, bar):  # y ← y·rate, five times: y₅ = rate⁵
    ...     return ad.sum(y * rate * bar)
    >>> one = np.ones(1)
    >>> [g] = chain_gradient({}, 1, adjoint, (2.0 * one,), (one,), 5, lambda t: (), (one,))
    >>> print(g)  # 5·rate⁴
    [80.]
    """
    p, k = len(params), len(start)
    constants = tuple(map(np.asarray, constants))  # arrays, as every call would make them
    example = (*params, *start, *step_inputs(0), *last_bars, *constants)
    first_bar = len(example) - len(constants) - len(last_bars)
    bars_at = tuple(range(first_bar, first_bar + k))
    first = _staged(cache, (key, "first"), adjoint, example, tuple(range(p)) + bars_at, bars_at)
    later = _staged(cache, key, adjoint, example, tuple(range(p + k)) + bars_at, bars_at)
    started, state = [], start
    for t in range(steps):
        stages, known = (later, p + k) if t else (first, p)
        started.append(stages(*params, *state, *step_inputs(t), *constants))
        state = started[-1].known[1][known:]
    total = [np.zeros_like(q) for q in params]
    bars = last_bars
    while started:  # from the last step to the first, each step's residuals freed after
        found = started.pop().finish(*bars)[1]
        for share, g in zip(total, found[:p]):
            share += g
        bars = found[p : p + k]
    return total


def _staged(cache: dict, key, adjoint: Callable, example: tuple, argnums: tuple, late: tuple):
    """``adjoint`` compiled with ``argnums`` and staged with ``late`` (its value not
    computed), kept in ``cache`` under ``key`` as :func:`replayed` keeps programs."""
    stages = cache.get(key)
    if stages is None:  # the compiled function, recorded under key, gives way to its stages
        compiled = replayed(cache, key, adjoint, *example, argnums=argnums)
        stages = cache[key] = compiled.staged(*example, late=late, value=False)
    return stages


def replayed_vjp(cache: dict, key, f: Callable, x: np.ndarray) -> tuple[tuple, Callable]:
    """``f(x)`` (a tuple of arrays) and its pullback, as :func:`adcompare.vjp` gives them,
    by replay: ``f``'s adjoint ``Σᵢ ⟨f(x)ᵢ, barsᵢ⟩`` is recorded once per ``key`` and run
    in two stages (:meth:`~adcompare.CompiledFunction.staged`), the bars late; its
    gradient in the bars is ``f(x)``, known before any bar is. The pullback runs
    once: it frees what the first stage kept.

    >>> outputs, pullback = replayed_vjp({}, 0, lambda x: (2.0 * x, x * x), np.array([3.0]))
    >>> print(outputs, pullback(np.ones(1), np.ones(1)))  # 2 + 2x
    (array([6.]), array([9.])) [8.]
    """

    def adjoint(x, *bars):
        return sum(ad.sum(y * bar) for y, bar in zip(f(x), bars))

    stages = cache.get(key)
    if stages is None:
        example = (x, *(np.zeros_like(y) for y in f(x)))
        late = tuple(range(1, len(example)))
        stages = _staged(cache, key, adjoint, example, (0, *late), late)
    started = stages(x)
    return tuple(started.known[1][1:]), lambda *bars: started.finish(*bars)[1][0]


def flat_gradient(problem, mode: str, cache: dict, key, objective: Callable, *arrays) -> np.ndarray:
    """The gradient of an ADBench problem's objective at its ``params``, by ``mode``.

    ``reverse`` and ``forward`` differentiate ``problem.objective``; ``replay``
    compiles ``objective(params, *arrays)``, the same objective with the arrays it
    reads passed in (so a new input's arrays are read at replay), under ``key``
    (see :func:`replayed`).

    >>> from adcompare.adbench import bundled
    >>> from adcompare.adbench.gmm import gmm_objective
    >>> gmm = bundled("adbench-gmm-test")
    >>> def objective(params, x):
    ...     return gmm_objective(*gmm.split(params), x, 1.0, 0, "adbench")
    >>> by_mode = [flat_gradient(gmm, mode, {}, 0, objective, gmm.data.x)
    ...            for mode in ("reverse", "forward", "replay")]
    >>> bool(np.allclose(by_mode[0], by_mode[1]) and np.allclose(by_mode[0], by_mode[2]))
    True
    """
    params = problem.params
    if mode == "forward":
        return ad.grad(problem.objective, mode="forward")(params)
    if mode == "replay":
        return replayed(cache, key, objective, params, *arrays).grad(params, *arrays)
    return ad.grad(problem.objective)(params)


def objective_and_jacobian(
    name: str,
    prepare: Callable[[Any], Any],
    objective: Callable[[Any, str], Any],
    jacobian: Callable[[Any, str], Any],
    encode: Callable[[str, Any], Any],
    workloads: Callable[[], tuple[Workload, ...]],
    harness_objective: Callable[[Any], tuple[Callable, tuple]] | None = None,
    auto: str | Callable[[Any], str] = "reverse",
) -> Eval:
    """An eval whose primal is GradBench's ``objective`` and derivative its ``jacobian``
    (gmm, ba, lstm, ht), with ``prepare``'s format errors raised as input errors;
    ``harness_objective`` is the eval's :attr:`~adcompare.gradbench.evals.Eval.objective`
    and ``auto`` the mode ``"auto"`` stands for.

    >>> evaluation = objective_and_jacobian(
    ...     "cube", float, lambda x, mode: x**3, lambda x, mode: 3 * x**2,
    ...     lambda function, result: result, lambda: ())
    >>> evaluation.functions["jacobian"](evaluation.prepare(2), "reverse"), evaluation.auto
    (12.0, 'reverse')
    """
    return Eval(
        name=name,
        prepare=checked(prepare),
        functions={"objective": objective, "jacobian": jacobian},
        encode=encode,
        primal="objective",
        derivative="jacobian",
        workloads=workloads,
        objective=harness_objective,
        auto=auto,
    )
