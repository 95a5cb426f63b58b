"""Every command keeps one exit-status contract, tested over every command.

0 when it succeeded, 1 when a check found a mismatch, 2 for bad input, and
never a traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adcompare.bench.harness import sweep
from adcompare.cli import bench as cmd_bench
from adcompare.cli import build_parser, main

#: A quick preset of seconds: one small problem, tiny sizes.
TINY_PRESET = {
    "problems": ["fourier"],
    "sizes": [2, 4],
    "grid": [2],
    "second_order_sizes": [2],
    "repeats": 1,
    "budget": 1.0,
    "min_repeat_time": 0.0,
    "memory": False,
}

#: Per command: (arguments, expected status) cases; "{tmp}" is a fresh folder, "{data}"
#: the users' functions of tests/data/userfunctions.py.
#: Every command appears, so a new command cannot join without its cases.
#: The smallest sweep of a user's function: two sizes, three modes, one repeat.
TINY = ["--sizes", "2", "4", "--modes", "f", "forward1", "reverse", "--repeats", "1"]
TINY += ["--no-memory", "--quiet", "--out", "{tmp}/user/results.json", "--overwrite"]
#: The smallest sparse study of a user's function.
SPARSE_TINY = ["--sizes", "4", "--no-peers", "--out", "{tmp}/sparse"]
#: Finite differences held to a tolerance no float meets: a mismatch.
MISMATCH = ["--modes", "fd", "--rtol", "1e-300"]
#: Where the users' functions of the tests live.
DATA = Path(__file__).resolve().parent / "data"

CASES = {
    "run": [
        (["run", "--quiet", "--out", "{tmp}/run"], 0),
        (["run", "--quiet", "--out", "/dev/null/run"], 2),
        (["run", "--quiet", "--out", "{tmp}/run", "--resume", "--overwrite"], 2),
    ],
    "bench": [
        (
            [
                "bench",
                "--problems",
                "fourier",
                "--modes",
                "f",
                "--sizes",
                "2",
                "--out",
                "{tmp}/b.json",
                "--repeats",
                "1",
                "--no-memory",
                "--quiet",
            ],
            0,
        ),
        (["bench", "--sizes", "-4"], 2),
        (["bench", "--problems", "fourier", "--workers", "0", "--quiet"], 2),
        (["bench", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], 2),
        (["bench", "--list"], 0),
        (["bench", "--function", "{data}:cumulative", *TINY, "--out", "{tmp}/f/r.json"], 0),
        (["bench", "--function", "{data}:loss", "--inputs", "{data}:loss_inputs", *TINY], 0),
        (["bench", "--function", "nosuchmodule:f", *TINY], 2),
        (["bench", "--function", "no/such/file.py:f", *TINY], 2),
        (["bench", "--function", "cumulative", *TINY], 2),
        (["bench", "--function", "{data}:nosuch", *TINY], 2),
        (["bench", "--function", "{data}:NOT_CALLABLE", *TINY], 2),
        (["bench", "--function", "{broken}:f", *TINY], 2),
        (["bench", "--function", "{data}:raises", *TINY], 2),
        (["bench", "--function", "{data}:matrix", *TINY], 2),
        (["bench", "--function", "{data}:root", "--inputs", "{data}:zeros", *TINY], 2),
        (["bench", "--function", "{data}:cumulative", "--inputs", "{data}:nosuch", *TINY], 2),
        (["bench", "--problems", "fourier", "--out", "/dev/null/b.json", "--quiet"], 2),
    ],
    "report": [
        (["report", "{tmp}/results.json", "--out", "{tmp}/report"], 0),
        (["report", "{tmp}/no-such.json", "--out", "{tmp}/report"], 2),
        (["report", "{tmp}/foreign.json", "--out", "{tmp}/report"], 2),
        (["report", "{tmp}/results.json", "--out", "reports/quick"], 2),
        (["report", "{tmp}/results.json", "--refresh-reference"], 2),
        # A pipe with no writer and an endless device: refused, not read forever.
        (["report", "{tmp}/fifo", "--out", "{tmp}/report"], 2),
        (["report", "/dev/zero", "--out", "{tmp}/report"], 2),
    ],
    "targets": [
        (["targets", "--repeats", "0"], 2),
        (["targets", "--out", "/dev/null/targets"], 2),
        (["targets", "--small", "--refresh-reference"], 2),
    ],
    "demo": [
        (["demo", "--x", "1", "--y", "-1"], 0),
        (["demo", "--x", "1e308"], 2),
        (["demo", "--x", "nan"], 2),
        (["demo", "--x", "two"], 2),
    ],
    "explain": [
        (["explain", "sin(x)*y", "--at", "x=1,y=2"], 0),
        (["explain", "sin(x", "--at", "x=1"], 2),
        (["explain", "sin(x)*y", "--at", "x=1,y=2", "--eliminate", "markowitz"], 0),
        (["explain", "sin(x)*y", "--at", "x=1,y=2", "--eliminate", "sideways"], 2),
        (["explain", "sin(x)", "--at", "x=1", "--dot", "/dev/null/graph.dot"], 2),
    ],
    "train": [
        (["train", "--epochs", "1", "--n-per-class", "4", "--out", "{tmp}/train"], 0),
        (["train", "--epochs", "0"], 2),
        (["train", "--batch-size", "0"], 2),
        (["train", "--hidden", "0"], 2),
        (["train", "--noise", "-1"], 2),
        (["train", "--n-per-class", "1"], 2),
        (["train", "--lr", "nan"], 2),
        (["train", "--out", "/dev/null/train"], 2),
    ],
    "gradbench": [
        (["gradbench", "--run", "hello", "--workloads", "2.0", "--out", "{tmp}/gb"], 0),
        (["gradbench", "--run", "hello", "--workloads", "3.0", "--out", "{tmp}/gb"], 2),
        (["gradbench", "--run", "nosuch", "--out", "{tmp}/gb"], 2),
        (["gradbench", "--run", "hello", "--timeout", "0", "--out", "{tmp}/gb"], 2),
        (["gradbench", "--run", "hello", "--repeat", "0", "--out", "{tmp}/gb"], 2),
        (["gradbench", "--run", "hello", "--out", "/dev/null/gb"], 2),
        (["gradbench", "--report", "--out", "{tmp}/empty"], 2),
    ],
    "memory": [
        (["memory", "--memory-budget", "lots"], 2),
        (["memory", "--memory-budget", "1e400GiB"], 2),
        (["memory", "--steps", "0"], 2),
        (["memory", "--steps", "4", "--problems", "heat", "--out", "/dev/null/x", "--quiet"], 2),
    ],
    "ode": [
        (["ode", "--out", "/dev/null/ode"], 2),
        (["ode", "--report-only", "--out", "{tmp}/no-ode-yet"], 2),
        (["ode", "--report-only", "--out", "{tmp}/malformed"], 2),
        (["ode", "--report-only", "--out", "{tmp}/truncated"], 2),
    ],
    "sparse": [
        (["sparse", "--problems", "nosuch", "--quick"], 2),
        (["sparse", "--report-only", "--out", "/nonexistent-folder/sparse"], 2),
        (["sparse", "--report-only", "--out", "{tmp}/malformed"], 2),
        (["sparse", "--report-only", "--out", "{tmp}/truncated"], 2),
        (["sparse", "--problems", "arrowhead", "--quick", "--out", "/dev/null/x"], 2),
        (["sparse", "--function", "{data}:tridiagonal", *SPARSE_TINY], 0),
        (["sparse", "--function", "{data}:raises", *SPARSE_TINY], 2),
        (["sparse", "--function", "{data}:matrix", *SPARSE_TINY], 2),
        (["sparse", "--function", "{data}:nosuch", *SPARSE_TINY], 2),
        (["sparse", "--function", "{broken}:f", *SPARSE_TINY], 2),
        (["sparse", "--function", "{data}:tridiagonal", "--refresh-reference"], 2),
    ],
    "ops": [
        (["ops"], 0),
        (["ops", "--no-such-option"], 2),
    ],
    "history": [
        (["history", "import", "{tmp}/results.json", "--history", "{tmp}/h.sqlite"], 0),
        (["history", "--history", "{tmp}/h.sqlite"], 2),
        (["history", "compare", "--history", "{tmp}/foreign.json"], 2),
        (["history", "import", "{tmp}/foreign.json", "--history", "{tmp}/h.sqlite"], 2),
        (["history", "compare", "1", "--history", "{tmp}/h.sqlite"], 2),
    ],
    "verify": [
        (["verify", "3*x**2 + x*y + 5*y**2", "--at", "x=2,y=3"], 0),
        (["verify", "sin(x)", "--at", "x=1", "--modes", "fd", "--rtol", "1e-300"], 1),
        (["verify", "import(x)", "--at", "x=1"], 2),
        (["verify", "x*y"], 2),
        (["verify", "--at", "x=1"], 2),
        (["verify", "--function", "{data}:pair", "--at", "x=1.5,y=-0.5"], 0),
        (["verify", "--function", "{data}:cumulative", "--at", "0.1,0.2,-0.3"], 0),
        (["verify", "--function", "{data}:loss", "--inputs", "{data}:loss_inputs"], 0),
        (["verify", "--function", "{data}:pair", "--at", "x=1,y=2", "--modes", "fd"], 0),
        (["verify", "--function", "{data}:pair", "--at", "x=1,y=2", *MISMATCH], 1),
        (["verify", "--function", "{data}:pair", "x*y", "--at", "x=1,y=2"], 2),
        (["verify", "--function", "{data}:pair", "--at", "x=1"], 2),
        (["verify", "--function", "{data}:pair", "--at", "x=1,y=two"], 2),
        (["verify", "--function", "{data}:pair"], 2),
        (["verify", "--function", "{data}:root", "--at", "0,1"], 2),
        (["verify", "--function", "{data}:raises", "--at", "1"], 2),
        (["verify", "--function", "{data}:nosuch", "--at", "1"], 2),
        (["verify", "--function", "{broken}:f", "--at", "1"], 2),
    ],
}


def _commands() -> set[str]:
    parser = build_parser()
    return set(next(a for a in parser._actions if a.dest == "command").choices)


def test_every_command_has_contract_cases():
    assert set(CASES) == _commands()


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A folder with a small results file, a foreign JSON, and a seconds-long quick preset."""
    monkeypatch.setitem(sweep.PRESETS, "quick", TINY_PRESET)
    config = sweep.preset("quick", modes=["f", "forward"])
    results = cmd_bench.open_results(tmp_path / "results.json", resume=False, overwrite=False)
    sweep.run_sweep(config, results)
    (tmp_path / "foreign.json").write_text('{"name": "left-pad"}')
    os.mkfifo(tmp_path / "fifo")
    for folder, text in (("malformed", '{"cells": 5}'), ("truncated", '{"problems": [')):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "sparse.json").write_text(text)
        (tmp_path / folder / "ode.json").write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "arguments, status",
    [case for cases in CASES.values() for case in cases],
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_exit_status_and_one_clean_line(arguments, status, workspace, capsys):
    places = {
        "{tmp}": workspace,
        "{data}": DATA / "userfunctions.py",
        "{broken}": DATA / "broken_import.py",
    }
    for place, path in places.items():
        arguments = [a.replace(place, str(path)) for a in arguments]
    try:
        got = main(arguments)
    except SystemExit as stop:  # argparse's own usage errors
        got = stop.code
    captured = capsys.readouterr()
    assert got == status, captured.err
    assert "Traceback" not in captured.err + captured.out
    if status == 2:
        problem = [line for line in captured.err.splitlines() if not line.startswith(" ")]
        # The command's own sentence, or argparse's (unknown options are the top parser's).
        assert problem[-1].startswith((f"adcompare {arguments[0]}", "adcompare: error")), (
            captured.err
        )


def test_an_unexpected_error_is_one_line_unless_debug(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise KeyError("lanes")

    monkeypatch.setattr("adcompare.cli.demo.demo_lines", broken)
    assert main(["demo"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: KeyError" in err and "--debug" in err
    with pytest.raises(KeyError, match="lanes"):
        main(["demo", "--debug"])


def test_an_unworded_os_error_is_bad_input(monkeypatch, capsys):
    def unreadable(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "/root/results.json")

    # demo words no OSError itself: the command line's own handler says it in one line.
    monkeypatch.setattr("adcompare.cli.demo.demo_lines", unreadable)
    assert main(["demo"]) == 2
    assert capsys.readouterr().err == "adcompare demo: Permission denied: /root/results.json\n"


@pytest.mark.parametrize("command", ["run", "bench", "targets", "train", "memory", "sparse"])
def test_a_command_s_default_output_is_git_ignored(command):
    # A new user's first runs leave the clone clean: the committed reference folders
    # (reports/quick, reports/targets, reports/train, ...) are written only when asked;
    # None is the command's own folder under reports/latest/.
    from pathlib import Path

    from adcompare.cli import run

    out = Path(build_parser().parse_args([command]).out or run.LATEST)  # run: None is LATEST
    ignored = (Path(__file__).resolve().parent.parent / ".gitignore").read_text().split()
    assert "reports/latest/" in ignored
    assert out.parts[:2] == ("reports", "latest"), out
