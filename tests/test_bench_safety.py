"""Results files and reports under stress: concurrent writers, kills, corrupt cells,
hostile names, unwritable places. Nothing is lost and nothing lands outside ``--out``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adcompare.bench.harness.results import (
    Results,
    ResultsError,
    cell_key,
    load_any,
    load_results,
    open_for_writing,
    remove_stale_temporaries,
)
from adcompare.bench.report import markdown as report_module
from adcompare.bench.report.plots import save_figures
from adcompare.cli import main

from .benchcases import synthetic_cell

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--problems", "fourier", "--modes", "f", "forward", "--sizes", "2", "4"]
FAST = ["--repeats", "1", "--quiet", "--no-memory"]
HOSTILE = ["../../escaped", "a/b", "..", ".hidden", "x" * 300]


def run_cli(*arguments) -> tuple[int, str]:
    """Exit status and standard error of one in-process command."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main([str(a) for a in arguments])
    return status, err.getvalue()


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict:
    """A small valid results document, measured once."""
    path = tmp_path_factory.mktemp("measured") / "results.json"
    assert run_cli("bench", *TINY, *FAST, "--out", path)[0] == 0
    return json.loads(path.read_text())


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


def cell(n: int, problem: str = "rosenbrock") -> dict:
    return synthetic_cell(problem, "many-inputs", "f", {"n": n}, n, 1, 1e-5, 10)


# --- item 12: names never choose where a file goes -------------------------------------------


def test_hostile_problem_names_write_nothing_outside_out(tmp_path, measured):
    document = json.loads(json.dumps(measured))
    outside = tmp_path / "outside" / "abs"
    for name in [str(outside), *HOSTILE]:
        for original in measured["cells"]:
            document["cells"].append(original | {"problem": name})
    source = tmp_path / "hostile.json"
    source.write_text(json.dumps(document))
    (tmp_path / "outside").mkdir()
    out = tmp_path / "a" / "b" / "out"
    before = files_under(tmp_path)

    status, err = run_cli("report", source, "--out", out)

    assert status == 0, err
    new = files_under(tmp_path) - before
    assert new and all(out in p.parents or p == out or p in out.parents for p in new), new
    figures = sorted(p.name for p in out.glob("*.png"))
    assert len(figures) == 2 + len(HOSTILE), figures
    assert all(len(name) < 100 and "/" not in name for name in figures)
    text = (out / "report.md").read_text()
    for name in figures:
        assert f"]({name})" in text, f"the report does not link {name}"


@pytest.mark.filterwarnings("ignore:Glyph")
@pytest.mark.parametrize("name", ["/abs/x", "a\x00b", "a\nb", "../" * 40 + "x", "é" * 200])
def test_save_figures_keeps_every_file_inside_its_folder(tmp_path, name):
    # The cell check would refuse control characters; the path check holds without it.
    results = Results()
    for n in (2, 4, 8):
        results.add(cell(n, problem=name))
    out = tmp_path / "out"
    written = save_figures(results, out)
    assert list(written) == [name]
    (path,) = written.values()
    assert path.parent == out and path.exists()
    assert files_under(tmp_path) == {out, path}


# --- item 11: a failed report leaves nothing half-written ------------------------------------


def test_a_report_that_fails_part_way_leaves_nothing_behind(tmp_path, measured, monkeypatch):
    source = tmp_path / "results.json"
    source.write_text(json.dumps(measured))

    def fail(*args, **kwargs):
        raise RuntimeError("the report failed after drawing its figures")

    monkeypatch.setattr(report_module, "render", fail)
    with pytest.raises(RuntimeError):
        report_module.write_report(load_any(source), tmp_path / "new")
    assert files_under(tmp_path) == {source}, "a failed report left files"

    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "report.md").write_text("the previous report")
    (kept / "notes.txt").write_text("the user's own file")
    with pytest.raises(RuntimeError):
        report_module.write_report(load_any(source), kept)
    assert sorted(p.name for p in kept.iterdir()) == ["notes.txt", "report.md"]
    assert (kept / "report.md").read_text() == "the previous report"
    monkeypatch.undo()
    report_module.write_report(load_any(source), kept)
    assert (kept / "notes.txt").exists() and (kept / "fourier.png").exists()
    assert files_under(tmp_path) - files_under(kept) == {source, kept}


# --- item 8: two writers never lose cells -----------------------------------------------------


def test_two_writers_of_one_file_never_lose_a_cell(tmp_path):
    path = tmp_path / "results.json"
    Results(path=path).add(cell(1))
    saved: list[int] = []
    refused: list[str] = []
    barrier = threading.Barrier(2)

    def writer(first: int):
        results = load_results(path)  # each thread its own file handles and copy
        barrier.wait()
        for n in range(first, first + 20, 2):
            try:
                results.add(cell(n))
            except ResultsError as error:
                refused.append(str(error))
                return
            saved.append(n)

    threads = [threading.Thread(target=writer, args=(first,)) for first in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    on_disk = {c["n"] for c in load_results(path).cells}
    assert {1, *saved} <= on_disk, f"lost cells {sorted({1, *saved} - on_disk)}"
    assert refused and "rewritten by another process" in refused[0]


def test_a_second_bench_into_a_locked_file_refuses_with_a_sentence(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    assert run_cli("bench", *TINY, *FAST, "--out", path)[0] == 0
    before = path.read_text()
    holder = open_for_writing(path, resume=True, overwrite=False)
    monkeypatch.setattr("adcompare.bench.harness.results.LOCK_WAIT", 0.2)
    status, err = run_cli("bench", *TINY, *FAST, "--out", path, "--resume")
    assert status == 2 and "being written by another adcompare process" in err
    assert "Traceback" not in err and path.read_text() == before
    holder.close()
    assert run_cli("bench", *TINY, *FAST, "--out", path, "--resume")[0] == 0


def test_two_bench_processes_at_once_keep_every_cell(tmp_path):
    path = tmp_path / "results.json"
    runs = [
        ["--problems", "fourier", "--modes", "f", "reverse"],
        ["--problems", "rosenbrock", "--modes", "f", "reverse"],
    ]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "adcompare.cli", "bench", *which, "--sizes", "2", "4"]
            + [*FAST, "--out", str(path), "--resume"],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for which in runs
    ]
    outcomes = [(p.wait(timeout=120), p.stderr.read()) for p in processes]
    cells = load_results(path).cells
    for (status, err), which in zip(outcomes, runs):
        assert "Traceback" not in err
        assert status in (0, 2), err
        if status == 0:
            assert sum(c["problem"] == which[1] for c in cells) == 4, err
        else:
            assert "being written by another adcompare process" in err


# --- item 10: SIGTERM and killed writers leave no temporaries --------------------------------

SLOW_SAVES = """
import sys, time
from adcompare.bench.harness import sweep
from adcompare.cli import main

def measure_cell(*args, **kwargs):
    print("measuring", flush=True)
    return {"time": {"median": 1.0, "samples": [1.0] * 200_000}, "counts": None,
            "memory": {"peak_bytes": None}, "check": None, "seconds": 1.0}

sweep.measure_cell = measure_cell
sys.exit(main(["bench", "--problems", "rosenbrock", "--modes", "f", "forward", "reverse",
               "--sizes", *map(str, range(2, 60)), "--repeats", "1", "--quiet", "--no-memory",
               "--budget", "1000", "--out", sys.argv[1]]))
"""


def test_sigterm_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "results.json"
    for delay in (0.3,):
        process = subprocess.Popen(
            [sys.executable, "-c", SLOW_SAVES, str(path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout.readline().strip() == "measuring"
        time.sleep(delay)
        process.send_signal(signal.SIGTERM)
        status = process.wait(timeout=60)
        err = process.stderr.read()
        assert status == 143 and "terminated" in err and "--resume" in err, err
        left = sorted(p.name for p in tmp_path.iterdir() if p.name != "results.json")
        assert left == [], f"SIGTERM after {delay} s left {left}"
        load_results(path)
        path.unlink()


def test_a_later_save_removes_the_temporaries_of_dead_writers_only(tmp_path):
    path = tmp_path / "results.json"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], text=True, capture_output=True
    ).stdout.strip()
    stale = tmp_path / f"results.json.{dead}.abc123.tmp"
    alive = tmp_path / f"results.json.{os.getppid()}.def456.tmp"
    other = tmp_path / f"other.json.{dead}.abc123.tmp"
    for file in (stale, alive, other):
        file.write_text("{")
    Results(path=path).add(cell(2))
    assert not stale.exists() and alive.exists() and other.exists()
    assert remove_stale_temporaries(path) == []


# --- item 15: unwritable places get one sentence and exit 2 ---------------------------------


@pytest.mark.parametrize("where", ["folder", "under-a-file", "proc"])
def test_bench_into_an_unwritable_place_says_so(tmp_path, where):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    out = {
        "folder": tmp_path / "folder",
        "under-a-file": tmp_path / "file" / "results.json",
        "proc": Path("/proc/adcompare-test/results.json"),
    }[where]
    status, err = run_cli("bench", *TINY, *FAST, "--out", out, "--overwrite")
    assert status == 2 and "Traceback" not in err
    assert err.startswith("adcompare bench: cannot write the results file"), err


@pytest.mark.parametrize("where", ["a-file", "under-a-file", "proc"])
def test_report_into_an_unwritable_place_says_so(tmp_path, measured, where):
    source = tmp_path / "results.json"
    source.write_text(json.dumps(measured))
    (tmp_path / "file").write_text("x")
    out = {
        "a-file": tmp_path / "file",
        "under-a-file": tmp_path / "file" / "report",
        "proc": Path("/proc/adcompare-test/report"),
    }[where]
    status, err = run_cli("report", source, "--out", out)
    assert status == 2 and "Traceback" not in err
    assert err.startswith(f"adcompare report: cannot write the report into {out}"), err


def test_report_of_a_folder_says_so(tmp_path):
    status, err = run_cli("report", tmp_path, "--out", tmp_path / "out")
    assert status == 2 and "is a folder" in err


# --- fuzz: corrupt results files end in a sentence, keep the good cells ----------------------

FIELDS = [
    ("problem",), ("mode",), ("size",), ("size", "n"), ("n",), ("m",), ("status",), ("time",),
    ("time", "median"), ("time", "iqr"), ("time", "samples"), ("time", "repeats"), ("counts",),
    ("counts", "elements"), ("counts", "ops"), ("check",), ("check", "ok"), ("check", "error"),
    ("memory",), ("memory", "peak_bytes"), ("env",), ("family",), ("load",), ("seconds",),
]  # fmt: skip
DELETE = object()
values = st.one_of(
    st.just(DELETE),
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(HOSTILE),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
corruptions = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(FIELDS), values), min_size=1, max_size=3
)


def corrupt(document: dict, changes) -> set[int]:
    """Apply ``changes`` to ``document``'s cells; returns the indices of cells touched."""
    for index, field, value in changes:
        target = document["cells"][index]
        for name in field[:-1]:
            if not isinstance(target.get(name), dict):
                target[name] = {}
            target = target[name]
        if value is DELETE:
            target.pop(field[-1], None)
        else:
            target[field[-1]] = value
    return {index for index, _, _ in changes}


def assert_kept(path: Path, good: list[dict]):
    on_disk = {cell_key(c): c for c in load_any(path).cells}
    for original in good:
        assert on_disk.get(cell_key(original)) == original, f"lost {cell_key(original)}"


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes=corruptions, command=st.sampled_from(["report", "bench"]))
@example(changes=[(0, ("size",), {})], command="bench")  # was a KeyError in the budget
def test_fuzz_corrupt_results_end_in_a_sentence(measured, changes, command):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        document = json.loads(json.dumps(measured))
        touched = corrupt(document, changes)
        good = [c for i, c in enumerate(document["cells"]) if i not in touched]
        path = root / "results.json"
        path.write_text(json.dumps(document))
        out = root / "deep" / "out"
        before = files_under(root)
        if command == "report":
            status, err = run_cli("report", path, "--out", out)
        else:
            status, err = run_cli("bench", *TINY, *FAST, "--out", path, "--resume")
        assert "Traceback" not in err and status in (0, 2), err
        if status == 2:
            assert err.startswith(f"adcompare {command}: "), err
        assert_kept(path, good)
        new = files_under(root) - before
        allowed = {out, out.parent} if command == "report" else set()
        assert all(p in allowed or out in p.parents for p in new), new
