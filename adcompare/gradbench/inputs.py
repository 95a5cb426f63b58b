"""What the gmm, ba and lstm evals share: input checks that speak the eval's language,
and the replayed programs they keep between calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import adcompare as ad
from adcompare.adbench import FormatError
from adcompare.gradbench.evals import InputError

__all__ = ["RUNS", "checked", "replayed"]

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


def replayed(cache: dict, key, f: Callable, *args, **options) -> ad.CompiledFunction:
    """``ad.compile(f, *args, **options)``, recorded at the first call with ``key`` and
    kept in ``cache``, which holds at most ``REPLAYS_KEPT`` programs (a new key beyond
    them drops the others).

    ``key`` must hold everything ``f`` reads that is not an argument (sizes,
    constants), as the compiled program bakes those in.

    >>> cache = {}
    >>> first = replayed(cache, 2, lambda x: x * x, 3.0)
    >>> print(first.grad(3.0), replayed(cache, 2, lambda x: x * x, 5.0) is first)
    6.0 True
    """
    if key not in cache:
        if len(cache) >= REPLAYS_KEPT:
            cache.clear()
        cache[key] = ad.compile(f, *args, **options)
    return cache[key]
