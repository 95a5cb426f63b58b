"""Run an eval's own workloads through the protocol server, one server process per workload.

Each workload is sent, exactly as GradBench's eval would send it, to a fresh
``python -m adcompare.gradbench`` process: ``start``, ``define``, then an
``evaluate`` per function (the primal and the derivative; a nested eval's
four variants). The mean of each response's ``evaluate`` timings is the
figure GradBench scores. Peak memory is the server process's maximum
resident set size (its ``VmHWM`` in Linux's ``/proc``, read before it ends:
what the workload needed, Python, numpy and the parsed JSON input included;
tracemalloc would slow numpy-heavy code and miss memory numpy allocates
outside Python); ``baseline_bytes`` is the same peak read once the eval is
defined, before any input arrives, so the difference is the workload's own. A
response that takes longer than the timeout stops that workload (its
process is killed) and the run goes on with the next.

Results are kept in one JSON file, rewritten after every workload, so an
interrupted run keeps what it measured.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from adcompare.gradbench.evals import EVAL_NAMES, Eval, Workload, get_eval

__all__ = [
    "RESULTS_VERSION",
    "load_results",
    "measure_workload",
    "merge",
    "relative_spread",
    "select_workloads",
]

#: The version of the results file's layout.
RESULTS_VERSION = 1
#: How many workloads ``small`` picks: the first ones, which the recorded data covers.
SMALL = 2


def select_workloads(ev: Eval, which: Sequence[str] = ("small",)) -> list[tuple[int, Workload]]:
    """The workloads ``which`` names, with their places in the eval's list: ``small`` (the
    first two), ``all``, or descriptions.

    >>> [(i, w.description) for i, w in select_workloads(get_eval("hello"), ["2.0", "4.0"])]
    [(2, '2.0'), (3, '4.0')]
    >>> select_workloads(get_eval("hello"), ["3.0"])
    Traceback (most recent call last):
    ...
    ValueError: the hello eval has no workload 3.0; its workloads are 1.0, 2.0, 4.0, 8.0, ...
    """
    workloads = list(enumerate(ev.workloads()))
    if list(which) == ["all"]:
        return workloads
    if list(which) == ["small"]:
        return workloads[:SMALL]
    by_name = {w.description: (i, w) for i, w in reversed(workloads)}
    unknown = [name for name in which if name not in by_name]
    if unknown:
        names = list(dict.fromkeys(w.description for _, w in workloads))
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        raise ValueError(
            f"the {ev.name} eval has no workload {unknown[0]}; its workloads are {shown}"
        )
    return [by_name[name] for name in which]


def _functions(ev: Eval) -> list[str]:
    """The functions a workload is measured by: primal then derivative, or every variant."""
    return [ev.primal, ev.derivative] if ev.primal else list(ev.functions)


#: The server's environment while measuring: one BLAS thread (its small products run
#: many times slower with two on a busy machine), and glibc's allocator thresholds fixed
#: (its adaptive ones decide whether numpy's temporaries hit fresh pages), as the
#: harness's sweep pins them.
MEASURING = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(2**30),
}


class _Session:
    """One server process, spoken to line by line, each response awaited with a timeout."""

    def __init__(self, mode: str):
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "adcompare.gradbench", "--mode", mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env={**os.environ, **MEASURING},
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, message: dict, timeout: float, encoded_input: str = "") -> dict:
        """Send ``message`` (given the next id; ``encoded_input``, the input already as JSON,
        added as ``input``) and return the response without its output; ``TimeoutError``
        when none comes within ``timeout`` seconds, ``RuntimeError`` when the server died."""
        text = json.dumps({"id": self.next_id, **message})
        if encoded_input:
            text = f'{text[:-1]}, "input": {encoded_input}}}'
        self.next_id += 1
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no response within {timeout:g} s") from None
        if line is None:
            self.stderr.seek(0)
            said = self.stderr.read().decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"the server stopped ({said[-1] if said else 'no message'})")
        return _without_output(line)

    def peak_so_far(self) -> int | None:
        """The process's peak resident set size until now, in bytes (``None`` off Linux)."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        line = next((line for line in status.splitlines() if line.startswith("VmHWM:")), None)
        return None if line is None else int(line.split()[1]) * 1024

    def close(self, kill: bool = False) -> int:
        """End the process; its peak resident set size in bytes.

        Read from ``/proc`` while the process lives: the ``ru_maxrss`` that ``wait4``
        reports counts the runner's own size at the fork, which grows with the inputs
        it built (and would make every later workload look as large); ``wait4``'s is
        the fallback where ``/proc`` is not."""
        peak = self.peak_so_far()
        if kill:
            self.process.kill()
        else:
            self.process.stdin.close()
        _, _, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = 0
        self.stderr.close()
        return peak if peak is not None else usage.ru_maxrss * 1024  # kB on Linux


def _without_output(line: str) -> dict:
    """A response line read without its output, which may be hundreds of MB of JSON: the
    server writes ``id``, ``success``, ``output``, then ``timings``.

    >>> _without_output('{"id": 2, "success": true, "output": [[1.0]], "timings": []}')
    {'id': 2, 'success': True, 'timings': []}
    """
    start, end = line.find(', "output": '), line.rfind(', "timings": ')
    if start < 0 or end < 0:
        return json.loads(line)
    response = json.loads(line[:start] + "}")
    response["timings"] = json.loads(line[end + len(', "timings": ') : line.rstrip().rindex("}")])
    return response


def relative_spread(times: Sequence[float]) -> float | None:
    """How far one function's calls spread: their interquartile range ÷ their median
    (None for fewer than four calls, too few for quartiles).

    >>> relative_spread([10, 11, 9, 10, 30])  # a slow first call moves it little
    0.1
    >>> relative_spread([1.0, 2.0]) is None
    True
    """
    if len(times) < 4:
        return None
    low, median, high = np.percentile(times, [25, 50, 75])
    return float((high - low) / median)


def measure_workload(
    eval_name: str, workload: Workload, mode: str, timeout: float, index: int = 0
) -> dict:
    """Measure one workload (the eval's ``index``-th) in a fresh server; a record for the
    results file.

    ``status`` is ``ok``, ``timeout`` or ``error`` (with ``error``); ``seconds`` maps
    each function measured to its mean time per call.
    """
    ev = get_eval(eval_name)
    record = {"eval": eval_name, "workload": workload.description, "index": index}
    record.update(mode=mode, seconds={})
    started = time.perf_counter()
    encoded_input = json.dumps(workload.make())
    session = _Session(mode)
    step = "start"
    try:
        session.ask({"kind": "start", "eval": eval_name}, timeout)
        step = "define"
        session.ask({"kind": "define", "module": eval_name}, timeout)
        record["baseline_bytes"] = session.peak_so_far()
        for step in _functions(ev):
            message = {"kind": "evaluate", "module": eval_name, "function": step}
            response = session.ask(message, timeout, encoded_input)
            if not response.get("success"):
                raise RuntimeError(response.get("error"))
            times = [t["nanoseconds"] for t in response["timings"] if t["name"] == "evaluate"]
            record["seconds"][step] = sum(times) / len(times) / 1e9
            record.setdefault("runs", {})[step] = len(times)
            record.setdefault("spread", {})[step] = relative_spread(times)
        record["status"] = "ok"
    except (TimeoutError, RuntimeError) as error:
        status = "timeout" if isinstance(error, TimeoutError) else "error"
        record.update(status=status, error=f"{step}: {error}")
    finally:
        record["peak_bytes"] = session.close(kill=record.get("status") != "ok")
    record["wall_seconds"] = round(time.perf_counter() - started, 3)
    if ev.primal and record["status"] == "ok":
        record["ratio"] = record["seconds"][ev.derivative] / record["seconds"][ev.primal]
    return record


def load_results(path: Path) -> list[dict]:
    """The records of a results file (none when it does not exist yet)."""
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    if data.get("version") != RESULTS_VERSION:
        raise ValueError(
            f"{path} is a results file of version {data.get('version')}, not {RESULTS_VERSION}; "
            "move it away and run again"
        )
    return data["records"]


def _order(name: str) -> int:
    return EVAL_NAMES.index(name) if name in EVAL_NAMES else len(EVAL_NAMES)


def _key(record: dict) -> tuple:
    return (
        record["eval"],
        record.get("index"),
        record["workload"],
        record["mode"],
        record.get("repeat", 0),
    )


def merge(path: Path, record: dict) -> list[dict]:
    """Write ``record`` into the results file at ``path`` (replacing the earlier record of
    the same eval, workload, mode and run, ``repeat``) and return every record, in the
    eval's order.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.json"
    >>> _ = merge(path, {"eval": "hello", "workload": "1.0", "mode": "reverse", "status": "ok"})
    >>> len(merge(path, {"eval": "hello", "workload": "1.0", "mode": "reverse", "status": "x"}))
    1
    """
    key = _key(record)
    records = [r for r in load_results(path) if _key(r) != key]
    records.append(record)
    records.sort(
        key=lambda r: (_order(r["eval"]), r["mode"], r.get("index", 0), r.get("repeat", 0))
    )
    data = {"version": RESULTS_VERSION, "records": records}
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(data, indent=1) + "\n")
    partial.replace(path)
    return records
