"""Sweeps on a Dask cluster: each size of a problem is one task, measured on one worker.

The unit of work is a size of a problem with all its modes, measured as the
serial sweep measures it (:func:`~adcompare.bench.harness.sweep.measure_size`:
the modes' timed repeats in turn, so their ratios to f are taken under one
load, on one machine). A problem's sizes run in order, each sent once the one
before has ended, with the cells measured before (the budget extrapolates
from them), and to the machine that measured the one before while it has a
worker, so a problem's absolute times come from one machine. Different
problems run at once on different workers.

Each task records its worker's machine (:func:`~adcompare.bench.harness.env.describe`:
host, CPU model, cores, allocator pinning, BLAS threads) as the cells' ``env``,
and its worker and the wall-clock span it measured in (``worker``). The
client writes each task's cells into the one results file as the task ends.

Workers on one machine share its cores: a task holds one of the machine's
``per_host`` measuring slots (a ``flock`` on a file in the temporary folder,
which the kernel drops when a worker dies; one by default) while it measures.
A cell measured while another task measured on the same machine is flagged
(:func:`host_flags`), and the report leaves flagged times out of its fits.

A worker killed mid-task loses only that task: the scheduler runs it again on
another worker, and the client writes its cells once. Ctrl-C on the client
cancels what is running; the file keeps every cell written, and ``--resume``
continues on any cluster. Dask's ``distributed`` is an optional extra
(``pip install -e ".[cluster]"``): this module imports it only when asked to run
on a cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from adcompare.bench.harness.progress import Progress
from adcompare.bench.harness.results import Results, cell_key
from adcompare.bench.harness.sweep import SweepConfig, _groups, measure_size, measuring, plan
from adcompare.bench.problems import REGISTRY, Problem, ProblemError, get_problem, size_text

try:
    import fcntl
except ImportError:  # not POSIX: workers of one machine are not kept apart, only flagged
    fcntl = None

__all__ = [
    "INSTALL",
    "ClusterError",
    "ClusterSpec",
    "connect",
    "host_flags",
    "host_slot",
    "run_on_cluster",
]

#: What to do without Dask: one sentence.
INSTALL = (
    "measuring on a Dask cluster (--workers, --scheduler) needs Dask's distributed, which is "
    'not installed: pip install -e ".[cluster]"'
)


class ClusterError(ValueError):
    """The cluster cannot be used: Dask missing, a scheduler out of reach, a task that failed."""


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ClusterError(INSTALL) from None
    return distributed


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    """Where to measure: a new local cluster of ``workers`` single-threaded processes, or
    the running one whose scheduler is at ``scheduler``.

    >>> ClusterSpec(workers=0)
    Traceback (most recent call last):
    ...
    adcompare.bench.harness.cluster.ClusterError: --workers must be at least 1, not 0
    """

    workers: int | None = None
    scheduler: str | None = None

    def __post_init__(self):
        if (self.workers is None) == (self.scheduler is None):
            raise ClusterError("give either --workers N or --scheduler tcp://HOST:PORT, not both")
        if self.workers is not None and self.workers < 1:
            raise ClusterError(f"--workers must be at least 1, not {self.workers}")
        _distributed()


@contextlib.contextmanager
def connect(spec: ClusterSpec | None) -> Iterator:
    """A ``distributed.Client`` for ``spec`` inside the block (``None`` for no spec).

    A local cluster listens on 127.0.0.1 only (its status page on a free port),
    sets no memory limit on its workers (a cell may need as much memory as it
    does in a serial run) and logs only errors. Its workers run without Dask's
    sampling profiler, whose thread takes the interpreter every 10 ms and
    would make the measuring thread wait (start a remote cluster's workers
    with ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False``).
    """
    if spec is None:
        yield None
        return
    distributed = _distributed()
    if spec.scheduler is not None:
        try:
            client = distributed.Client(spec.scheduler, timeout="10s")
        except (OSError, TimeoutError) as error:
            raise ClusterError(
                f"cannot reach the Dask scheduler at {spec.scheduler} ({error}); start one "
                "with 'dask scheduler' and workers with 'dask worker ADDRESS --nthreads 1', "
                "or check the address"
            ) from None
        with client:
            yield client
        return
    import dask

    with dask.config.set({"distributed.worker.profile.enabled": False}), _ignoring_ctrl_c():
        cluster = distributed.LocalCluster(
            n_workers=spec.workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            memory_limit=0,
            silence_logs=logging.ERROR,
        )
    with cluster, distributed.Client(cluster) as client:
        yield client


@contextlib.contextmanager
def _ignoring_ctrl_c() -> Iterator[None]:
    """Processes started inside the block ignore SIGINT (an ignored signal stays ignored
    across exec): Ctrl-C at a terminal reaches its whole process group, and the client
    alone should stop, cancel the tasks and close the cluster."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def host_slot(slots: int, folder: str | None = None) -> Iterator[None]:
    """Hold one of this machine's ``slots`` measuring slots inside the block (0: no limit).

    A slot is an exclusive ``flock`` on ``adcompare-measuring-<i>.lock`` in
    the temporary folder, shared by every worker of the machine; the kernel
    drops it when its holder dies, however it dies.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with host_slot(1, folder):
    ...     sorted(p.name for p in Path(folder).iterdir())
    ['adcompare-measuring-0.lock']
    """
    if slots == 0 or fcntl is None:
        yield
        return
    paths = [
        Path(folder or tempfile.gettempdir()) / f"adcompare-measuring-{i}.lock"
        for i in range(slots)
    ]
    while (handle := _take_slot(paths)) is None:
        time.sleep(0.05)
    try:
        yield
    finally:
        os.close(handle)


def _take_slot(paths: list[Path]) -> int | None:
    for path in paths:
        handle = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            continue
        return handle
    return None


def _functions(value, seen: set[int]) -> Iterator:
    """The Python functions ``value`` is or holds in its closures, and theirs."""
    if id(value) in seen or not hasattr(value, "__code__"):
        return
    seen.add(id(value))
    yield value
    for cell in value.__closure__ or ():
        with contextlib.suppress(ValueError):
            yield from _functions(cell.cell_contents, seen)


def _ship(problem: Problem):
    """What a worker rebuilds ``problem`` from: its name when it is registered (a worker
    finds it, from its entry points too), else the problem pickled by value with
    ``cloudpickle``, as are the modules its functions come from that no installed
    package provides (a user's file or test module, which a worker may not have)."""
    if REGISTRY.get(problem.name) is problem:
        return problem.name
    import cloudpickle

    installed = importlib.metadata.packages_distributions()
    for function in _functions(problem.make, set()):
        top = function.__module__.partition(".")[0]
        module = sys.modules.get(function.__module__)
        if module is not None and top not in installed and top not in sys.stdlib_module_names:
            cloudpickle.register_pickle_by_value(module)
    return cloudpickle.dumps(problem)


def _unship(shipped) -> Problem:
    if isinstance(shipped, str):
        return get_problem(shipped)
    import pickle

    return pickle.loads(shipped)


def _measure_task(config: SweepConfig, shipped, size: dict, modes: list, history: list):
    """On a worker: measure one size of a problem; returns its new cells and the machine."""
    from distributed import get_worker

    address = get_worker().address
    try:
        problem = _unship(shipped)
    except Exception as error:
        name = shipped if isinstance(shipped, str) else "a problem of the client's"
        return {
            "address": address,
            "cells": [],
            "failure": f"the worker {address} cannot load {name} ({type(error).__name__}: "
            f"{error}); install the package providing it, and what it imports, on every worker",
        }
    results = Results()
    for cell in history:
        results.add(cell)
    before = {cell_key(cell): cell for cell in history}
    failure = None
    with (
        measuring(config) as (env, description),
        np.errstate(all="ignore"),
        host_slot(config.per_host),
    ):
        start = time.time()
        try:
            measure_size(config, results, problem, size, modes, env)
        except ProblemError as error:
            failure = str(error)
        span = [start, time.time()]
    cells = [cell for cell in results.cells if before.get(cell_key(cell)) is not cell]
    for cell in cells:
        cell["worker"] = {"address": address, "measuring": span}
    return {
        "address": address,
        "cells": cells,
        "env": env,
        "description": description,
        "failure": failure,
    }


def host_flags(results: Results, cell: dict) -> list[dict]:
    """Flag ``cell`` and the cells of other tasks measured on its machine while it was
    (their ``worker`` spans overlap); returns the other cells newly flagged.

    >>> results = Results({"schema": "", "schema_version": 1, "runs": [], "cells": [],
    ...                    "environments": {"env-a": {"machine": "node1"}}})
    >>> def cell(problem, start, end):
    ...     return {"problem": problem, "mode": "f", "size": {"n": 4}, "status": "ok",
    ...             "env": "env-a", "worker": {"address": "w", "measuring": [start, end]}}
    >>> results.add(cell("mlp", 0.0, 2.0))
    >>> late = cell("rosenbrock", 1.0, 3.0)
    >>> [c["problem"] for c in host_flags(results, late)], late["flags"]
    (['mlp'], ['measured while mlp at n = 4 was measured on the same machine (node1)'])
    >>> host_flags(results, cell("fourier", 2.5, 4.0))
    []
    """
    machines = {key: d.get("machine") for key, d in results.data["environments"].items()}
    machine = machines.get(cell.get("env"))
    start, end = cell["worker"]["measuring"]
    flagged = []
    for other in results.cells:
        span = (other.get("worker") or {}).get("measuring")
        if (
            span is None
            or machines.get(other.get("env")) != machine
            or (other["problem"], other["size"]) == (cell["problem"], cell["size"])
            or not (span[0] < end and start < span[1])
        ):
            continue
        for mine, theirs in ((cell, other), (other, cell)):
            flag = (
                f"measured while {theirs['problem']} at {size_text(theirs['size'])} was "
                f"measured on the same machine ({machine})"
            )
            if flag not in mine.setdefault("flags", []):
                mine["flags"].append(flag)
                if mine is other:
                    flagged.append(other)
    return flagged


def _as_history(cell: dict, problem: str) -> dict:
    """What a task needs of a cell measured before: all of a cell of its own problem (the
    budget extrapolates from it), of another only how far its wall time exceeded its
    CPU time (the run's usual excess, against which a burst of load is flagged)."""
    if cell["problem"] == problem:
        return cell
    keep = ("wall_over_cpu", "round_wall_over_cpu")
    time_kept = {key: value for key, value in (cell.get("time") or {}).items() if key in keep}
    return {key: cell[key] for key in ("problem", "mode", "size", "status")} | {"time": time_kept}


class _Chains:
    """Each problem's sizes still to measure, one task at a time per problem."""

    def __init__(self, config: SweepConfig, results: Results, client):
        self.results, self.client = results, client
        self.sent = dataclasses.replace(config, problems=[])
        self.waiting = {
            problem.name: (_ship(problem), list(groups))
            for problem, groups in _groups(plan(config))
        }
        self.running: dict = {}

    def submit(self, name: str, host: str | None, progress: Progress):
        """The next size of ``name`` not already measured, as a future, or ``None``."""
        shipped, groups = self.waiting[name]
        while groups:
            size, modes = groups.pop(0)
            done = [self.results.get((name, mode, tuple(sorted(size.items())))) for mode in modes]
            if all(c is not None and c["status"] in ("ok", "skipped") for c in done):
                for mode in modes:
                    progress.advance(f"{name} {mode}", measured=False, group=name)
                continue
            history = [_as_history(c, name) for c in self.results.cells]
            future = self.client.submit(
                _measure_task,
                self.sent,
                shipped,
                size,
                modes,
                history,
                pure=False,
                workers=[host] if host else None,
                allow_other_workers=bool(host),
            )
            self.running[future.key] = (future, name, size, modes)
            return future
        return None


def _add_outcome(results: Results, outcome: dict, progress: Progress, name: str, modes) -> None:
    """Write a task's cells; a mode it did not measure again (resumed) advances too."""
    if outcome["cells"]:
        results.add_environment(outcome["env"], outcome["description"])
    for cell in outcome["cells"]:
        for other in host_flags(results, cell):
            results.add(other)
        results.add(cell)
        progress.advance(
            f"{name} {cell['mode']} {size_text(cell['size'])}",
            measured=cell["status"] != "skipped",
            group=name,
        )
    new = {cell["mode"] for cell in outcome["cells"]}
    for mode in modes:
        if mode not in new and outcome["failure"] is None:
            progress.advance(f"{name} {mode}", measured=False, group=name)


def run_on_cluster(
    config: SweepConfig,
    results: Results,
    client,
    *,
    progress: Progress | None = None,
) -> Results:
    """Measure every cell of ``config`` not yet in ``results`` on ``client``'s workers,
    adding each task's cells as it ends (see the module's description).

    Raises :class:`~adcompare.bench.problems.ProblemError` as the serial
    sweep does, once the failing size's cells are added, and
    :class:`ClusterError` for a task the cluster could not run (a worker
    died in it again and again); ``KeyboardInterrupt`` cancels the tasks
    still running and keeps what was added.
    """
    distributed = _distributed()
    progress = progress or Progress(len(plan(config)), quiet=True)
    chains = _Chains(config, results, client)
    workers = len(client.scheduler_info().get("workers", {}))
    results.start_run(
        config.as_dict() | {"cluster": {"scheduler": client.scheduler.address, "workers": workers}}
    )
    pending = distributed.as_completed()
    try:
        for name in chains.waiting:
            if (future := chains.submit(name, None, progress)) is not None:
                pending.add(future)
        for future in pending:
            _, name, size, modes = chains.running.pop(future.key)
            try:
                outcome = future.result()
            except Exception as error:
                raise ClusterError(
                    f"{name} at {size_text(size)} could not be measured on the cluster "
                    f"({type(error).__name__}: {error}); the cells measured so far are kept: "
                    "run again with --resume"
                ) from None
            progress.start(name)
            _add_outcome(results, outcome, progress, name, modes)
            if outcome["failure"] is not None:
                raise ProblemError(outcome["failure"])
            host = distributed.comm.get_address_host(outcome["address"])
            if (future := chains.submit(name, host, progress)) is not None:
                pending.add(future)
    finally:
        client.cancel([running[0] for running in chains.running.values()])
        progress.close()
    return results
