"""Loading problems: from any file, or the bundled instances with their references."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from adcompare.adbench.ba import BAProblem
from adcompare.adbench.ba_format import read_adbench_ba
from adcompare.adbench.datafiles import data_path
from adcompare.adbench.gmm import GMMProblem
from adcompare.adbench.gmm_format import read_adbench_gmm, read_gradbench_gmm
from adcompare.adbench.lstm import LSTMProblem
from adcompare.adbench.lstm_format import read_adbench_lstm
from adcompare.adbench.references import adbench_references

__all__ = ["BUNDLED", "bundled", "load_ba", "load_gmm", "load_gradbench_gmm", "load_lstm"]


def load_gmm(path: str | Path) -> GMMProblem:
    """An ADBench GMM text file as a problem under ADBench's convention (no reference).

    >>> from adcompare.adbench.datafiles import data_path
    >>> load_gmm(data_path("adbench/gmm/gmm_d2_K5_1k.txt")).n_params
    30
    """
    return GMMProblem(read_adbench_gmm(path), "adbench", name=Path(path).stem)


def load_gradbench_gmm(path: str | Path) -> GMMProblem:
    """A GradBench GMM JSON file as a problem under GradBench's convention.

    Its reference is the file's own reference outputs, when it has them.

    >>> from adcompare.adbench.datafiles import data_path
    >>> problem = load_gradbench_gmm(data_path("gradbench/gmm_2_5_1000.json"))
    >>> round(problem.reference["objective"], 6)
    -3916.464821
    """
    data, reference = read_gradbench_gmm(path)
    return GMMProblem(data, "gradbench", name=Path(path).stem, reference=reference)


def load_ba(path: str | Path) -> BAProblem:
    """An ADBench BA text file as a problem (no reference).

    >>> from adcompare.adbench.datafiles import data_path
    >>> load_ba(data_path("adbench/ba/test.txt")).n_residuals
    30
    """
    return BAProblem(read_adbench_ba(path), name=Path(path).stem)


def load_lstm(path: str | Path) -> LSTMProblem:
    """An ADBench LSTM text file as a problem (no reference).

    >>> from adcompare.adbench.datafiles import data_path
    >>> load_lstm(data_path("adbench/lstm/lstm_l2_c1024.txt")).n_params
    266
    """
    return LSTMProblem(read_adbench_lstm(path), name=Path(path).stem)


def _bundled_loader(load: Callable, file: str, problem: str | None, name: str):
    """A loader of a bundled file that attaches ADBench's ``problem`` references, if any."""

    def make():
        loaded = load(data_path(file))
        loaded.name = name
        if problem is not None:
            loaded.reference = adbench_references(problem)
        return loaded

    return make


#: The bundled instances by name; ADBench's test instances carry its references.
BUNDLED: dict[str, Callable] = {
    "adbench-gmm-test": _bundled_loader(
        load_gmm, "adbench/gmm/test.txt", "gmm", "adbench-gmm-test"
    ),
    "adbench-gmm-1k": _bundled_loader(
        load_gmm, "adbench/gmm/gmm_d2_K5_1k.txt", None, "adbench-gmm-1k"
    ),
    "gradbench-gmm-1k": _bundled_loader(
        load_gradbench_gmm, "gradbench/gmm_2_5_1000.json", None, "gradbench-gmm-1k"
    ),
    "adbench-ba-test": _bundled_loader(load_ba, "adbench/ba/test.txt", "ba", "adbench-ba-test"),
    "adbench-lstm": _bundled_loader(
        load_lstm, "adbench/lstm/lstm_l2_c1024.txt", "lstm", "adbench-lstm"
    ),
}


def bundled(name: str) -> GMMProblem | BAProblem | LSTMProblem:
    """A bundled instance by name (see ``BUNDLED``), with its reference values if known.

    >>> problem = bundled("adbench-gmm-test")
    >>> problem.n_params, round(problem.reference["objective"], 6)
    (18, 8.073804)
    """
    if name not in BUNDLED:
        raise ValueError(f"no bundled problem {name!r}; use one of {sorted(BUNDLED)}")
    return BUNDLED[name]()
