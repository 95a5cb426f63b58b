"""GradBench's tool protocol: newline-delimited JSON messages in, one response line each out.

The eval program sends ``start``, ``define`` (one per module), ``evaluate``
(a module's function on an input) and ``analysis`` (its verdict on an
evaluation); every message has an ``id`` the response echoes. ``start`` is
answered with the tool's name, which says the mode (``adcompare-reverse``),
``define`` with whether the module is one of the implemented evals,
``evaluate`` with the output and one ``{"name": "evaluate", "nanoseconds": …}``
timing per call of the function, repeated until both ``min_runs`` and
``min_seconds`` of the input are met; any other message with its id alone.

A failure in a message (a line that is not JSON, an unknown module or
function, input an eval cannot take, NaN, an exception in the function) is
answered ``{"id": …, "success": false, "error": "<one sentence>"}`` and the
server goes on serving.

>>> server = Server("reverse")
>>> server.respond_line('{"id": 0, "kind": "start", "eval": "hello"}')
'{"id": 0, "tool": "adcompare-reverse"}'
>>> response = server.handle({"id": 1, "kind": "evaluate", "module": "hello",
...                           "function": "double", "input": 3.0})
>>> response["output"], [t["name"] for t in response["timings"]]
(6.0, ['prepare', 'evaluate'])
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from typing import IO, Any

import numpy as np

from adcompare.gradbench.evals import MODES, Eval, InputError, get_eval, implemented

__all__ = ["Server", "evaluate", "repeat", "serve", "serve_stdio", "tool_name"]


def tool_name(mode: str) -> str:
    """The name the server gives itself in ``start``: which engine answers.

    >>> tool_name("forward")
    'adcompare-forward'
    """
    return f"adcompare-{mode}"


def _runs(value: Any) -> tuple[int, float]:
    """``(min_runs, min_seconds)`` of an input; a bare input (hello's) runs once."""
    if not isinstance(value, dict):
        return 1, 0.0
    runs, seconds = value.get("min_runs", 1), value.get("min_seconds", 0)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 0:
        raise InputError(f"min_runs must be a whole number of runs, 0 or more, not {runs!r}")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise InputError(f"min_seconds must be a number of seconds, 0 or more, not {seconds!r}")
    return runs, float(seconds)


def repeat(run, prepared, mode: str, min_runs: int, min_seconds: float) -> tuple[Any, list[int]]:
    """Call ``run(prepared, mode)`` until it ran ``min_runs`` times (at least once) and for
    ``min_seconds`` in all; the last result and each call's nanoseconds.

    >>> result, times = repeat(lambda x, mode: x + 1, 1, "reverse", 3, 0.0)
    >>> result, len(times)
    (2, 3)
    """
    times: list[int] = []
    total, limit = 0, min_seconds * 1e9
    while len(times) < max(1, min_runs) or total < limit:
        start = time.perf_counter_ns()
        result = run(prepared, mode)
        elapsed = time.perf_counter_ns() - start
        times.append(elapsed)
        total += elapsed
    return result, times


def _function(ev: Eval, function: Any, mode: str):
    """The eval's function called ``function`` and the concrete mode it runs in."""
    if function not in ev.functions:
        raise InputError(
            f"the {ev.name} eval has no function {function!r}; its functions are "
            f"{', '.join(ev.functions)}"
        )
    concrete = ev.resolve(mode)
    if function == ev.derivative and concrete not in (*ev.modes, "auto"):
        raise InputError(
            f"the {ev.name} eval answers {function} in modes {', '.join(ev.modes)}, not "
            f"{concrete}; start the server with --mode set to one of those"
        )
    return ev.functions[function], concrete


def evaluate(module: str, function: str, value: Any, mode: str = "auto") -> dict:
    """Answer one evaluation: prepare ``value`` (untimed), call the function until the
    input's ``min_runs`` and ``min_seconds`` are met (each call timed), encode the last
    result. Returns ``{"output", "timings"}``; raises :class:`InputError` (or what the
    function raises) on failure.

    >>> evaluate("hello", "square", 3.0)["output"]
    9.0
    """
    if module not in implemented():
        raise InputError(f"no eval {module!r} here; the implemented ones are {_listed()}")
    ev = get_eval(module)
    run, concrete = _function(ev, function, mode)
    min_runs, min_seconds = _runs(value)
    start = time.perf_counter_ns()
    prepared = ev.prepare(value)
    if concrete == "auto":  # the eval chooses per input
        concrete = ev.resolve("auto", prepared)
    prepare_ns = time.perf_counter_ns() - start
    result, times = repeat(run, prepared, concrete, min_runs, min_seconds)
    timings = [{"name": "prepare", "nanoseconds": prepare_ns}]
    timings += [{"name": "evaluate", "nanoseconds": t} for t in times]
    return {"output": ev.encode(function, result), "timings": timings}


def _listed() -> str:
    return ", ".join(implemented()) or "none"


def _plain(value: Any):
    """numpy scalars and arrays as JSON's numbers and lists (for ``json.dumps``)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"a {type(value).__name__} is not JSON")


def _sentence(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if isinstance(error, InputError) else f"{type(error).__name__}: {text}"


class Server:
    """Answers GradBench's messages with the engine ``mode`` picks (see :data:`MODES`).

    >>> Server("reverse").handle({"id": 7, "kind": "analysis", "of": 6, "valid": True})
    {'id': 7}
    >>> Server().handle({"id": 1, "kind": "define", "module": "nosuch"})["success"]
    False
    """

    def __init__(self, mode: str = "auto"):
        if mode not in MODES:
            raise ValueError(f"no mode {mode!r}; use one of {', '.join(MODES)}")
        self.mode = mode

    def handle(self, message: Any) -> dict:
        """The response to one parsed message (never raises for a bad message). An output
        that is not JSON (NaN, infinity) is refused when the response is written
        (:meth:`respond_line`), which encodes it once."""
        if not isinstance(message, dict):
            return _failure(None, f"a message is a JSON object, not a {type(message).__name__}")
        if "id" not in message:
            return _failure(None, "the message has no id; every message needs one to answer")
        ident, kind = message["id"], message.get("kind")
        if kind == "start":
            return {"id": ident, "tool": tool_name(self.mode)}
        if kind == "define":
            return self._define(ident, message.get("module"))
        if kind == "evaluate":
            return self._evaluate(ident, message)
        return {"id": ident}

    def _define(self, ident, module) -> dict:
        if module not in implemented():
            return _failure(ident, f"no eval {module!r} here; the implemented ones are {_listed()}")
        try:
            get_eval(module)
        except Exception as error:
            return _failure(ident, f"the {module} eval fails to load: {_sentence(error)}")
        return {"id": ident, "success": True}

    def _evaluate(self, ident, message: dict) -> dict:
        missing = [key for key in ("module", "function", "input") if key not in message]
        if missing:
            return _failure(ident, f"the evaluate message has no {' or '.join(missing)}")
        function = message["function"]
        try:
            answer = evaluate(message["module"], function, message["input"], self.mode)
        except InputError as error:
            return _failure(ident, _sentence(error))
        except Exception as error:
            return _failure(ident, f"{function} failed: {_sentence(error)}")
        return {"id": ident, "success": True, **answer}

    def handle_line(self, line: str) -> dict:
        """The response to one line of the eval's stream, parsed here.

        >>> Server().handle_line("not json")["error"]
        'the line is not JSON (Expecting value at column 1); send one JSON object a line'
        >>> Server().handle_line('{"id": 3, "kind": "evaluate", "module": "hello", '
        ...                      '"function": "square", "input": NaN}')["error"]
        'the message holds NaN, which is not a finite double; send finite numbers'
        """
        constants: list[str] = []

        def number(text: str) -> float:
            value = float(text)
            if math.isinf(value):  # 1e400 is valid JSON, but no finite double
                constants.append(text)
            return value

        try:
            message = json.loads(
                line, parse_float=number, parse_constant=lambda c: constants.append(c) or float(c)
            )
        except ValueError as error:
            where = f"{getattr(error, 'msg', error)} at column {getattr(error, 'colno', '?')}"
            return _failure(None, f"the line is not JSON ({where}); send one JSON object a line")
        if constants and isinstance(message, dict) and "id" in message:
            return _failure(
                message["id"],
                f"the message holds {constants[0]}, which is not a finite double; send finite "
                "numbers",
            )
        return self.handle(message)

    def respond_line(self, line: str) -> str:
        """The response to ``line`` as one line of JSON (no newline).

        >>> Server().respond_line("[1]")
        '{"id": null, "success": false, "error": "a message is a JSON object, not a list"}'
        """
        response = self.handle_line(line)
        try:
            return json.dumps(response, allow_nan=False, default=_plain)
        except ValueError:
            reason = "returned NaN or infinity"
        except TypeError as error:
            reason = f"returned a value that is not JSON: {error}"
        failure = _failure(response["id"], f"the function {reason}")
        return json.dumps(failure, default=_plain)


def _failure(ident, error: str) -> dict:
    return {"id": ident, "success": False, "error": error}


def serve(lines: IO[str], out: IO[str], mode: str = "auto") -> None:
    """Answer every line of ``lines`` on ``out``, one JSON line each, flushed, until the
    input ends; what the evals print goes to stderr meanwhile. Blank lines are skipped.

    >>> import io
    >>> out = io.StringIO()
    >>> serve(io.StringIO('{"id": 0, "kind": "start"}\\n\\n{"id": 1}\\n'), out, "forward")
    >>> out.getvalue().splitlines()
    ['{"id": 0, "tool": "adcompare-forward"}', '{"id": 1}']
    """
    server = Server(mode)
    with contextlib.redirect_stdout(sys.stderr):
        for line in lines:
            if line.strip():
                out.write(server.respond_line(line) + "\n")
                out.flush()


def serve_stdio(mode: str = "auto") -> int:
    """Serve on the process's stdin and stdout. File descriptor 1 is pointed at stderr
    first, so not even a C library's print can reach the protocol stream."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        serve(sys.stdin, protocol, mode)
    finally:
        protocol.close()
    return 0
