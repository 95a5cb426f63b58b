"""The targets' table: Markdown like the issue's, with measured columns, and JSON.

Only reads what :func:`~adcompare.bench.targets.measure.measure_targets` returned.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from adcompare.bench.harness.env import describe
from adcompare.bench.harness.results import now
from adcompare.bench.peers import LIBRARIES
from adcompare.bench.report.text import format_time

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
    return "; ".join(f"{'yes' if c['met'] else 'no'}: {c['claim']}" for c in row["claims"])


def _details(row: dict) -> list[str]:
    lines = []
    baseline = row.get("baseline")
    for entry in ([baseline] if baseline else []) + row["entries"]:
        if entry["status"] == "skipped":
            continue
        check = entry.get("check")
        error = f"{check['error']:.1e}" if check else "–"
        if entry["status"] == "ok":
            median = format_time(entry["seconds"])
            spread = f" ±{50 * entry['iqr'] / entry['seconds']:.0f}%" if entry["seconds"] else ""
            value = f"{entry['value']:.3g}" if "value" in entry else "(baseline)"
        else:
            median, spread, value = "–", "", entry.get("error", entry["status"])
        first = format_time(entry["first_call"]) if "first_call" in entry else "–"
        lines.append(
            f"| {row['id']} | {entry['label']} | {median}{spread} | {first} | {value} | {error} |"
        )
    return lines


def render_markdown(result: dict) -> str:
    """The targets as Markdown: the summary table, then every entry's numbers.

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
    lines += [
        "",
        "Every entry's derivative was checked against adcompare's before it was timed "
        "(check error: max |a − b| ÷ max(1, max |b|)); times are medians with one BLAS and "
        "one torch thread; the first call includes JAX's compilation when jitted.",
        "",
        "| | entry | median | first call | value | check error |",
        "|---|---|---:|---:|---:|---:|",
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
    data.write_text(json.dumps(document(result), indent=1) + "\n", encoding="utf-8")
    return markdown, data
