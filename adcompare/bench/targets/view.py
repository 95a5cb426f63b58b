"""The targets' table, read off measured cells: one row per target, its entries and claims.

Reads only the cells of a results file that name a target
(:func:`~adcompare.bench.targets.measure.measure_cells` writes them); measures
nothing. Each row carries its entries (as :func:`entry` reads a cell), their
values in the row's unit, and the claims checked against the target's limit.
"""

from __future__ import annotations

from collections.abc import Callable

from adcompare.bench.harness.results import Results
from adcompare.bench.report.published import published_for

__all__ = [
    "CHAIN_REPLAY_LIMIT",
    "CHAIN_TORCH_LIMIT",
    "RATIO_LIMITS",
    "WRONG",
    "entry",
    "target_rows",
]

#: The error type of a cell whose derivative disagreed with adcompare's.
WRONG = "WrongDerivative"

#: The entries a limit applies to, as the claims name them.
LIMITED = {
    "reverse": "eager reverse",
    "reverse-replay": "replayed reverse",
    "reverse-replay:grad": "replayed reverse as a plain compiled.grad call",
}

#: The targets' limits: the chain's per-op ones (× torch eager; µs), then each ratio
#: target's, ``(mode, limit)`` with the ratio ÷ plain numpy f.
CHAIN_TORCH_LIMIT = 1.0
CHAIN_REPLAY_LIMIT = 0.13
RATIO_LIMITS = {
    "b": (("reverse", 3.0), ("reverse-replay", 2.3)),
    "d": (("reverse-replay", 2.0), ("reverse", 3.0)),
    "f": (("reverse", 3.5), ("reverse-replay", 1.75)),
    "g": (("reverse-replay", 4.0),),
}


def entry(cell: dict) -> dict:
    """A target's cell as its table reads it: ``status`` ``ok`` (with ``seconds``, the
    median CPU time a call where the cell has one, else the median wall time,
    ``wall_seconds``, and the ``fastest`` and ``slowest`` samples), ``skipped``,
    ``wrong`` (the derivative disagreed: no time) or ``error``.

    >>> cell = {"mode": "reverse", "label": "reverse", "library": "adcompare", "status": "ok",
    ...         "check": None, "time": {"median": 0.5, "iqr": 0.1, "repeats": 3, "warmup": 1.0,
    ...                                 "cpu_median": 0.4, "cpu_iqr": 0.05}}
    >>> read = entry(cell)
    >>> read["seconds"], read["wall_seconds"], read["first_call"]
    (0.4, 0.5, 1.0)
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
    cpu = "cpu_median" in timing
    samples = timing.get("cpu_samples") or timing.get("samples") or [timing["median"]]
    return {
        **read,
        "status": "ok",
        "seconds": timing["cpu_median"] if cpu else timing["median"],
        "wall_seconds": timing["median"],
        "iqr": timing["cpu_iqr"] if cpu else timing["iqr"],
        "fastest": min(samples),
        "slowest": max(samples),
        "repeats": timing["repeats"],
        "calls": timing.get("loops"),
        "warm_up_calls": timing.get("warm_up_calls"),
    }


def _seconds(entries: list[dict], mode: str) -> float | None:
    for read in entries:
        if read["mode"] == mode and read["status"] == "ok":
            return read["seconds"]
    return None


def _with_values(
    entries: list[dict],
    scale: Callable[[float], float],
    wall_scale: Callable[[float], float] | None = None,
) -> list[dict]:
    """Each measured entry with its ``value`` (CPU seconds scaled) and ``wall_value``."""
    wall_scale = wall_scale or scale
    return [
        {**read, "value": scale(read["seconds"]), "wall_value": wall_scale(read["wall_seconds"])}
        if read["status"] == "ok"
        else read
        for read in entries
    ]


def _claim(text: str, met: bool | None) -> dict:
    """A claim checked against a limit; ``met`` ``None``: not measured in this run."""
    return {"claim": text, "met": met}


def _value(entries: list[dict], mode: str) -> float | None:
    return next((e["value"] for e in entries if e["mode"] == mode and "value" in e), None)


def _limit_claim(entries: list[dict], mode: str, limit: float, unit: str = "") -> dict:
    name = LIMITED[mode]
    value = _value(entries, mode)
    if value is None:
        return _claim(f"{name}, limit {limit:g}{unit}", None)
    return _claim(f"{name} {value:.3g}{unit}, limit {limit:g}{unit}", value <= limit)


def _chain_row(cells: list[dict]) -> dict:
    ops = cells[0]["size"]["ops"]
    entries = _with_values([entry(c) for c in cells], lambda s: 1e6 * s / ops)
    eager, torch = _value(entries, "reverse"), _value(entries, "torch:reverse")
    limit = f"limit {CHAIN_TORCH_LIMIT:.1f} × torch eager"
    if eager is None or torch is None:
        torch_claim = _claim(
            f"eager reverse per op ÷ torch eager's (no torch figure), {limit}", None
        )
    else:
        torch_claim = _claim(
            f"eager reverse {eager:.3g} µs = {eager / torch:.2f} × torch eager "
            f"{torch:.3g} µs, {limit}",
            eager / torch <= CHAIN_TORCH_LIMIT,
        )
    return {
        "id": "a",
        "what": f"reverse mode, {ops}-op elementwise chain on size-1 arrays, "
        "forward + backward time per op",
        "unit": "µs/op",
        "ops": ops,
        "target": f"eager reverse ≤ {CHAIN_TORCH_LIMIT:.1f} × torch eager; replayed ≤ "
        f"{CHAIN_REPLAY_LIMIT:g} µs/op (JAX jit's figure), as measured here and as a plain "
        "compiled.grad call",
        "entries": entries,
        "claims": [
            torch_claim,
            *(
                _limit_claim(entries, mode, CHAIN_REPLAY_LIMIT, " µs")
                for mode in ("reverse-replay", "reverse-replay:grad")
            ),
        ],
    }


def _ratio_row(row_id: str, what: str, cells: list[dict]) -> dict:
    """A target measured as time ÷ plain numpy f's time, with its limits (:data:`RATIO_LIMITS`)."""
    baseline = next(entry(c) for c in cells if c["mode"] == "f")
    entries = [entry(c) for c in cells if c["mode"] != "f"]
    if baseline["status"] == "ok" and baseline["seconds"] > 0 and baseline["wall_seconds"] > 0:
        entries = _with_values(
            entries, lambda s: s / baseline["seconds"], lambda s: s / baseline["wall_seconds"]
        )
    limits = RATIO_LIMITS[row_id]
    return {
        "id": row_id,
        "what": what,
        "unit": "× numpy f",
        "target": "; ".join(f"{LIMITED[mode]} ≤ {limit:g}" for mode, limit in limits),
        "baseline": baseline,
        "entries": entries,
        "claims": [_limit_claim(entries, mode, limit) for mode, limit in limits],
    }


def _rosenbrock_row(cells: list[dict]) -> dict:
    what = f"Rosenbrock gradient at n = {cells[0]['n']:,}, time ÷ numpy f time"
    return _ratio_row("b", what, cells)


def _mlp_row(cells: list[dict]) -> dict:
    size = cells[0]["size"]
    what = (
        f"MLP loss (batch {size['batch']}, {size['inputs']}-{size['hidden']}-{size['classes']}, "
        f"tanh, softmax cross-entropy) gradient over all {cells[0]['n']:,} weights ÷ numpy "
        "forward time"
    )
    return _ratio_row("d", what, cells)


def _gmm_row(cells: list[dict]) -> dict:
    problem = cells[0]["problem"]
    what = (
        f"GMM gradient ({problem}: d = 2, k = 5, n = 1000, {cells[0]['n']} parameters) ÷ the "
        "objective in plain numpy"
    )
    row = _ratio_row("f", what, cells)
    row["published"] = [
        {"tool": p.tool, "ratio": p.ratio, "source": p.source} for p in published_for(problem)
    ]
    return row


def _lstm_row(cells: list[dict]) -> dict:
    what = (
        f"LSTM loss gradient ({cells[0]['problem']}: 2 layers, 14 bits, "
        f"{cells[0]['size']['characters']} characters, {cells[0]['n']} parameters) ÷ the "
        "objective in plain numpy"
    )
    return _ratio_row("g", what, cells)


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


_ROWS = {
    "a": _chain_row,
    "b": _rosenbrock_row,
    "c": _forward_row,
    "d": _mlp_row,
    "f": _gmm_row,
    "g": _lstm_row,
}


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
