"""The command line: the demo and help."""

from __future__ import annotations

import subprocess
import sys

from adcompare.cli import main


def test_demo_shows_both_modes_and_their_sweeps(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "f = 63" in out
    assert "gradient (15, 32) in 2 forward passes" in out
    assert "gradient in 1 backward sweep" in out


def test_demo_at_another_point_uses_the_hand_formula(capsys):
    main(["demo", "--x", "1", "--y", "-1"])
    out = capsys.readouterr().out
    assert "f = 7" in out and "gradient (5, -9)" in out  # 6x + y, x + 10y


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out


def test_the_installed_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "adcompare.cli", "demo"], capture_output=True, text=True, check=True
    )
    assert "63" in result.stdout
