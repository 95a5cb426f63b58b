"""``adcompare verify``: the table, JSON, exit status, and hostile input refused safely."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
import sympy

import adcompare as ad
from adcompare import symbolic
from adcompare.cli import main
from adcompare.cli.expr import ExpressionError, parse_expression
from adcompare.ops import OPS


def verify(capsys, *argv):
    status = main(["verify", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_worked_example(capsys):
    status, out, _ = verify(capsys, "3*x**2 + x*y + 5*y**2", "--at", "x=2,y=3")
    assert status == 0
    assert "∂f/∂x = 6*x + y" in out and "∂f/∂y = x + 10*y" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:1].isalpha()}
    for mode in ["symbolic", "forward", "reverse", "fd"]:
        assert rows[mode][1:4] == ["63", "15", "32"], out
        assert rows[mode][-1] == "ok"
    assert "All modes agree with SymPy" in out


def test_json_output(capsys):
    status, out, _ = verify(capsys, "3*x**2 + x*y + 5*y**2", "--at", "x=2,y=3", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["passed"] is True and data["variables"] == ["x", "y"]
    assert data["symbolic"]["∂f/∂x"] == "6*x + y"
    modes = {m["mode"]: m for m in data["modes"]}
    assert set(modes) == {"symbolic", "forward", "reverse", "fd"}
    assert modes["reverse"]["derivative"] == {"∂f/∂x": 15.0, "∂f/∂y": 32.0}
    assert modes["reverse"]["value"] == 63.0 and modes["fd"]["max_rel_err"] < 1e-9
    assert modes["forward"]["seconds"] > 0


def test_second_order_gives_the_hessian_in_every_composition(capsys):
    status, out, _ = verify(capsys, "3*x**2 + x*y + 5*y**2", "--at", "x=2,y=3", "--order", "2")
    assert status == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:1].isalpha()}
    for mode in ["symbolic", "fwd-over-rev", "rev-over-rev", "fwd-over-fwd", "rev-over-fwd", "fd"]:
        assert rows[mode][1:5] == ["63", "6", "1", "10"], out


def test_choosing_modes(capsys):
    status, out, _ = verify(
        capsys, "sin(x)*exp(y)", "--at", "x=0.5,y=-1", "--modes", "reverse,complex_step", "--json"
    )
    assert status == 0
    assert [m["mode"] for m in json.loads(out)["modes"]] == ["symbolic", "reverse", "complex_step"]


def test_a_mismatch_exits_non_zero_and_says_where(capsys, monkeypatch):
    # A wrong reverse-mode rule for sin, injected for this test only.
    monkeypatch.setattr(OPS["sin"], "vjp", (lambda out, x, out_bar: out_bar * 2.0 * ad.cos(x),))
    status, out, _ = verify(capsys, "sin(x) * y", "--at", "x=0.5,y=2")
    assert status == 1
    assert "MISMATCH: reverse disagrees with SymPy at x" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:1].isalpha()}
    assert rows["forward"][-1] == "ok" and rows["reverse"][-1] == "MISMATCH"


def test_expressions_that_start_with_a_minus_sign(capsys):
    status, out, _ = verify(capsys, "--at", "x=2", "--", "-x**2")
    assert status == 0 and "∂f/∂x = -2*x" in out
    status, out, _ = verify(capsys, " -x**2", "--at", "x=2")
    assert status == 0


def test_non_smooth_expressions_follow_the_point(capsys):
    status, out, _ = verify(capsys, "relu(x) + abs(y) + maximum(x, y)", "--at", "x=1,y=1")
    assert status == 0
    assert "hold near this point" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["x +", "--at", "x=1"], "cannot parse"),
        (["x*y", "--at", "x=1"], "no value given for y"),
        (["x", "--at", "x=1,z=2"], "z not in the expression"),
        (["x", "--at", "x=nan"], "not a finite number"),
        (["log(x)", "--at", "x=-1"], "not finite at x=-1"),
        (["x", "--at", "x=1", "--modes", "forward,psychic"], "unknown mode(s) psychic"),
        (["x", "--at", "x=1", "--modes", "fwd-over-rev"], "unknown mode(s) fwd-over-rev"),
        (["exp(x, x)", "--at", "x=1"], "exp takes 1 argument(s), got 2"),
        (["x*" + "9" * 400, "--at", "x=1"], "too large for a float"),
        (["x + 1e400", "--at", "x=1"], "too large for a float"),
        (["x", "--at", "x=1,x=2"], "x is given twice"),
        (["x*y", "--at", "x=1,y=2,y=2"], "y is given twice"),
        (["sin(" * 101 + "x" + ")" * 101, "--at", "x=1"], "nested more than 100 levels"),
    ],
)
def test_bad_input_exits_with_status_2_and_a_reason(capsys, argv, message):
    status, out, err = verify(capsys, *argv)
    assert status == 2 and out == ""
    assert message in err


def test_bad_input_with_json_gives_a_json_error(capsys):
    status, out, err = verify(capsys, "x**", "--at", "x=1", "--json")
    assert status == 2 and "cannot parse" in err
    assert json.loads(out) == {"passed": False, "error": err.split(": ", 1)[1].strip()}


def test_symbolic_size_limits_are_reported_as_bad_input(capsys):
    with symbolic.size_limit(max_work=3):
        status, _, err = verify(capsys, "sin(cos(exp(x)))*y", "--at", "x=1,y=2")
    assert status == 2 and "max_work" in err


@pytest.mark.parametrize(
    "text, order",
    [
        ("sin(" * 99 + "x" + ")" * 99, "1"),
        ("sin(x*" * 33 + "x" + "+y)" * 33, "1"),
        ("1/(1+" * 30 + "x" + ")" * 30, "2"),
    ],
    ids=["99 nested sin", "33 nested sin(x*...+y)", "30 nested 1/(1+...), order 2"],
)
def test_expressions_within_the_depth_cap_are_differentiated(capsys, text, order):
    point = "x=0.5,y=0.3" if "y" in text else "x=0.5"
    status, out, err = verify(capsys, text, "--at", point, "--order", order, "--modes", "reverse")
    assert status == 0, err
    assert "All modes agree with SymPy" in out


def test_json_is_strict_with_null_for_numbers_that_are_not_finite(capsys):
    status, out, _ = verify(capsys, "log(x)", "--at", "x=1e-300", "--json")

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(out, parse_constant=refuse)
    assert status == 1 and data["status"] == "failed"
    rows = {m["mode"]: m for m in data["modes"]}
    assert rows["fd"]["derivative"] == {"∂f/∂x": None} and rows["fd"]["status"] == "not finite"
    assert rows["reverse"]["derivative"]["∂f/∂x"] == pytest.approx(1e300)
    assert rows["reverse"]["status"] == "ok"


def test_formulas_too_large_to_print_are_summarised(capsys):
    with symbolic.size_limit(max_printed_size=10):
        status, out, _ = verify(capsys, "sin(x)*cos(y)*exp(x*y)", "--at", "x=1,y=2")
    assert status == 0
    assert "∂f/∂x = (a formula of size" in out and "too long to print)" in out


def test_too_large_for_exact_differentiation_is_reported_as_bad_input(capsys):
    with symbolic.size_limit(max_expression_size=10):
        status, _, err = verify(capsys, "sin(x*sin(x*sin(x*sin(x*y))))", "--at", "x=1,y=2")
    assert status == 2 and "too large for exact differentiation" in err
    assert "against='fd'" in err


def test_the_command_is_listed_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    out = capsys.readouterr().out
    for option in ["--at", "--order", "--modes", "--json", "--rtol"]:
        assert option in out


# --- hostile input ----------------------------------------------------------------------

HOSTILE = [
    "__import__('os').system('touch pwned')",
    "open('pwned', 'w').write('x')",
    "exec('import os')",
    "eval('1')",
    "x.__class__.__bases__[0].__subclasses__()",
    "().__class__",
    "__builtins__",
    "__import__",
    "x.real",
    "sin.__globals__",
    "getattr(x, 'y')",
    "lambda: 1",
    "[a for a in range(3)]",
    "{a: 1 for a in range(3)}",
    "(a for a in range(3))",
    "import os",
    "from os import system",
    "'touch pwned'",
    "b'bytes'",
    "f'{x}'",
    "x if y else z",
    "x[0]",
    "x == 1",
    "x and y",
    "not x",
    "x @ y",
    "x ^ 2",
    "x << 2",
    "(x := 3)",
    "[x]",
    "{x}",
    "(x, y)",
    "...",
    "1j * x",
    "True * x",
    "None",
    "exp(x=1)",
    "exp(*[1])",
    "x; import os",
    "yield x",
    "await x",
    "-" * 100_000 + "x",
    "(" * 500 + "x" + ")" * 500,
    "+".join(["x"] * 5000),
]


@pytest.fixture
def audit_log():
    """Record audit events that would mean code ran, a file opened, or a process started."""
    watched = ("exec", "open", "subprocess", "os.system", "os.exec", "os.spawn", "os.posix_spawn")
    log = {"on": False, "events": []}

    def hook(event, args):
        if log["on"] and event.startswith(watched):
            log["events"].append((event, repr(args)[:100]))

    sys.addaudithook(hook)  # hooks cannot be removed; this one only listens while on
    yield log
    log["on"] = False


@pytest.mark.parametrize("text", HOSTILE, ids=lambda t: t[:40])
def test_hostile_expressions_are_refused_before_evaluation(text, tmp_path, monkeypatch, audit_log):
    monkeypatch.chdir(tmp_path)
    parse_expression("sin(x) * 2 + y")  # warm up any lazy imports before listening
    audit_log["on"] = True
    with pytest.raises(ExpressionError):
        parse_expression(text)
    status = main(["verify", "--at", "x=1,y=2", "--", text])
    audit_log["on"] = False
    assert status == 2
    assert audit_log["events"] == []
    assert os.listdir(tmp_path) == []


def test_user_text_never_reaches_eval_or_sympify(capsys, monkeypatch):
    seen = []

    def refuse_strings(original):
        def guarded(value, *args, **kwargs):
            if isinstance(value, str):
                seen.append(value)
                raise AssertionError(f"sympify called on text {value!r}")
            return original(value, *args, **kwargs)

        return guarded

    import sympy.parsing.sympy_parser as sympy_parser

    sympify_module = sys.modules["sympy.core.sympify"]

    monkeypatch.setattr(sympify_module, "sympify", refuse_strings(sympify_module.sympify))
    monkeypatch.setattr(sympy, "sympify", refuse_strings(sympy.sympify))
    monkeypatch.setattr(sympy_parser, "parse_expr", lambda *a, **k: seen.append(a))
    monkeypatch.setattr("builtins.eval", lambda *a, **k: seen.append(a))
    status, out, _ = verify(capsys, "sigmoid(x) * log(y) + x**2 / y", "--at", "x=0.5,y=2")
    assert status == 0, out
    assert seen == []


def test_expressions_evaluate_with_every_engine():
    expression = parse_expression("softplus(x) * tanh(y) - reciprocal(y)")
    x, y = 0.3, 1.7
    exact = symbolic.gradient(expression, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(ad.grad(expression, argnums=(0, 1))(x, y), exact, rtol=1e-13)
