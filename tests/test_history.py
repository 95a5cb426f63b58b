"""The benchmark history: what it keeps, what it refuses, what a comparison flags, and
the comparison's page as a browser shows it."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from adcompare.bench.harness import modes, sweep
from adcompare.bench.harness.cells import cell_key
from adcompare.bench.history import store
from adcompare.bench.history.imports import read_runs
from adcompare.bench.history.store import HistoryError, Run, record_runs, run_cells
from adcompare.cli import main
from tests import browser

ROOT = Path(__file__).resolve().parent.parent
#: The committed results files of every kind the commands write.
COMMITTED = [
    "reports/quick/results.json",
    "reports/peers/results.json",
    "reports/real/results.json",
    "reports/targets/results.json",
    "reports/targets/targets.json",
    "reports/sparse/sparse.json",
    "reports/memory/results.json",
    "reports/memory/peers-results.json",
]
#: The quick sweep at tiny sizes: one problem, three modes, the quick preset's 3 repeats.
TINY = {
    "problems": ["rosenbrock"],
    "sizes": [4, 8],
    "grid": [4],
    "second_order_sizes": [4],
    "repeats": 3,
    "budget": 2.0,
    "min_repeat_time": 0.0,
    "memory": False,
    "modes": ["f", "forward", "reverse"],
}
#: The slowed mode sleeps this long per call: about 100 times its own time at these sizes.
DELAY = 0.02
#: The factor a cell must move by to be flagged here: far below the slowed mode's, far above
#: the drift of the other cells between two runs on a loaded machine (up to 1.5x seen at a
#: load average of 10 on 2 cores).
THRESHOLD = "5"


def _shape(text: str) -> tuple:
    """What tells two versions of a results file apart as a reader sees them: the schema,
    the top-level fields, and the fields of the cells and their times."""
    data = json.loads(text)
    cells = data.get("cells") or [e for row in data.get("rows", []) for e in row["entries"]]
    fields = {name for cell in cells for name in cell}
    timing = {name for c in cells if isinstance(c.get("time"), dict) for name in c["time"]}
    return data.get("schema"), tuple(sorted(data)), tuple(sorted(fields)), tuple(sorted(timing))


def _versions(path: str) -> list[str]:
    """The text of each committed version of ``path`` of a shape of its own, newest first
    (the file as it is when there is no history to read)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return [(ROOT / path).read_text()]
    commits = subprocess.run(
        ["git", "log", "--format=%h", "--", path], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    shapes = {}
    for commit in commits:
        text = subprocess.run(
            ["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True
        ).stdout
        shapes.setdefault(_shape(text), text)
    return list(shapes.values())


@pytest.mark.parametrize("path", COMMITTED)
def test_every_results_file_this_repository_wrote_imports_with_its_samples(path, tmp_path):
    history = tmp_path / "history.sqlite"
    for text in _versions(path):
        copy = tmp_path / Path(path).name
        copy.write_text(text)
        runs, rejected = read_runs(copy)
        ids = record_runs(history, runs, "2025-01-01T00:00:00+00:00")
        data = json.loads(text)
        cells = data.get("cells") or [e for row in data.get("rows", []) for e in row["entries"]]
        stored = [c for i in ids if i is not None for c in run_cells(history, i)]
        assert rejected == [] and stored
        if "rows" not in data and not path.endswith("sparse.json") and stored:
            # Medians and samples come back as the file had them.
            by_key = {cell_key_of(c): c for c in stored}
            for cell in cells:
                timing = cell.get("time") or {}
                size = cell.get("size", {"steps": cell.get("steps")})
                kept = by_key.get(cell_key_of({**cell, "size": size}))
                if kept is not None and timing.get("samples"):
                    assert kept["time"]["samples"] == timing["samples"]
                    assert kept["time"]["median"] == timing["median"]


def cell_key_of(cell: dict) -> tuple:
    return cell_key({**cell, "size": cell["size"] if isinstance(cell["size"], dict) else {}})


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"schema": "adcompare-bench-results", "cells": [', "not valid JSON"),
        ('{"name": "left-pad"}', "not a results file adcompare wrote"),
        ("[1, 2]", "not a results file adcompare wrote"),
        ('{"schema": "adcompare-sparse/2", "cells": 3}', "corrupt"),
        ('{"schema": "adcompare-bench-results", "schema_version": 9, "cells": []}', "newer"),
    ],
)
def test_a_corrupt_or_foreign_file_is_refused_with_one_sentence(text, words, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(HistoryError, match=words) as refused:
        read_runs(path)
    assert "\n" not in str(refused.value)


def test_a_database_that_is_not_a_history_is_refused(tmp_path):
    text, other, newer = tmp_path / "text.sqlite", tmp_path / "other.sqlite", tmp_path / "new"
    text.write_text("hello")
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE songs (title TEXT)")
    record_runs(newer, [], "now")
    with sqlite3.connect(newer) as connection:
        connection.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    for path, words in ((text, "not an SQLite"), (other, "another program's"), (newer, "newer")):
        with pytest.raises(HistoryError, match=words):
            store.list_runs(path)


def _cell(mode: str, samples: list[float]) -> dict:
    return {
        "problem": "p",
        "mode": mode,
        "size": {"n": 4},
        "n": 4,
        "m": 1,
        "status": "ok",
        "time": {"median": sorted(samples)[len(samples) // 2], "samples": samples},
    }


def test_an_older_schema_is_migrated_and_keeps_its_runs(tmp_path, monkeypatch):
    path = tmp_path / "history.sqlite"
    record_runs(path, [Run("bench", [_cell("f", [1.0, 2.0])])], "now")
    added = ("ALTER TABLE runs ADD COLUMN note TEXT",)
    monkeypatch.setattr(store, "MIGRATIONS", (*store.MIGRATIONS, added))
    monkeypatch.setattr(store, "SCHEMA_VERSION", len(store.MIGRATIONS))
    assert [run["id"] for run in store.list_runs(path)] == [1]
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 2
        assert connection.execute("SELECT note FROM runs").fetchall() == [(None,)]
    assert run_cells(path, 1)[0]["time"]["samples"] == [1.0, 2.0]


def _writer(path: str, writer: int, runs: int) -> None:
    for i in range(runs):
        cell = _cell(f"mode-{writer}-{i}", [float(writer), float(i) + 1.0])
        record_runs(path, [Run("bench", [cell], {"machine": f"m{writer}"})], "now")


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "history.sqlite")
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_writer, args=(path, w, 25)) for w in range(2)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    runs = store.list_runs(path)
    assert len(runs) == 50 and {run["machine"] for run in runs} == {"m0", "m1"}
    modes_kept = {c["mode"] for run in runs for c in run_cells(path, run["id"])}
    assert modes_kept == {f"mode-{w}-{i}" for w in range(2) for i in range(25)}


def test_runs_from_two_machines_are_compared_by_ratio_to_f_not_by_time(tmp_path, capsys):
    # The second machine is twice as slow at everything: no cell got slower relative to f.
    path = tmp_path / "history.sqlite"
    fast = [_cell("f", [1.0, 1.01, 0.99]), _cell("reverse", [3.0, 3.03, 2.97])]
    slow = [_cell("f", [2.0, 2.02, 1.98]), _cell("reverse", [6.0, 6.06, 5.94])]
    machines = ({"machine": "laptop", "cpu": "A"}, {"machine": "server", "cpu": "B"})
    for cells, machine in zip((fast, slow), machines, strict=True):
        record_runs(path, [Run("bench", cells, machine)], "now")
    out = tmp_path / "compare.html"
    assert main(["history", "compare", "--history", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "different machines: never compared by time" in printed
    assert "1 cells in common" in printed and "1 same" in printed and "slower" not in printed
    # On one machine the same cells are a regression of every mode.
    record_runs(path, [Run("bench", slow, machines[0])], "now")
    assert main(["history", "compare", "1", "3", "--history", str(path), "--out", str(out)]) == 1
    assert "2 slower" in capsys.readouterr().out


def test_the_default_history_is_git_ignored_and_said_in_help(monkeypatch, capsys):
    monkeypatch.delenv("ADCOMPARE_HISTORY", raising=False)
    from adcompare.cli.history import default_history

    assert default_history().parts[:2] == ("reports", "latest")
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "reports/latest/history.sqlite" in " ".join(capsys.readouterr().out.split())
    monkeypatch.setenv("ADCOMPARE_HISTORY", "/elsewhere/h.sqlite")
    assert default_history() == Path("/elsewhere/h.sqlite")


def _slowed(prepare):
    def prepare_slowly(instance):
        work = prepare(instance)

        def slowly():
            time.sleep(DELAY)
            return work()

        return slowly

    return prepare_slowly


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two quick sweeps recorded into one history, the second with reverse mode slowed
    by a sleep in each call; then ``history compare`` of the last two."""
    folder = tmp_path_factory.mktemp("history")
    history = folder / "history.sqlite"
    patch = pytest.MonkeyPatch()
    try:
        patch.setitem(sweep.PRESETS, "quick", TINY)
        run = ["run", "--quiet", "--history", str(history), "--overwrite"]
        assert main([*run, "--out", str(folder / "before")]) == 0
        slowed = dataclasses.replace(
            modes.MODES["reverse"], prepare=_slowed(modes.MODES["reverse"].prepare)
        )
        patch.setitem(modes.MODES, "reverse", slowed)
        assert main([*run, "--out", str(folder / "after")]) == 0
    finally:
        patch.undo()
    page = folder / "compare.html"
    compare = ["history", "compare", "--history", str(history), "--threshold", THRESHOLD]
    status = main([*compare, "--out", str(page)])
    return folder, history, page, status


def test_history_compare_flags_exactly_the_slowed_cells(two_runs, capsys):
    _, history, page, status = two_runs
    assert status == 1  # a regression was flagged
    before, after = run_cells(history, 1), run_cells(history, 2)
    from adcompare.bench.history.compare import compare_cells

    found = compare_cells(before, after, threshold=float(THRESHOLD))
    slowed = {(c.mode, c.size["n"]) for c in found.flagged("slower")}
    measured = {(c["mode"], c["size"]["n"]) for c in after if c["status"] == "ok"}
    assert slowed == {(mode, n) for mode, n in measured if mode == "reverse"} != set()
    assert all(change.ratio > float(THRESHOLD) for change in found.flagged("slower"))
    text = page.read_text()
    body = text[text.index("<tbody>") :]
    assert body.index("<tr") == body.index('<tr class="slower">')  # flagged cells first


def test_the_comparison_and_the_report_render_in_a_browser(two_runs, tmp_path):
    reason = browser.missing()
    if reason:
        pytest.skip(reason)
    folder, _, page, _ = two_runs
    report = folder / "after" / "report.html"
    with browser.Browser() as chromium:
        for path in (page, report):
            chromium.open(path)
            images = chromium.run(
                "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt])"
            )
            assert images and all(done and width > 0 and alt for done, width, alt in images)
            assert chromium.run("return document.querySelectorAll('th[scope=col]').length") > 0
            chromium.screenshot(tmp_path / f"{path.stem}.png")
            sorted_by = "document.querySelector('th button').click(); "
            sorted_by += "return document.querySelector('th').getAttribute('aria-sort')"
            assert chromium.run(sorted_by) == "ascending"
            assert chromium.console() == []
        assert (tmp_path / "compare.png").stat().st_size > 0


def test_report_records_pytest_benchmark_json_and_writes_html(tmp_path):
    stats = {"median": 2e-5, "iqr": 1e-6, "min": 1.9e-5, "max": 3e-5, "rounds": 9}
    info = {"problem": "mine", "family": "many-inputs", "mode": "reverse"}
    benchmarks = [
        {"name": f"test_mine[{n}]", "stats": stats, "extra_info": {**info, "size": {"n": n}}}
        for n in (4, 8)
    ]
    for bench in benchmarks:
        bench["extra_info"].update(n=bench["extra_info"]["size"]["n"], m=1)
    data = {"machine_info": {"node": "ci"}, "benchmarks": benchmarks, "datetime": "2025-01-01"}
    (tmp_path / "bench.json").write_text(json.dumps(data))
    history = tmp_path / "history.sqlite"
    arguments = ["report", str(tmp_path / "bench.json"), "--out", str(tmp_path / "report")]
    assert main([*arguments, "--history", str(history)]) == 0
    (run,) = store.list_runs(history)
    assert (run["command"], run["machine"], run["measured"]) == ("report", "ci", 2)
    assert (tmp_path / "report" / "report.html").read_text().startswith("<!DOCTYPE html>")
