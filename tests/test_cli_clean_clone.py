"""No command rewrites a committed file unless asked with ``--refresh-reference``.

Each command that writes files runs at its smallest settings in a fresh
clone of the repository's committed HEAD, and ``git status`` stays empty:
the default outputs go to the git-ignored ``reports/latest/``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from adcompare.bench.harness import sweep
from adcompare.cli import main
from adcompare.cli import sparse as cmd_sparse
from adcompare.cli.outfolder import REFERENCES
from tests.test_cli_contract import TINY_PRESET

ROOT = Path(__file__).resolve().parent.parent

#: Every command that writes files, at its smallest settings, with its default output.
COMMANDS = {
    "run": ["run", "--quiet"],
    "bench": [
        *("bench", "--problems", "fourier", "--modes", "f", "forward", "--sizes", "2"),
        *("--repeats", "1", "--no-memory", "--quiet"),
    ],
    "targets": ["targets", "--small", "--rounds", "1"],
    "train": ["train", "--epochs", "1", "--n-per-class", "4"],
    "memory": ["memory", "--steps", "4", "--problems", "heat", "--modes", "reverse", "--quiet"],
    "sparse": ["sparse", "--problems", "arrowhead", "--quick", "--no-peers"],
}


def _git(folder: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=folder, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of the committed HEAD (its reports/ references included)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and the repository's history")
    folder = tmp_path_factory.mktemp("clone") / "adcompare"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    return folder


@pytest.fixture
def small(monkeypatch):
    """The quick presets shrunk to seconds: one small problem, tiny sizes."""
    monkeypatch.setitem(sweep.PRESETS, "quick", TINY_PRESET)
    monkeypatch.setitem(cmd_sparse.QUICK_SIZES, "arrowhead", (8,))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_leaves_the_clone_clean(command, clone, small, monkeypatch, capsys):
    monkeypatch.chdir(clone)
    status = main(COMMANDS[command])
    assert status == 0, capsys.readouterr().err
    assert _git(clone, "status", "--porcelain") == ""
    assert list((clone / "reports" / "latest").iterdir())


def test_run_still_compares_with_the_committed_reference(clone, small, monkeypatch, capsys):
    monkeypatch.chdir(clone)
    assert main(["run", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "reports/quick/results.json" in out and "no reference run" not in out


@pytest.mark.parametrize(
    "arguments",
    [
        ["run", "--quiet", "--out", "reports/quick"],
        ["bench", "--problems", "fourier", "--out", "reports/real/results.json", "--overwrite"],
        ["bench", "--problems", "fourier", "--refresh-reference"],
        ["targets", "--small", "--out", "reports/targets"],
        ["train", "--out", "reports/train"],
        ["memory", "--steps", "4", "--out", "reports/memory"],
        ["memory", "--steps", "4", "--refresh-reference"],
        ["sparse", "--quick", "--out", "reports/sparse"],
        ["sparse", "--quick", "--refresh-reference"],
    ],
    ids=" ".join,
)
def test_a_reference_is_written_only_when_asked(arguments, clone, monkeypatch, capsys):
    monkeypatch.chdir(clone)
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"adcompare {arguments[0]}: "), err
    assert "--refresh-reference" in err or "--full" in err or "drop --quick" in err
    assert _git(clone, "status", "--porcelain") == ""


def test_every_reference_folder_is_committed():
    # The list the commands guard is the list of committed references, no more, no less.
    tracked = _git(ROOT, "ls-files", "reports").split()
    folders = {Path(name).parts[1] for name in tracked if len(Path(name).parts) > 2}
    assert folders == set(REFERENCES)


def test_report_leaves_the_clone_clean(clone, small, monkeypatch):
    monkeypatch.chdir(clone)
    assert main(COMMANDS["bench"]) == 0
    assert main(["report", "reports/latest/bench/results.json"]) == 0
    assert _git(clone, "status", "--porcelain") == ""
