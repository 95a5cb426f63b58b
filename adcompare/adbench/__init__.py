"""Real problems from ADBench and GradBench, written once against the op set.

Each problem takes ONE flat parameter vector, so ``grad``, ``jacfwd`` and
``jacrev`` apply directly; the bundled test instances carry the answers
other tools computed (``problem.reference``).

>>> import adcompare as ad
>>> from adcompare import adbench
>>> gmm = adbench.bundled("adbench-gmm-test")
>>> gradient = ad.grad(gmm.objective)(gmm.params)
>>> float(adbench.relative_error(gradient, gmm.reference["gradient"]).max()) <= 1e-8
True
"""

from adcompare.adbench.ba import BAProblem
from adcompare.adbench.datafiles import DATA_DIR, data_path
from adcompare.adbench.gmm import GMMProblem
from adcompare.adbench.lstm import LSTMProblem
from adcompare.adbench.problems import (
    BUNDLED,
    bundled,
    load_ba,
    load_gmm,
    load_gradbench_gmm,
    load_lstm,
)
from adcompare.adbench.references import adbench_references, relative_error
from adcompare.adbench.tokens import FormatError

__all__ = [
    "BUNDLED",
    "DATA_DIR",
    "BAProblem",
    "FormatError",
    "GMMProblem",
    "LSTMProblem",
    "adbench_references",
    "bundled",
    "data_path",
    "load_ba",
    "load_gmm",
    "load_gradbench_gmm",
    "load_lstm",
    "relative_error",
]
