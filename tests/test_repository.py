"""The repository keeps its promises: style, README, CI script."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "ruff", *args]
    if shutil.which("ruff") is None and subprocess.run(command[:3] + ["--version"]).returncode:
        pytest.fail("ruff is not installed: install the dev extra (pip install -e '.[dev]')")
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean():
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    block = re.search(r"```sh\n(.*?)```", _readme(), re.S).group(1).strip().splitlines()
    assert len(block) == 2
    assert "pip install" in block[0] and "pip install" in block[1]
    assert block[1].endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert block[1] in ci.splitlines()


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write files (graph.png): not into the checkout
    for example in re.findall(r"```python\n(.*?)```", _readme(), re.S):
        exec(compile(example, "README.md", "exec"), {})


def test_the_readme_lists_exactly_what_the_registry_differentiates():
    from adcompare.cli.ops import coverage_markdown

    text = _readme()
    start, end = text.index("<!-- ops:start -->\n"), text.index("<!-- ops:end -->")
    listed = text[start + len("<!-- ops:start -->\n") : end].strip()
    assert listed == coverage_markdown(), "regenerate it: adcompare ops --markdown"


@pytest.mark.parametrize("example", ["mymodel.py", "test_mymodel_bench.py"])
def test_the_readme_shows_each_route_of_measure_your_own_function_as_its_test_runs_it(example):
    # tests/test_bench_open.py and tests/test_pytest_plugin.py run these files as they are;
    # the README must show the same text, so a reader's copy runs too.
    text = (ROOT / "docs" / "examples" / example).read_text(encoding="utf-8").rstrip("\n")
    assert f"```python\n{text}\n```" in _readme()


def test_the_readme_gives_the_command_line_route_that_its_test_runs():
    from tests.test_cli_function import README_COMMAND

    assert f"```sh\n{README_COMMAND}\n```" in _readme()
