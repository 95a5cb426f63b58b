"""``adcompare explain``: trace tables, sweep counts and graph files from the command line."""

from __future__ import annotations

import re

import pytest

from adcompare.cli import main
from adcompare.cli.explain import compiled_program, explain
from adcompare.cli.expr import parse_expression


def test_explain_worked_example(capsys):
    assert main(["explain", "3*x**2 + x*y + 5*y**2", "--at", "x=2,y=3"]) == 0
    out = capsys.readouterr().out
    assert "Forward mode: 2 sweeps" in out
    assert "Reverse mode: 1 recorded pass, then 1 backward sweep" in out
    assert "forward mode needed 2 sweeps (one per input)" in out
    assert "reverse mode needed 1 sweep (one per output)" in out
    assert "gradient: df/dx = 15, df/dy = 32" in out
    assert "f = 63 at x=2, y=3" in out
    rows = {
        "v1": (r"x \*\* 2", 4),
        "v2": (r"3 \* v1", 12),
        "v3": (r"x \* y", 6),
        "v5": (r"y \*\* 2", 9),
        "v6": (r"5 \* v5", 45),
        "f": (r"v4 \+ v6", 63),
    }
    for name, (expression, value) in rows.items():
        pattern = rf"^{name}\s+\w+\s+{expression}\s+{value}\s"
        assert re.search(pattern, out, re.MULTILINE), name


def test_explain_one_mode_and_markdown(capsys):
    assert main(["explain", "x*y", "--at", "x=2,y=3", "--mode", "forward", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| f | multiply | `x * y` | 6 | 3 | 2 |" in out
    assert "Reverse mode" not in out and "reverse mode needed" not in out
    assert main(["explain", "x*y", "--at", "x=2,y=3", "--mode", "reverse"]) == 0
    out = capsys.readouterr().out
    assert "Forward mode" not in out and "reverse mode needed 1 sweep" in out


def test_explain_writes_dot_and_png(tmp_path, capsys):
    dot, png = tmp_path / "f.dot", tmp_path / "f.png"
    args = ["explain", "sin(x)*y", "--at", "x=1,y=2", "--dot", str(dot), "--png", str(png)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"wrote {dot}" in out and f"wrote {png}" in out
    text = dot.read_text()
    assert text.startswith("digraph adcompare {") and "SinBackward" in text
    assert '"x = 1"' in text and '"y = 2"' in text
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000


def test_explain_reports_bad_input(capsys):
    assert main(["explain", "x^2", "--at", "x=1"]) == 2
    assert "write x**2" in capsys.readouterr().err
    assert main(["explain", "x+y", "--at", "x=1"]) == 2
    assert "no value given for y" in capsys.readouterr().err
    assert main(["explain", "__import__('os')", "--at", "x=1"]) == 2
    assert "unknown function" in capsys.readouterr().err


def test_explain_warns_where_f_is_not_finite(capsys):
    assert main(["explain", "log(x)", "--at", "x=-1"]) == 0
    assert "not finite" in capsys.readouterr().out


def test_explain_cannot_write(tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "dir" / "f.dot"
    assert main(["explain", "x*x", "--at", "x=1", "--dot", str(missing)]) == 2
    assert "cannot write" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--dot", "/proc/version"], "cannot write /proc/version: "),
        (["--dot", "/"], "cannot write /: "),
        (["--png", "graph.pdf"], "--png draws a PNG image, so give a file name ending in .png"),
        (["--png", "graph"], "ending in .png"),
    ],
)
def test_explain_says_which_file_it_cannot_write(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["explain", "x*x", "--at", "x=1", *argv]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "text, at, message",
    [
        ("x*" + "9" * 400, "x=1", "too large for a float"),
        ("x*y", "x=1,y=2,x=3", "x is given twice"),
    ],
)
def test_explain_refuses_numbers_it_cannot_hold(capsys, text, at, message):
    assert main(["explain", text, "--at", at]) == 2
    assert message in capsys.readouterr().err


def test_program_prints_exactly_the_compiled_source(capsys):
    assert main(["explain", "3*x**2 + x*y + 5*y**2", "--at", "x=2,y=3", "--program"]) == 0
    printed = capsys.readouterr().out
    source = compiled_program(parse_expression("3*x**2 + x*y + 5*y**2"), [2.0, 3.0]).program.source
    assert printed.endswith("folded away):\n" + source + "\n")


def test_program_lists_the_forward_pass_then_the_reverse_sweep():
    report = explain("3*x**2 + x*y + 5*y**2", "x=2,y=3", mode="reverse", program=True)
    source = report.split("folded away):\n")[1].splitlines()
    assert source[0] == "def replay(x, y):"
    forward = source[source.index("    # forward pass") + 3 : source.index("    # reverse sweep")]
    # The seven ops of the trace table, in its order, on the named inputs, each value
    # named for its op, the last one for what it is.
    assert [line.split(" = ")[0].strip() for line in forward] == [
        "v1_power",
        "v2_multiply",
        "v3_multiply",
        "v4_add",
        "v5_power",
        "v6_multiply",
        "value",
    ]
    assert forward[2] == "    v3_multiply = x * y"
    assert forward[-1] == "    value = v4_add + v6_multiply"
    # The gradients are named for the variables; evaluated, they are 6x + y and x + 10y.
    assert source[-1] == "    return (array(value, dtype), array(g_x, dtype), array(g_y, dtype),)"
    program = compiled_program(parse_expression("3*x**2 + x*y + 5*y**2"), [2.0, 3.0])
    value, gradient = program.value_and_grad(1.0, -2.0)
    assert (value, *gradient) == (21.0, 4.0, -19.0)
