"""The targets' table, read off measured cells: one row per target, its entries and claims.

Reads only the cells of a results file that name a target
(:func:`~adcompare.bench.targets.measure.measure_cells` writes them); measures
nothing. Each row carries its entries (as :func:`entry` reads a cell), their
values in the row's unit, and the claims checked against the target's limit.
"""

from __future__ import annotations

from collections.abc import Callable

from adcompare.bench.harness.results import Results

__all__ = ["WRONG", "entry", "target_rows"]

#: The error type of a cell whose derivative disagreed with adcompare's.
WRONG = "WrongDerivative"


def entry(cell: dict) -> dict:
    """A target's cell as its table reads it: ``status`` ``ok`` (with ``seconds``,
    the median), ``skipped``, ``wrong`` (the derivative disagreed: no time) or
    ``error``.

    >>> cell = {"mode": "reverse", "label": "reverse", "library": "adcompare", "status": "ok",
    ...         "check": None, "time": {"median": 0.5, "iqr": 0.1, "repeats": 3, "warmup": 1.0}}
    >>> entry(cell)["seconds"], entry(cell)["first_call"]
    (0.5, 1.0)
    """
    read = {"mode": cell["mode"], "label": cell["label"], "library": cell["library"]}
    if cell["status"] == "skipped":
        return {**read, "status": "skipped", "reason": cell["reason"]}
    timing = cell.get("time") or {}
    read["first_call"] = timing.get("warmup", cell.get("first_call"))
    read["check"] = cell.get("check")
    if cell["status"] == "error":
        error = cell["error"]
        if error["type"] == WRONG:
            return {**read, "status": "wrong"}
        return {
            **read,
            "status": "error",
            "error": f"{error['type']}: {error['message']}",
            "traceback": error.get("traceback", ""),
        }
    return {
        **read,
        "status": "ok",
        "seconds": timing["median"],
        "iqr": timing["iqr"],
        "repeats": timing["repeats"],
    }


def _seconds(entries: list[dict], mode: str) -> float | None:
    for read in entries:
        if read["mode"] == mode and read["status"] == "ok":
            return read["seconds"]
    return None


def _with_values(entries: list[dict], scale: Callable[[float], float]) -> list[dict]:
    return [
        {**read, "value": scale(read["seconds"])} if read["status"] == "ok" else read
        for read in entries
    ]


def _claim(text: str, met: bool | None) -> dict:
    return {"claim": text, "met": met}


def _chain_row(cells: list[dict]) -> dict:
    ops = cells[0]["size"]["ops"]
    entries = _with_values([entry(c) for c in cells], lambda s: 1e6 * s / ops)
    per_op = {e["mode"]: e["value"] for e in entries if "value" in e}
    claims = []
    if "reverse" in per_op and "torch:reverse" in per_op:
        limit = per_op["torch:reverse"] / 2
        claims.append(
            _claim(
                f"adcompare reverse {per_op['reverse']:.3g} µs, "
                f"limit {limit:.3g} µs (½ torch eager)",
                per_op["reverse"] <= limit,
            )
        )
    replayed = per_op.get("reverse-replay")
    if replayed is not None:
        claims.append(_claim(f"replayed tape {replayed:.3g} µs, limit 2 µs", replayed <= 2.0))
    return {
        "id": "a",
        "what": f"reverse mode, {ops}-op elementwise chain on size-1 arrays, "
        "forward + backward time per op",
        "unit": "µs/op",
        "target": "at most half of torch eager's per-op time (replayed tape ≤ 2 µs)",
        "entries": entries,
        "claims": claims,
    }


def _ratio_row(row_id: str, what: str, cells: list[dict], limit: float) -> dict:
    """A target measured as time ÷ plain numpy f's time, adcompare's reverse ≤ ``limit``."""
    baseline = next(entry(c) for c in cells if c["mode"] == "f")
    entries = [entry(c) for c in cells if c["mode"] != "f"]
    claims = []
    if baseline["status"] == "ok":
        entries = _with_values(entries, lambda s: s / baseline["seconds"])
        ratio = next((e["value"] for e in entries if e["mode"] == "reverse" and "value" in e), None)
        if ratio is not None:
            claims.append(_claim(f"adcompare reverse {ratio:.3g}, limit {limit:g}", ratio <= limit))
    return {
        "id": row_id,
        "what": what,
        "unit": "× numpy f",
        "target": f"≤ {limit:g}",
        "baseline": baseline,
        "entries": entries,
        "claims": claims,
    }


def _rosenbrock_row(cells: list[dict]) -> dict:
    what = f"Rosenbrock gradient at n = {cells[0]['n']:,}, time ÷ numpy f time"
    return _ratio_row("b", what, cells, 2.5)


def _mlp_row(cells: list[dict]) -> dict:
    size = cells[0]["size"]
    what = (
        f"MLP loss (batch {size['batch']}, {size['inputs']}-{size['hidden']}-{size['classes']}, "
        f"tanh, softmax cross-entropy) gradient over all {cells[0]['n']:,} weights ÷ numpy "
        "forward time"
    )
    return _ratio_row("d", what, cells, 3.0)


def _forward_row(cells: list[dict]) -> dict:
    entries = _with_values([entry(c) for c in cells], lambda s: 1e3 * s)
    ours, torch = _seconds(entries, "forward"), _seconds(entries, "torch:jacfwd")
    claims = []
    if ours is not None and torch is not None:
        claims.append(
            _claim(
                f"adcompare jacfwd {1e3 * ours:.3g} ms, torch.func.jacfwd {1e3 * torch:.3g} ms",
                ours < torch,
            )
        )
    return {
        "id": "c",
        "what": f"Rosenbrock full gradient by forward mode at n = {cells[0]['n']:,} (lanes)",
        "unit": "ms",
        "target": "faster than torch.func.jacfwd",
        "entries": entries,
        "claims": claims,
    }


def _jacobian_row(row_id: str, cells: list[dict]) -> dict:
    n, m = cells[0]["n"], cells[0]["m"]
    entries = _with_values([entry(c) for c in cells], lambda s: 1e3 * s)
    auto, forward, reverse = (_seconds(entries, mode) for mode in ("auto", "forward", "reverse"))
    row = {
        "id": row_id,
        "what": f'jacobian(mode="auto") on tanh_map at (n, m) = ({n}, {m})',
        "unit": "ms",
        "target": "auto within 10 % of the faster of forward and reverse",
        "entries": entries,
        "claims": [],
    }
    if None not in (auto, forward, reverse):
        row["ratio"] = auto / min(forward, reverse)
        row["claims"].append(
            _claim(f"auto ÷ min(fwd, rev) = {row['ratio']:.3f}, limit 1.10", row["ratio"] <= 1.10)
        )
    return row


_ROWS = {"a": _chain_row, "b": _rosenbrock_row, "c": _forward_row, "d": _mlp_row}


def target_rows(results: Results) -> dict:
    """The table of the targets measured into ``results``, in the order they were
    measured: ``{"sizes", "settings", "allocator", "rows"}``, JSON-ready. The sizes
    and settings are the last targets run's; the allocator is as its cells' machine
    recorded it.

    >>> target_rows(Results())
    {'sizes': None, 'settings': None, 'allocator': None, 'rows': []}
    """
    by_target: dict[str, list[dict]] = {}
    for cell in results.cells:
        if cell.get("target"):
            by_target.setdefault(cell["target"], []).append(cell)
    runs = [run["config"]["targets"] for run in results.data["runs"] if "targets" in run["config"]]
    run = runs[-1] if runs else {}
    envs = [cell.get("env") for cells in by_target.values() for cell in cells]
    machine = results.data["environments"].get(envs[-1], {}) if envs else {}
    return {
        "sizes": run.get("sizes"),
        "settings": run.get("settings"),
        "allocator": machine.get("allocator"),
        "rows": [
            _ROWS[target](cells) if target in _ROWS else _jacobian_row(target, cells)
            for target, cells in by_target.items()
        ],
    }
