"""The commands: bench, report and run, their help, and their errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from adcompare.bench.harness import sweep
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


def test_bench_writes_every_cell_and_report_turns_them_into_sections_and_figures(tmp_path, capsys):
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

    def interrupt_on_the_fourth_cell(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:  # the first at n = 4: n = 2's three cells are written
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "measure_cell", interrupt_on_the_fourth_cell)
    assert main(["bench", *TINY, "--out", str(out)]) == 130
    assert "--resume" in capsys.readouterr().err
    assert len(json.loads(out.read_text())["cells"]) == 3
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


@pytest.fixture
def small_run(monkeypatch):
    """``adcompare run`` with a preset of seconds: three problems at two sizes."""
    small = {
        "problems": ["rosenbrock", "fourier", "tanh_map"],
        "sizes": [2, 4],
        "grid": [2, 4],
        "repeats": 1,
        "budget": 2.0,
        "min_repeat_time": 0.0,
    }
    monkeypatch.setitem(sweep.PRESETS, "quick", small)
    monkeypatch.setattr(
        cmd_run, "preset", lambda name, **kw: sweep.preset(name, memory=False, **kw)
    )


def test_run_measures_and_reports_into_one_folder(tmp_path, capsys, small_run):
    assert main(["run", "--out", str(tmp_path / "mine"), "--quiet"]) == 0
    tmp_path = tmp_path / "mine"
    printed = capsys.readouterr().out
    assert "at the largest sizes measured: rosenbrock reverse" in printed and "report:" in printed
    assert (tmp_path / "results.json").exists() and (tmp_path / "report.md").exists()
    assert {p.name for p in tmp_path.glob("*.png")} >= {"rosenbrock.png", "tanh_map-crossover.png"}


def test_run_leaves_the_committed_reference_alone(tmp_path, capsys, small_run, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--quiet"]) == 0
    assert (tmp_path / "reports" / "latest" / "report.md").exists()
    assert not (tmp_path / "reports" / "quick").exists(), "run wrote into the reference folder"
    printed = capsys.readouterr().out
    assert "report: reports/latest/report.md" in printed
    assert "no reference run to compare with at reports/quick/results.json" in printed

    assert main(["run", "--quiet", "--refresh-reference"]) == 0
    assert (tmp_path / "reports" / "quick" / "report.md").exists()
    assert "this run replaced the reference" in capsys.readouterr().out
    assert main(["run", "--quiet"]) == 0, "the default folder is rewritten without asking"
    assert "the reference reports/quick/results.json" in capsys.readouterr().out
    shutil.copy(tmp_path / "reports/latest/results.json", tmp_path / "reports/quick/results.json")
    same = cmd_run.comparison_lines(
        Path("reports/latest/results.json"), Path("reports/quick/results.json")
    )
    assert same[0].startswith("the same conclusions as the reference reports/quick/results.json")


def test_run_names_the_crossover_that_moved(tmp_path, capsys, small_run):
    mine = tmp_path / "mine"
    assert main(["run", "--quiet", "--out", str(mine)]) == 0
    data = json.loads((mine / "results.json").read_text())
    # Times set, not measured (a test asserts nothing on the clock): in this run
    # forward mode is 1000 times cheaper than reverse on fourier, in the reference
    # 1000 times dearer.
    fourier = [cell for cell in data["cells"] if cell["problem"] == "fourier" and "time" in cell]
    for cell in fourier:
        cell["time"]["median"] = 1e-6 if cell["mode"].startswith("forward") else 1e-3
        cell["time"]["iqr"] = 0.0
    (mine / "results.json").write_text(json.dumps(data))
    for cell in fourier:
        if cell["mode"].startswith("forward"):
            cell["time"]["median"] = 1.0
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(data))
    lines = cmd_run.comparison_lines(mine / "results.json", reference)
    assert lines[0].endswith("crossovers agree, 1 moved:"), lines
    assert lines[1] == (
        "  fourier: forward, chunked beats reverse by time at every m measured (m ≥ 2), "
        "the reference not within m ≤ 4"
    )
    capsys.readouterr()
    assert (
        main(["run", "--quiet", "--out", str(mine), "--overwrite", "--reference", str(reference)])
        == 0
    )
    assert f"compared with the reference {reference}" in capsys.readouterr().out


def test_a_crossover_that_moves_only_within_the_timing_noise_is_not_called_moved(
    tmp_path, small_run
):
    mine = tmp_path / "mine"
    assert main(["run", "--quiet", "--out", str(mine)]) == 0
    data = json.loads((mine / "results.json").read_text())
    # Forward 2 % cheaper than reverse here and 2 % dearer in the reference, each
    # time with a spread (IQR) of 10 %: neither run can tell the two apart.
    fourier = [cell for cell in data["cells"] if cell["problem"] == "fourier" and "time" in cell]

    def set_times(forward_median, iqr):
        for cell in fourier:
            forward = cell["mode"].startswith("forward")
            cell["time"]["median"] = forward_median if forward else 1e-3
            cell["time"]["iqr"] = iqr
        return json.dumps(data)

    (mine / "results.json").write_text(set_times(0.98e-3, 1e-4))
    reference = tmp_path / "reference.json"
    reference.write_text(set_times(1.02e-3, 1e-4))
    lines = cmd_run.comparison_lines(mine / "results.json", reference)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"the same conclusions as the reference {reference}: ")
    assert lines[0].endswith(
        "crossovers agree, 1 more within the timing noise "
        "(fourier: the two modes' time ranges overlap where the runs differ)"
    )
    # The same move with spreads of 1 %: both runs tell the modes apart, so it moved.
    reference.write_text(set_times(1.02e-3, 1e-5))
    (mine / "results.json").write_text(set_times(0.98e-3, 1e-5))
    lines = cmd_run.comparison_lines(mine / "results.json", reference)
    assert lines[0].endswith("crossovers agree, 1 moved:"), lines
    assert lines[1].startswith("  fourier: forward, chunked beats reverse by time")


def test_run_keeps_a_named_folders_results_unless_told(tmp_path, capsys, small_run):
    out = ["run", "--quiet", "--out", str(tmp_path)]
    assert main(out) == 0
    before = json.loads((tmp_path / "results.json").read_text())["cells"]
    capsys.readouterr()
    assert main(out) == 2
    assert "already exists; pass --resume to continue it, --overwrite" in capsys.readouterr().err
    assert json.loads((tmp_path / "results.json").read_text())["cells"] == before
    assert main([*out, "--resume"]) == 0
    assert main([*out, "--overwrite"]) == 0


@pytest.mark.parametrize("where", ["a file", "results.json a folder", "read-only"])
def test_run_refuses_an_unwritable_folder_before_measuring(where, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "out"
    if where == "a file":
        folder.write_text("")
    elif where == "results.json a folder":
        (folder / "results.json").mkdir(parents=True)
    else:
        folder = tmp_path / "/proc/no-such-folder"
    monkeypatch.setattr(sweep, "measure_cell", lambda *a, **k: pytest.fail("measured"))
    assert main(["run", "--quiet", "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("adcompare run: ") and err.count("\n") == 1 and "--out" in err


def test_run_prints_a_line_per_problem_when_not_on_a_terminal(tmp_path, capsys, small_run):
    assert main(["run", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    planned = [problem.name for problem, _, _ in sweep.plan(cmd_run.preset("quick"))]
    lines = [line for line in err.splitlines() if " cells done (" in line]
    assert [line.split(":")[0] for line in lines] == ["rosenbrock", "fourier", "tanh_map"]
    for line in lines:
        assert line.startswith(f"{line.split(':')[0]}: {planned.count(line.split(':')[0])} cells")
