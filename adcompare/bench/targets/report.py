"""The targets' table as Markdown, one line per target with its measured columns, and JSON.

Only reads what :func:`~adcompare.bench.targets.view.target_rows` read off the cells.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from adcompare.bench.harness.env import allocator_text, describe
from adcompare.bench.harness.results import now
from adcompare.bench.peers import LIBRARIES
from adcompare.bench.report.html import write_html
from adcompare.durations import format_duration

__all__ = ["SCHEMA", "document", "render_markdown", "write_targets"]

SCHEMA = "adcompare-targets"


def _value_text(entry: dict, unit: str) -> str:
    if entry["status"] == "ok":
        return f"{entry['label']} {entry['value']:.3g}"
    if entry["status"] == "wrong":
        return f"{entry['label']} WRONG derivative (error {entry['check']['error']:.1e})"
    if entry["status"] == "error":
        return f"{entry['label']} failed"
    return ""


def _cell(entries: list[dict], unit: str) -> str:
    texts = [_value_text(entry, unit) for entry in entries]
    return "; ".join(text for text in texts if text) or "–"


def _met(row: dict) -> str:
    if not row["claims"]:
        return "not measured"
    verdict = {True: "yes", False: "no", None: "not measured"}
    return "; ".join(f"{verdict[c['met']]}: {c['claim']}" for c in row["claims"])


def _details(row: dict) -> list[str]:
    lines = []
    baseline = row.get("baseline")
    for entry in ([baseline] if baseline else []) + row["entries"]:
        if entry["status"] == "skipped":
            continue
        check = entry.get("check")
        error = f"{check['error']:.1e}" if check else "–"
        if entry["status"] == "ok":
            cpu = format_duration(entry["seconds"])
            spread = f" ±{50 * entry['iqr'] / entry['seconds']:.0f}%" if entry["seconds"] else ""
            wall = format_duration(entry["wall_seconds"]) if "wall_seconds" in entry else "–"
            samples = f"{entry.get('repeats', '?')} × {entry.get('calls') or '?'}"
            value = f"{entry['value']:.3g}" if "value" in entry else "(baseline)"
            if "wall_value" in entry:
                value += f" (wall {entry['wall_value']:.3g})"
        else:
            cpu, spread, wall, samples = "–", "", "–", "–"
            value = entry.get("error", entry["status"])
        first = format_duration(entry["first_call"]) if entry.get("first_call") else "–"
        lines.append(
            f"| {row['id']} | {entry['label']} | {cpu}{spread} | {wall} | {samples} | {first} | "
            f"{value} | {error} |"
        )
    return lines


def _method(result: dict) -> str:
    """How the times were taken, from the run's recorded settings."""
    settings = result.get("settings") or {}
    if "rounds" not in settings:  # a table read off a results file of an older run
        return (
            "Times are medians with one BLAS and one torch thread. "
            f"Allocator: {allocator_text(result.get('allocator'))}."
        )
    return (
        "How the times were taken: each target's entries are timed in interleaved rounds, "
        f"up to {settings['rounds']} (fewer once a target's rounds pass "
        f"{settings['budget']:g} s): a round takes one sample of every entry in turn, a "
        f"sample being enough calls for at least {1e3 * settings['sample_time']:g} ms of CPU "
        "time, with the garbage collector off. A ratio divides the medians of the CPU-time "
        f"samples ({settings.get('clock', 'time.process_time')}: the whole process, so a "
        "peer's worker threads count) of the same rounds; the wall-time ratio is shown beside "
        "it. Replayed and jitted entries are called "
        f"{settings['warm_up']} times before they are timed (CPython specialises a function's "
        "bytecode after its eighth call; a replay's first calls run about twice as slowly), "
        "the others at least twice. Every entry's derivative was checked against adcompare's "
        "before it was timed (check error: max |a − b| ÷ max(1, max |b|)). One BLAS and one "
        "torch thread; the first call includes recording a replay and JAX's compilation. "
        f"Allocator: {allocator_text(result.get('allocator'))}."
    )


def _signed(value: float) -> str:
    return f"{value:+.2f}".replace("-", "−")


def _replay_note(row: dict) -> list[str]:
    """Why the chain's replayed figures differ, from the same rounds' medians."""
    measured = {e["mode"]: e for e in row["entries"] if e["status"] == "ok"}
    per_call = {mode: e["seconds"] * 1e6 for mode, e in measured.items()}
    names = ("reverse-replay", "reverse-replay:grad", "reverse-replay:value_and_grad")
    program = per_call.get("reverse-replay:program")
    if program is None or any(name not in per_call for name in names):
        return []
    harness, grad, value_and_grad = (per_call[name] for name in names)
    ops, plain = row["ops"], measured["reverse-replay:grad"]
    fastest, slowest = (1e6 * plain[end] / ops for end in ("fastest", "slowest"))
    return [
        "",
        f"Why the chain's replayed figures differ. One call of the {ops}-op chain's replayed "
        "gradient, CPU medians of the same rounds: the recorded program alone "
        f"(`compiled.program.run(x)`) {program:.3g} µs; `compiled.value_and_grad(x)` "
        f"{value_and_grad:.3g} µs; a plain `compiled.grad(x)` call {grad:.3g} µs "
        f"({grad / ops:.3g} µs/op); the harness's `reverse-replay` entry, the replayed figure "
        f"above, {harness:.3g} µs ({harness / ops:.3g} µs/op). "
        f"`value_and_grad` − program = {_signed(value_and_grad - program)} µs a call measures "
        "what the compiled function does around each replay: it checks and converts the "
        "arguments, looks the program up by their shapes and dtypes, and compares the arrays "
        "f closes over with their recorded contents. `grad` − `value_and_grad` = "
        f"{_signed(grad - value_and_grad)} µs measures one more call and an index; the harness "
        f"entry − `grad` = {_signed(harness - grad)} µs measures the harness's wrapper (its "
        "first call records, the others replay). Differences within the spread of the samples "
        "are noise, "
        "and the spread over time is wide: the plain `compiled.grad(x)` call's samples ranged "
        f"from {fastest:.3g} to {slowest:.3g} µs/op over these rounds. Figures taken at "
        "different moments, as a separate plain loop and this command's earlier "
        "one-entry-at-a-time timing were, can differ by that much; so only figures of the "
        "same rounds are compared here.",
    ]


def _published_note(row: dict) -> list[str]:
    if not row.get("published"):
        return []
    ratios = ", ".join(f"{p['tool']} {p['ratio']:g}" for p in row["published"])
    sources = ", ".join(sorted({p["source"] for p in row["published"]}))
    return [
        "",
        f"Target {row['id']} as published ({sources}), each tool's gradient ÷ its own fastest "
        f"objective: {ratios}. The peers run here take problems written against an array "
        "namespace; this objective is written against adcompare's op set, so they are not "
        "measured on it.",
    ]


def render_markdown(result: dict) -> str:
    """The targets as Markdown: the summary table, how it was measured, then every
    entry's numbers.

    >>> row = {"id": "c", "what": "w", "unit": "ms", "target": "t", "claims": [],
    ...        "entries": [{"mode": "forward", "label": "adcompare", "library": "adcompare",
    ...                     "status": "ok", "seconds": 0.002, "iqr": 0.0, "value": 2.0,
    ...                     "first_call": 0.003, "check": {"error": 0.0}}]}
    >>> print(render_markdown({"rows": [row]}).splitlines()[4])
    | c | w | ms | adcompare 2 | – | t | not measured |
    """
    lines = [
        "# Performance targets, measured side by side in one run",
        "",
        "| | what | unit | adcompare | peers and hand-written numpy measured here | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        ours = [e for e in row["entries"] if e["library"] == "adcompare"]
        others = [e for e in row["entries"] if e["library"] != "adcompare"]
        lines.append(
            f"| {row['id']} | {row['what']} | {row['unit']} | {_cell(ours, row['unit'])} | "
            f"{_cell(others, row['unit'])} | {row['target']} | {_met(row)} |"
        )
    skipped = sorted(
        {e["reason"] for row in result["rows"] for e in row["entries"] if e["status"] == "skipped"}
    )
    lines += ["", _method(result)]
    for row in result["rows"]:
        lines += _replay_note(row) + _published_note(row)
    lines += [
        "",
        "| | entry | CPU median | wall median | samples × calls | first call | value | "
        "check error |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines += _details(row)
    if skipped:
        lines += ["", "Not measured:", "", *(f"- {reason}" for reason in skipped)]
    return "\n".join(lines) + "\n"


def document(result: dict) -> dict:
    """The JSON document: the result with its schema, time and machine.

    >>> sorted(document({"rows": []}))
    ['created', 'environment', 'peer_versions', 'rows', 'schema', 'schema_version']
    """
    versions = {}
    for library in LIBRARIES:
        try:
            versions[library] = metadata.version(library)
        except metadata.PackageNotFoundError:
            versions[library] = None
    return {
        "schema": SCHEMA,
        "schema_version": 1,
        "created": now(),
        "environment": describe(),
        "peer_versions": versions,
        **result,
    }


def write_targets(result: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``targets.md`` and ``targets.json`` into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    markdown, data = out_dir / "targets.md", out_dir / "targets.json"
    markdown.write_text(render_markdown(result), encoding="utf-8")
    write_html(markdown)
    data.write_text(json.dumps(document(result), indent=1) + "\n", encoding="utf-8")
    return markdown, data
