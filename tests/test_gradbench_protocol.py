"""The GradBench protocol server: the recorded transcript, and every malformed input.

The transcript (``../shared/data/gradbench/protocol.jsonl``) holds two
sessions against GradBench's reference tool; every message is answered again
here and each response must have the recorded one's keys, id and success,
and an output valid under GradBench's rule (:mod:`adcompare.gradbench.compare`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import subprocess
import sys

import pytest

from adcompare.gradbench import Eval, get_eval, implemented, protocol
from adcompare.gradbench.compare import mismatches
from adcompare.gradbench.protocol import Server, serve
from tests.shared_data import shared_file


def _sessions() -> list[list[tuple[dict, dict]]]:
    """The transcript's sessions, each a list of (message, recorded response)."""
    lines = [json.loads(line) for line in shared_file("gradbench", "protocol.jsonl").open()]
    sessions: list[list] = []
    for message, response in zip(lines[::2], lines[1::2]):
        assert message["message"]["id"] == response["response"]["id"]
        if message["message"]["kind"] == "start":
            sessions.append([])
        sessions[-1].append((message["message"], response["response"]))
    return sessions


def _session(index: int) -> list[tuple[dict, dict]]:
    session = _sessions()[index]
    name = session[0][0]["eval"]
    if name not in implemented():
        pytest.skip(f"the {name} eval is not in this branch yet, so its session cannot be replayed")
    return session


def _check_response(message: dict, recorded: dict, response: dict) -> None:
    """A response answers its message as the reference tool's did, within GradBench's rule."""
    assert response.keys() == recorded.keys(), (message, response)
    assert response["id"] == recorded["id"]
    assert response.get("success") == recorded.get("success"), response.get("error")
    if message["kind"] == "evaluate":
        assert mismatches(recorded["output"], response["output"]) == []
        runs = [t for t in response["timings"] if t["name"] == "evaluate"]
        value = message["input"]
        assert len(runs) >= (value.get("min_runs", 1) if isinstance(value, dict) else 1)
        assert all(isinstance(t["nanoseconds"], int) and t["nanoseconds"] > 0 for t in runs)
    if message["kind"] == "start":
        assert response["tool"] == "adcompare-auto"


@pytest.mark.parametrize("index", [0, 1], ids=["hello-session", "lse-session"])
def test_the_recorded_transcript_is_answered_alike(index):
    server = Server("auto")
    for message, recorded in _session(index):
        _check_response(message, recorded, server.handle(message))


def test_the_transcript_through_a_server_process():
    sessions = [s for s in _sessions() if s[0][0]["eval"] in implemented()]
    pairs = [pair for session in sessions for pair in session]
    stdin = "".join(json.dumps(message) + "\n" for message, _ in pairs)
    done = subprocess.run(
        [sys.executable, "-m", "adcompare.gradbench"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    responses = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(responses) == len(pairs)
    for (message, recorded), response in zip(pairs, responses):
        _check_response(message, recorded, response)


def _evaluate(ident, function="double", value="3.0", module="hello") -> str:
    return (
        f'{{"id": {ident}, "kind": "evaluate", "module": "{module}", '
        f'"function": "{function}", "input": {value}}}'
    )


#: Each line sent, and what must come back: (id, success or None for a bare {id}).
MALFORMED = [
    ('{"id": 0, "kind": "start", "eval": "hello"}', 0, None),
    ('{"id": 1, "kind": "define", "module": "hello"}', 1, True),
    ('{"id": 2, "kind": "define", "module": "nosuch"}', 2, False),
    ("this is not JSON", None, False),
    ("[1, 2]", None, False),
    ('{"kind": "start"}', None, False),
    ('{"id": 3, "kind": "no-such-kind"}', 3, None),
    (_evaluate(4, module="nosuch"), 4, False),
    (_evaluate(5, function="cube"), 5, False),
    (_evaluate(6, value="[1.0, 2.0]"), 6, False),
    (_evaluate(7, value="NaN"), 7, False),
    (_evaluate(8, value="-Infinity"), 8, False),
    (_evaluate(12, value="1e400"), 12, False),
    ('{"id": 9, "kind": "evaluate", "module": "hello", "function": "double"}', 9, False),
    ('{"id": 10, "kind": "analysis", "of": 8, "valid": false}', 10, None),
    (_evaluate(11), 11, True),
]


def test_a_server_process_survives_every_malformed_message():
    stdin = "".join(line + "\n" for line, _, _ in MALFORMED)
    done = subprocess.run(
        # The command's entry (the transcript test uses python -m adcompare.gradbench).
        [sys.executable, "-m", "adcompare.cli", "gradbench", "--mode", "forward"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == len(MALFORMED)
    for line, (sent, ident, success) in zip(lines, MALFORMED):
        response = json.loads(line)
        assert response["id"] == ident, (sent, response)
        assert response.get("success") == success, (sent, response)
        if success is False:
            error = response["error"]
            assert error and "\n" not in error and error[0].islower(), (sent, error)
    assert json.loads(lines[0])["tool"] == "adcompare-forward"
    assert json.loads(lines[-1])["output"] == 6.0


def _stub(run) -> Eval:
    return Eval(
        "stub",
        prepare=float,
        functions={"f": lambda x, mode: x, "df": run},
        encode=lambda function, result: result,
        primal="f",
        derivative="df",
        modes=("reverse",),
    )


@pytest.fixture
def stub(monkeypatch):
    """Put a stub eval, whose derivative is given, behind the server's registry."""

    def install(run):
        monkeypatch.setattr(protocol, "implemented", lambda: ("hello", "stub"))
        monkeypatch.setattr(protocol, "get_eval", lambda name: _stub(run))

    return install


def _shouting(x, mode):
    print("a stray print from inside an eval")
    raise ZeroDivisionError("the function divided by zero")


def test_a_failing_function_is_one_sentence_and_stray_prints_go_to_stderr(stub, capsys):
    stub(_shouting)
    out = io.StringIO()
    serve(
        io.StringIO(_evaluate(0, "df", "2.0", "stub") + "\n" + _evaluate(1, "f", "2.0", "stub")),
        out,
    )
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first == {
        "id": 0,
        "success": False,
        "error": "df failed: ZeroDivisionError: the function divided by zero",
    }
    assert second["success"] and second["output"] == 2.0
    captured = capsys.readouterr()
    assert captured.out == "" and "a stray print" in captured.err


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_output_is_refused(stub, value):
    stub(lambda x, mode: value)
    response = json.loads(Server().respond_line(_evaluate(0, "df", "2.0", "stub")))
    assert response == {
        "id": 0,
        "success": False,
        "error": "the function returned NaN or infinity",
    }


def test_a_mode_the_eval_does_not_answer_in_is_refused(stub):
    stub(lambda x, mode: 2 * x)
    response = Server("forward").handle_line(_evaluate(0, "df", "2.0", "stub"))
    assert not response["success"] and "--mode" in response["error"]
    assert Server("forward").handle_line(_evaluate(1, "f", "2.0", "stub"))["output"] == 2.0


def test_an_eval_that_chooses_its_auto_mode_per_input_is_given_its_choice(monkeypatch):
    # The derivative answers with the mode it ran in: reverse below 10, forward from 10.
    chooser = dataclasses.replace(
        _stub(lambda x, mode: {"reverse": 1.0, "forward": 2.0}[mode]),
        modes=("reverse", "forward"),
        auto=lambda x: "reverse" if x < 10 else "forward",
    )
    monkeypatch.setattr(protocol, "implemented", lambda: ("hello", "stub"))
    monkeypatch.setattr(protocol, "get_eval", lambda name: chooser)
    server = Server("auto")
    answers = [server.handle_line(_evaluate(i, "df", x, "stub")) for i, x in enumerate(["3", "30"])]
    assert [a["output"] for a in answers] == [1.0, 2.0]
    # Named, a mode is taken as it is, whatever the input.
    assert Server("forward").handle_line(_evaluate(2, "df", "3", "stub"))["output"] == 2.0


@pytest.mark.parametrize(
    "runs,seconds,fewest", [(5, 0, 5), (0, 0, 1), (1, 0.02, 2)], ids=["runs", "once", "seconds"]
)
def test_the_function_repeats_until_both_limits_are_met(runs, seconds, fewest):
    calls = []

    def slow(x, mode):
        calls.append(x)
        return x

    _, times = protocol.repeat(slow, 1.0, "reverse", runs, seconds)
    assert len(times) == len(calls) >= fewest
    assert sum(times) >= seconds * 1e9


@pytest.mark.parametrize(
    "runs,seconds", [(-1, 1), (1.5, 1), (True, 1), (1, -0.5), (1, "1")], ids=str
)
def test_bad_repetition_fields_are_refused(runs, seconds):
    message = _evaluate(0, "square", json.dumps({"min_runs": runs, "min_seconds": seconds}))
    response = Server().handle_line(message)
    assert not response["success"] and "min_" in response["error"]


def test_the_comparison_rule_rejects_what_gradbench_lets_through():
    assert mismatches([1, 2.0], [1.0, 2]) == []
    assert mismatches({"a": [0.5]}, {"a": [0.5 + 2e-4]}) == [
        "$.a[0]: 0.5002 differs from 0.5 by 0.0002 > 0.0001 (relative to max(1, |a|+|b|))"
    ]
    assert mismatches(1.0, math.inf) == ["$: inf is not a finite number"]
    assert mismatches(1, 2) == ["$: got 2, expected 1"]
    assert mismatches(None, 0.0) == ["$: got float, expected null"]


@pytest.mark.parametrize("mode", ["reverse", "forward", "replay"])
def test_hello_answers_sympy_s_derivative_on_its_whole_chain(mode):
    # GradBench's hello chain: square, double, ... each on the previous answer; SymPy's
    # derivative of x² is the oracle at every point of it.
    import sympy

    symbol = sympy.Symbol("x")
    derivative = sympy.lambdify(symbol, sympy.diff(symbol**2, symbol))
    hello = get_eval("hello")
    for workload in hello.workloads():
        x = hello.prepare(workload.make())
        assert hello.functions["square"](x, mode) == x * x
        assert hello.functions["double"](x, mode) == derivative(x)
