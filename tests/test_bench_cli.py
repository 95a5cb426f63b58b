"""The commands: bench, report and run, their help, and their errors."""

from __future__ import annotations

import json

import pytest

from adcompare.bench import sweep
from adcompare.cli import build_parser, main
from adcompare.cli import run as cmd_run

TINY = [
    "--problems",
    "rosenbrock",
    "fourier",
    "--modes",
    "f",
    "forward,reverse",
    "--sizes",
    "2",
    "4",
    "--repeats",
    "1",
    "--quiet",
    "--no-memory",
]


def help_of(*command):
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])


def test_every_command_explains_itself_with_an_example(capsys):
    help_of()
    text = capsys.readouterr().out
    for command in ("run", "bench", "report"):
        assert f"    {command} " in text
    assert "examples:" in text and "adcompare run" in text
    for command in ("run", "bench", "report"):
        help_of(command)
        text = capsys.readouterr().out
        assert "examples:" in text and f"adcompare {command}" in text


def test_bench_then_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["bench", *TINY, "--out", str(out)]) == 0
    cells = json.loads(out.read_text())["cells"]
    assert len(cells) == 2 * 2 * 3 and all(c["status"] == "ok" for c in cells)
    assert "next: adcompare report" in capsys.readouterr().err

    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## rosenbrock" in text and "## fourier" in text
    assert (tmp_path / "report" / "fourier.png").exists()


def test_bench_does_not_overwrite_without_being_asked(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["bench", *TINY, "--out", str(out)]) == 0
    before = json.loads(out.read_text())["cells"]
    assert main(["bench", *TINY, "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["bench", *TINY, "--out", str(out), "--resume"]) == 0
    assert json.loads(out.read_text())["cells"] == before, "resume measured finished cells again"
    assert main(["bench", *TINY, "--out", str(out), "--overwrite"]) == 0


def test_ctrl_c_keeps_the_cells_and_says_how_to_resume(tmp_path, capsys, monkeypatch):
    out = tmp_path / "r.json"
    calls = []
    real = sweep.measure_cell

    def interrupt_on_the_third_cell(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "measure_cell", interrupt_on_the_third_cell)
    assert main(["bench", *TINY, "--out", str(out)]) == 130
    assert "--resume" in capsys.readouterr().err
    assert len(json.loads(out.read_text())["cells"]) == 2
    monkeypatch.setattr(sweep, "measure_cell", real)
    assert main(["bench", *TINY, "--out", str(out), "--resume"]) == 0
    assert len(json.loads(out.read_text())["cells"]) == 12


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["bench", "--problems", "nope"], "unknown problem 'nope'; the problems are rosenbrock"),
        (["bench", "--modes", "sideways"], "unknown mode 'sideways'"),
        (["bench", "--sizes", "8", "big"], "sizes must be whole numbers"),
        (["bench", "--budget", "0"], "budget must be a positive"),
    ],
)
def test_bench_rejects_bad_options_clearly(arguments, message, capsys):
    assert main(arguments) == 2
    assert message in capsys.readouterr().err


def test_report_rejects_a_foreign_file_clearly(tmp_path, capsys):
    foreign = tmp_path / "package.json"
    foreign.write_text('{"name": "left-pad"}')
    assert main(["report", str(foreign), "--out", str(tmp_path / "out")]) == 2
    assert "not an adcompare results file" in capsys.readouterr().err


def test_run_measures_and_reports_into_one_folder(tmp_path, capsys, monkeypatch):
    small = {"sizes": [2, 4], "grid": [2, 4], "repeats": 1, "budget": 2.0, "min_repeat_time": 0.0}
    monkeypatch.setitem(sweep.PRESETS, "quick", small)
    monkeypatch.setattr(
        cmd_run, "preset", lambda name, **kw: sweep.preset(name, memory=False, **kw)
    )
    assert main(["run", "--out", str(tmp_path), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "rosenbrock: time against n" in printed and "report:" in printed
    assert (tmp_path / "results.json").exists() and (tmp_path / "report.md").exists()
    assert {p.name for p in tmp_path.glob("*.png")} >= {"rosenbrock.png", "tanh_map-crossover.png"}
