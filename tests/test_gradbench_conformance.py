"""Every recorded GradBench workload reproduced, in every mode the eval answers in.

Each line of ``../shared/data/gradbench/<eval>.jsonl`` is one evaluate
message and the reference tool's answer (or the eval's constant, for the
nested evals). The message is answered here as the protocol server answers
it (prepare, the function, encode; once: ``min_runs`` 1, ``min_seconds`` 0)
and the output must be valid under GradBench's rule, made strict
(:func:`adcompare.gradbench.compare.mismatches`: non-finite numbers fail).
A classic eval's derivative is checked in every mode of ``EVAL.modes``, its
primal once; a nested eval's four variants name their own modes. Their whole
descents take 6–20 s of CPU each, so by default one variant (``ff``) of each
runs the descent to GradBench's constant, and all four with
``ADCOMPARE_NESTED_FULL=1``; every variant's nested derivative is checked
cheaply in ``test_gradbench_nested.py``. The few recorded cases that take tens of
seconds (``test_gradbench_adbench.SLOW_CASES``: LSTM's replay, forward mode's
lanes over GMM's and LSTM's parameters) run with ``ADCOMPARE_GRADBENCH_SLOW=1``.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from adcompare.gradbench import EVAL_NAMES, get_eval, implemented
from adcompare.gradbench.compare import mismatches
from adcompare.gradbench.protocol import evaluate
from tests.shared_data import shared_file
from tests.test_gradbench_adbench import SLOW, SLOW_CASES

#: The concrete modes a classic eval's derivative may answer in.
CONCRETE = ("reverse", "forward", "replay")


@functools.lru_cache(maxsize=2)
def _lines(path: Path) -> tuple[dict, ...]:
    return tuple(json.loads(line) for line in path.open())


def _once(value):
    """An evaluate input run once: timing repetition is not what is checked here."""
    return {**value, "min_runs": 1, "min_seconds": 0} if isinstance(value, dict) else value


def _lines_to_check(name: str, mode: str) -> list[dict]:
    """The recorded lines ``name`` must reproduce in ``mode``, or skip saying why."""
    if name not in implemented():
        pytest.skip(f"the {name} eval is not in this branch")
    ev = get_eval(name)
    if ev.primal is None and mode != CONCRETE[0]:
        pytest.skip(
            f"{name} is nested: its variants name their modes, checked once under {CONCRETE[0]}"
        )
    if ev.primal is not None and mode not in ev.modes:
        pytest.skip(f"{name} answers its derivative in {', '.join(ev.modes)}, not {mode}")
    lines = _lines(shared_file("gradbench", f"{name}.jsonl"))
    if ev.primal is None and os.environ.get("ADCOMPARE_NESTED_FULL") != "1":
        lines = [line for line in lines if line["function"] == "ff"]
    primal_once = ev.primal is None or mode == ev.modes[0]
    if not SLOW:  # LSTM's replay records ~150,000 instructions first: 40 s a workload
        lines = [line for line in lines if (name, line["workload"], mode) not in SLOW_CASES]
        if not lines:
            pytest.skip(
                f"{name} in {mode} takes tens of seconds a workload here; run it "
                "with ADCOMPARE_GRADBENCH_SLOW=1"
            )
    return [line for line in lines if line["function"] != ev.primal or primal_once]


@pytest.mark.parametrize("mode", CONCRETE)
@pytest.mark.parametrize("name", EVAL_NAMES)
def test_every_recorded_output_is_reproduced(name, mode):
    lines = _lines_to_check(name, mode)
    assert lines, f"{name}.jsonl holds no line to check in {mode}"
    for line in lines:
        answer = evaluate(name, line["function"], _once(line["input"]), mode)
        where = (
            f"{name} {line['function']} on {line['workload']} ({line['eval_args'] or 'defaults'})"
        )
        assert mismatches(line["output"], answer["output"]) == [], where


def test_every_one_of_gradbench_s_twelve_evals_is_implemented():
    assert implemented() == EVAL_NAMES
    for name in EVAL_NAMES:
        ev = get_eval(name)
        nested = ev.primal is None
        assert (ev.objective is None) is nested, name  # every classic eval is a problem
        assert ev.workloads(), name
