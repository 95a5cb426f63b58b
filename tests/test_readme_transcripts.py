"""The README's transcripts are run: its ``pycon`` blocks as doctests and its
``console`` blocks (``$ adcompare ...`` and the output) through the command line."""

from __future__ import annotations

import doctest
import re
import shlex
from pathlib import Path

import pytest

from adcompare.cli import main

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def _commands(block: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` for each ``$ adcompare`` line of a console block."""
    found = []
    for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
        command, _, output = chunk.partition("\n")
        found.append((command, output))
    return found


def test_the_readme_has_transcripts():
    assert _blocks("pycon") and _commands("".join(_blocks("console")))


@pytest.mark.parametrize("block", _blocks("pycon"), ids=lambda b: b.splitlines()[0][:40])
def test_pycon_transcript(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write files (graph.png): not into the checkout
    test = doctest.DocTestParser().get_doctest(block, {}, "README.md", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test)
    assert runner.failures == 0, "a README transcript no longer matches (output above)"


@pytest.mark.parametrize(
    "command, expected", _commands("".join(_blocks("console"))), ids=lambda c: c[:40]
)
def test_console_transcript(command, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    words = shlex.split(command)
    assert words[0] == "adcompare"
    assert main(words[1:]) == 0
    printed = capsys.readouterr().out
    checker = doctest.OutputChecker()
    assert checker.check_output(expected, printed, FLAGS), checker.output_difference(
        doctest.Example(command, expected), printed, FLAGS
    )
