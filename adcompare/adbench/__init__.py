"""Real problems from ADBench and GradBench, written once against the op set.

Each problem takes ONE flat parameter vector, so ``grad``, ``jacfwd`` and
``jacrev`` apply directly. The readers take ADBench's and GradBench's files;
the built-in instances (``bundled``) are generated with fixed seeds
(:mod:`~adcompare.adbench.generate`): no data file ships with the package.
A file read with its reference outputs carries them (``problem.reference``).

>>> import adcompare as ad
>>> from adcompare import adbench
>>> gmm = adbench.bundled("adbench-gmm-test")
>>> gradient = ad.grad(gmm.objective)(gmm.params)
>>> forward = ad.grad(gmm.objective, mode="forward")(gmm.params)
>>> float(adbench.relative_error(gradient, forward).max()) <= 1e-12
True
"""

from adcompare.adbench.ba import BAProblem
from adcompare.adbench.generate import generate_ba, generate_gmm, generate_lstm
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
    "BAProblem",
    "FormatError",
    "GMMProblem",
    "LSTMProblem",
    "adbench_references",
    "bundled",
    "generate_ba",
    "generate_gmm",
    "generate_lstm",
    "load_ba",
    "load_gmm",
    "load_gradbench_gmm",
    "load_lstm",
    "relative_error",
]
