"""Loading problems from users' files, and the built-in instances the package generates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from adcompare.adbench.ba import BAProblem
from adcompare.adbench.ba_format import read_adbench_ba
from adcompare.adbench.generate import generate_ba, generate_gmm, generate_lstm
from adcompare.adbench.gmm import GMMProblem
from adcompare.adbench.gmm_format import read_adbench_gmm, read_gradbench_gmm
from adcompare.adbench.lstm import LSTMProblem
from adcompare.adbench.lstm_format import read_adbench_lstm

__all__ = ["BUNDLED", "bundled", "load_ba", "load_gmm", "load_gradbench_gmm", "load_lstm"]


def load_gmm(path: str | Path) -> GMMProblem:
    """An ADBench GMM text file as a problem under ADBench's convention (no reference).

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gmm.txt"
    >>> _ = path.write_text("1 2 3\\n0\\n0\\n0\\n1\\n0\\n0\\n1\\n2\\n3\\n1 0\\n")
    >>> load_gmm(path).n_params
    6
    """
    return GMMProblem(read_adbench_gmm(path), "adbench", name=Path(path).stem)


def load_gradbench_gmm(path: str | Path) -> GMMProblem:
    """A GradBench GMM JSON file as a problem under GradBench's convention.

    Its reference is the file's own reference outputs, when it has them.

    >>> import json, pathlib, tempfile
    >>> from adcompare.adbench.generate import generate_gmm
    >>> from adcompare.adbench.gmm_format import gradbench_gmm_input
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gmm.json"
    >>> _ = path.write_text(json.dumps({"input": gradbench_gmm_input(generate_gmm(2, 5, 10))}))
    >>> problem = load_gradbench_gmm(path)
    >>> problem.n_params, problem.convention, problem.reference
    (30, 'gradbench', None)
    """
    data, reference = read_gradbench_gmm(path)
    return GMMProblem(data, "gradbench", name=Path(path).stem, reference=reference)


def load_ba(path: str | Path) -> BAProblem:
    """An ADBench BA text file as a problem (no reference).

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "ba.txt"
    >>> _ = path.write_text("2 10 10\\n" + "0.1 " * 11 + "\\n1 2 3\\n0.5\\n10 20\\n")
    >>> load_ba(path).n_residuals
    30
    """
    return BAProblem(read_adbench_ba(path), name=Path(path).stem)


def load_lstm(path: str | Path) -> LSTMProblem:
    """An ADBench LSTM text file as a problem (no reference).

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lstm.txt"
    >>> _ = path.write_text("1 2 1\\n" + "0.5 " * (8 + 3 + 2) + "\\n1\\n0\\n")
    >>> load_lstm(path).n_params
    11
    """
    return LSTMProblem(read_adbench_lstm(path), name=Path(path).stem)


#: The built-in instances by name, generated (:mod:`~adcompare.adbench.generate`) at
#: the sizes of ADBench's test files and GradBench's smallest GMM workload.
BUNDLED: dict[str, Callable] = {
    "adbench-gmm-test": lambda: GMMProblem(generate_gmm(2, 3, 1), "adbench", "adbench-gmm-test"),
    "adbench-gmm-1k": lambda: GMMProblem(generate_gmm(2, 5, 1000), "adbench", "adbench-gmm-1k"),
    "gradbench-gmm-1k": lambda: GMMProblem(
        generate_gmm(2, 5, 1000), "gradbench", "gradbench-gmm-1k"
    ),
    "adbench-ba-test": lambda: BAProblem(generate_ba(2, 10, 10), "adbench-ba-test"),
    "adbench-lstm": lambda: LSTMProblem(generate_lstm(2, 1024, 14), "adbench-lstm"),
}


def bundled(name: str) -> GMMProblem | BAProblem | LSTMProblem:
    """A built-in instance by name (see ``BUNDLED``), generated with a fixed seed.

    >>> problem = bundled("adbench-gmm-test")
    >>> problem.n_params, problem.data.sizes, problem.reference is None
    (18, (2, 3, 1), True)
    """
    if name not in BUNDLED:
        raise ValueError(f"no built-in problem {name!r}; use one of {sorted(BUNDLED)}")
    return BUNDLED[name]()
