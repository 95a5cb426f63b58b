"""A user's own function from the command line: ``--function FILE.py:NAME`` or
``MODULE:NAME``, loaded by one helper for every command."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

import adcompare as ad
from adcompare.check import finite_differences
from adcompare.cli import main
from adcompare.cli.userfunction import FunctionSpecError, load_function
from tests.test_bench_open import entry_points  # noqa: F401  (the fixture)

DATA = Path(__file__).resolve().parent / "data"
EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "mymodel.py"
#: The README's "Measure your own function" command line, run exactly as written there.
README_COMMAND = "adcompare bench --function mymodel.py:mymodel --sizes 16 64 256 1024"


def test_the_readme_example_measures_mymodel(tmp_path, monkeypatch, capsys):
    shutil.copy(EXAMPLE, tmp_path / "mymodel.py")
    monkeypatch.chdir(tmp_path)
    assert main(shlex.split(README_COMMAND)[1:]) == 0, capsys.readouterr().err
    folder = tmp_path / "reports" / "latest" / "mymodel"
    assert {"mymodel.png", "report.md", "results.json"} <= {p.name for p in folder.iterdir()}
    cells = json.loads((folder / "results.json").read_text())["cells"]
    measured = [c for c in cells if c["status"] == "ok"]
    assert {c["n"] for c in measured} == {16, 64, 256, 1024} and {c["m"] for c in measured} == {4}
    assert {"forward", "reverse", "forward1"} <= {c["mode"] for c in measured}
    assert all(c["check"]["ok"] for c in measured if c.get("check"))
    out = capsys.readouterr().out
    assert "report: reports/latest/mymodel/report.md" in out and "Which mode to use" in out


def test_the_example_s_jacobian_matches_finite_differences():
    f = load_function(f"{EXAMPLE}:mymodel")
    x = np.random.default_rng(0).standard_normal(6)
    jacobian = ad.jacrev(f)(x)
    assert jacobian.shape == (4, 6)
    np.testing.assert_allclose(jacobian, finite_differences(f)(x), rtol=1e-6, atol=1e-9)


def test_cells_measured_before_a_failure_are_kept(tmp_path, capsys):
    out = tmp_path / "results.json"
    arguments = ["bench", "--function", f"{DATA / 'userfunctions.py'}:small_only"]
    arguments += ["--sizes", "1", "2", "8", "--modes", "f", "reverse", "--repeats", "1"]
    assert main([*arguments, "--no-memory", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "small_only" in err and "MemoryError" in err, err
    assert f"4 cells measured before are kept in {out}" in err
    cells = json.loads(out.read_text())["cells"]
    assert sorted((c["n"], c["mode"]) for c in cells if c["status"] == "ok") == [
        (1, "f"),
        (1, "reverse"),
        (2, "f"),
        (2, "reverse"),
    ]
    # The kept reverse-mode cells hold cos(x), the derivative of sin, checked.
    assert all(c["check"]["ok"] for c in cells if c["mode"] == "reverse")


def test_a_module_is_found_from_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "helpers.py").write_text("def scale(x):\n    return 3.0 * x\n")
    (tmp_path / "model.py").write_text(
        "from helpers import scale\n\ndef g(x):\n    return scale(x) ** 2\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    by_module = load_function("model:g")
    by_file = load_function(str(tmp_path / "model.py") + ":g")
    x = np.array([1.0, -2.0])
    assert np.allclose(ad.jacfwd(by_module)(x), np.diag(18.0 * x))
    assert np.allclose(ad.jacrev(by_file)(x), np.diag(18.0 * x))


@pytest.mark.parametrize(
    "spec, words",
    [
        ("mymodel.py", "give the function as PKG.MODULE:NAME"),
        ("nosuch.py:f", "no file nosuch.py"),
        ("nosuch_module_xyz:f", "no module nosuch_module_xyz"),
        (f"{DATA / 'userfunctions.py'}:nope", "has no nope; its functions are cumulative"),
        (f"{DATA / 'userfunctions.py'}:NOT_CALLABLE", "is a float, not a function"),
        (f"{DATA / 'broken_import.py'}:f", "raised ImportError: no module named 'mylab_private'"),
    ],
)
def test_a_function_that_cannot_be_loaded_is_one_sentence(spec, words):
    with pytest.raises(FunctionSpecError) as raised:
        load_function(spec)
    message = str(raised.value)
    assert message.startswith(f"--function {spec}: ") and words in message
    assert "\n" not in message


def test_verify_a_function_against_the_hand_derived_gradient(capsys):
    spec = f"{DATA / 'userfunctions.py'}:pair"
    assert main(["verify", "--function", spec, "--at", "y=-0.5,x=1.5", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    x, y = 1.5, -0.5
    expected = [2 * x * y, x**2 + np.cos(y)]  # d/dx, d/dy of x²y + sin(y)
    assert document["reference"] == "symbolic" and document["status"] == "passed"
    for row in document["rows"]:
        assert row["mode"] in ("symbolic", "forward", "reverse", "fd")
        np.testing.assert_allclose(row["derivative"], expected, rtol=1e-8)
        np.testing.assert_allclose(row["value"], x**2 * y + np.sin(y), rtol=1e-15)


def test_verify_falls_back_to_finite_differences_where_sympy_gives_up(capsys):
    spec = f"{DATA / 'userfunctions.py'}:recurrence"
    assert main(["verify", "--function", spec, "--at", "0.3", "--symbolic-seconds", "5"]) == 0
    out = capsys.readouterr().out
    assert "symbolic reference skipped" in out and "rel err vs fd" in out
    assert out.rstrip().endswith("All modes agree with finite differences.")


def test_sparse_measures_a_user_s_function(tmp_path, capsys):
    spec = f"{DATA / 'userfunctions.py'}:tridiagonal"
    arguments = ["sparse", "--function", spec, "--sizes", "8", "32", "--no-peers"]
    assert main([*arguments, "--out", str(tmp_path)]) == 0, capsys.readouterr().err
    results = json.loads((tmp_path / "sparse.json").read_text())
    rows = {row["n"]: row for row in results["colours"] if row["problem"] == "tridiagonal"}
    assert set(rows) == {8, 32}
    for n, row in rows.items():
        # Identity first and last rows, three neighbours between: 3n - 4 non-zeros, and
        # columns three apart share no row, so three colours (the chromatic number).
        assert row["nnz"] == 3 * n - 4 and row["max_row"] == 3
        assert row["counts"]["forward"][row["defaults"]["forward"]] == 3
    cells = [c for c in results["cells"] if c["mode"] == "sparse-forward"]
    assert [c["seeds"] for c in cells] == [3, 3] and not any(c["error"] for c in cells)
    assert (tmp_path / "sparse.md").exists()


def test_sparse_keeps_the_cells_measured_before_a_function_fails(tmp_path, capsys):
    spec = f"{DATA / 'userfunctions.py'}:small_only"
    arguments = ["sparse", "--function", spec, "--sizes", "2", "8", "--no-peers"]
    assert main([*arguments, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("adcompare sparse: ") and "small_only" in err and "kept in" in err
    cells = json.loads((tmp_path / "sparse.json").read_text())["cells"]
    assert cells and {c["size"] for c in cells} == {2}


@pytest.mark.usefixtures("entry_points")
def test_bench_list_names_entry_point_problems_and_peers(capsys):
    assert main(["bench", "--list"]) == 0
    out = capsys.readouterr().out
    problems, peers = out.split("peer modes")
    assert "rosenbrock" in problems and "thirdparty-exp" in problems
    assert "'broken' = thirdparty_bench:missing fails to load" in problems
    assert "numpylib:by-hand" in peers
