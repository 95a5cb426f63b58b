"""Reach by name: of autograd's differentiable names, how many adcompare differentiates.

Run twice by run.py, in two processes:

- ``--reference OUT``, with HIPS autograd itself importable: lists every public name
  of ``autograd.numpy``, ``.linalg``, ``.fft`` and ``autograd.scipy.*`` that has a
  derivative rule in autograd's registry (``primitive_vjps``/``primitive_jvps``),
  finds a small input autograd differentiates it at (the first of ``PATTERNS`` that
  works, or the name's entry in ``SPECIAL``) and writes autograd's gradient there;
- ``--compare REFERENCE OUT``, with the adapter first on the path: the same call on the
  same input through the adapter's namespaces, differentiated by adcompare in
  reverse and in forward mode, compared with autograd's gradient.
"""

from __future__ import annotations

import importlib
import json
import sys

import numpy as np
from outcomes import ADVICE

MODULES = [
    "autograd.numpy",
    "autograd.numpy.linalg",
    "autograd.numpy.fft",
    "autograd.scipy.special",
    "autograd.scipy.linalg",
    "autograd.scipy.signal",
    "autograd.scipy.integrate",
    *(
        f"autograd.scipy.stats.{d}"
        for d in ("norm", "t", "gamma", "beta", "chi2", "poisson", "dirichlet")
    ),
    "autograd.scipy.stats.multivariate_normal",
]
#: What a distribution of ``autograd.scipy.stats`` offers (its modules also import
#: ``scipy.special``'s functions, which are counted there).
DISTRIBUTION_METHODS = {"pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "pmf", "logpmf", "entropy"}
#: autograd's own helpers, not names a user of numpy or SciPy writes.
INTERNAL = {"array_from_args", "concatenate_args", "make_diagonal", "astype", "truncate_pad"}

V = [0.3, 0.5, 0.7]
V2 = [0.6, 0.2, 0.4]
M = [[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.8]]
M2 = [[0.5, 0.1, 0.4], [0.2, 0.6, 0.3], [0.7, 0.1, 0.2]]
UPPER = [[2.0, 0.3, 0.1], [0.0, 1.5, 0.2], [0.0, 0.0, 1.8]]
BANDED = [[0.0, 0.3, 0.2], [2.0, 1.5, 1.8], [0.3, 0.2, 0.0]]  # M's three diagonals
WIDE = [[0.5, 0.1, 0.4, 0.3], [0.2, 0.6, 0.3, 0.8], [0.7, 0.1, 0.2, 0.9]]  # even last axis
CUBE = [[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]], [[0.9, 1.0, 1.1, 1.2], [1.3, 1.4, 1.5, 1.6]]]
#: Calls tried in order: the arguments (lists stand for float arrays) and the position
#: differentiated (None: the first position autograd has a rule for).
PATTERNS = [
    ((V,), None),
    ((M,), None),
    ((V, V2), None),
    ((M, M2), None),
    ((V, 2), None),
    ((M, 1), None),
    ((M, 0, 1), None),
    ((2, V), None),
    ((2.0, V), None),
    ((V, 2.0), None),
    ((V, 2.0, 3.0), None),
    ((0.4,), None),
    ((0.2, 0.9), None),
]
SPECIAL = {
    "acosh": (([1.3, 1.5, 1.7],), 0),
    "arccosh": (([1.3, 1.5, 1.7],), 0),
    "broadcast_to": (([V], (2, 3)), 0),  # autograd's rule adds no leading axes
    "reshape": ((V, (3, 1)), 0),
    "dsplit": ((CUBE, 2), 0),
    "diagonal": ((M, 0, -1, -2), 0),  # autograd's rule takes the last two axes only
    "linspace": ((0.2, 0.9, 5), 0),
    "rfft2": ((WIDE,), 0),  # autograd's rule takes even lengths only
    "rfftn": ((WIDE,), 0),
    "solve_banded": (((1, 1), BANDED, V), 1),
    "eig": ((M,), 0),
    "tril": ((M,), 0),  # on a vector autograd's gradient has the wrong shape (3, 3)
    "triu": ((M,), 0),
    "eigh": ((M,), 0),
    "svd": ((M, False), 0),  # autograd's rule: full_matrices=False only
    "einsum": (("i,i->", V, V2), 1),
    "full": (((3,), 0.4), 1),
    "clip": ((V, 0.4, 0.6), 0),
    "pad": ((V, 1, "constant"), 0),
    "beta.logpdf": ((V, 2.0, 3.0), 0),  # x inside the support [0, 1]
    "beta.pdf": ((V, 2.0, 3.0), 0),
    "beta.cdf": ((V, 2.0, 3.0), 0),
    "betainc": ((2.0, 3.0, V), 2),  # x in [0, 1]; autograd's rule is in x only
    "poisson.logpmf": (([1, 2, 3], V), 1),
    "poisson.pmf": (([1, 2, 3], V), 1),
    "poisson.cdf": (([1, 2, 3], V), 1),
    "dirichlet.logpdf": (([0.2, 0.3, 0.5], [1.5, 2.0, 2.5]), 0),
    "dirichlet.pdf": (([0.2, 0.3, 0.5], [1.5, 2.0, 2.5]), 0),
    "dirichlet.entropy": (([1.5, 2.0, 2.5],), 0),
    "multivariate_normal.logpdf": ((V, V2, M), 0),
    "multivariate_normal.pdf": ((V, V2, M), 0),
    "multivariate_normal.entropy": ((V2, M), 1),
    "solve_triangular": ((UPPER, V), 1),
    "solve_sylvester": ((M, M2, M), 0),
    "odeint": (("decay", V, [0.0, 0.5], ()), 1),
}
#: Names whose result is a tuple with eigen- or singular vectors, defined up to sign (or
#: phase): only the values (this element of the result) are compared.
TAKE = {"eig": 0, "eigh": 0, "svd": 1}
#: Names that read one triangle of a symmetric matrix: autograd's gradient is the
#: symmetric one, adcompare's the derivative in the entries read; they agree on
#: symmetric directions, so their symmetric parts are compared.
SYMMETRIC = {"cholesky", "eigh", "eigvalsh", "multivariate_normal.entropy"}


def _arguments(pattern):
    args, _ = pattern
    built = []
    for a in args:
        if a == "decay":
            built.append(lambda y, t: -0.5 * y)
        elif isinstance(a, list) and all(isinstance(v, int) for v in np.ravel(a)):
            built.append(np.array(a))
        elif isinstance(a, (list, float)):
            built.append(np.array(a, dtype=float))
        else:
            built.append(a)
    return built


def _total(np_, out):
    if isinstance(out, (tuple, list)):
        return sum(_total(np_, o) for o in out)
    return np_.sum(np_.real(out))


def _key(module: str, name: str) -> str:
    """``norm.cdf`` for a distribution's method, the bare name otherwise."""
    return f"{module.rsplit('.', 1)[-1]}.{name}" if ".stats." in module else name


def _resolve(module: str, name: str):
    return getattr(importlib.import_module(module), name)


def _gradient(grad, np_, fn, name, pattern, argnum, **options):
    args = _arguments(pattern)
    take = TAKE.get(name)

    def scalar(x):
        out = fn(*args[:argnum], x, *args[argnum + 1 :])
        return _total(np_, out if take is None else out[take])

    return np.asarray(grad(scalar, **options)(args[argnum]), dtype=complex)


def reference(out: str) -> None:
    """autograd's differentiable names and its gradient of each at a working input."""
    import autograd
    import autograd.numpy as anp
    from autograd.core import primitive_jvps, primitive_vjps

    names = {}
    for module in MODULES:
        for name in sorted(dir(importlib.import_module(module))):
            fn = _resolve(module, name)
            try:
                has_rule = fn in primitive_vjps or fn in primitive_jvps
            except TypeError:  # unhashable
                continue
            if name.startswith("_") or name in INTERNAL or not has_rule:
                continue
            if ".stats." in module and name not in DISTRIBUTION_METHODS:
                continue
            key = _key(module, name)
            special = SPECIAL.get(key) or SPECIAL.get(name)
            names[f"{module}.{name}"] = _reference_call(
                autograd.grad, anp, fn, key, [special] if special else PATTERNS
            )
    with open(out, "w", encoding="utf-8") as f:
        json.dump(names, f, indent=1)


def _reference_call(grad, anp, fn, name, patterns):
    """The first call (pattern, position) autograd differentiates, and its gradient.

    A call whose gradient is zero everywhere is kept only if no other call has a
    nonzero one: autograd returns zeros for a position it has no rule for
    (``chi2.logpdf``'s degrees of freedom), which would compare nothing.
    """
    zero = None
    for index, pattern in enumerate(patterns):
        args, position = pattern
        floats = [p for p, a in enumerate(args) if isinstance(a, float) or _float_list(a)]
        for argnum in floats if position is None else [position]:
            try:
                with np.errstate(all="ignore"):
                    g = _gradient(grad, anp, fn, name, pattern, argnum)
            except Exception:  # the call does not fit the name: try the next
                continue
            if not np.all(np.isfinite(g)):
                continue
            found = {
                "pattern": index,
                "special": patterns is not PATTERNS,
                "argnum": argnum,
                "real": g.real.tolist(),
                "imag": g.imag.tolist(),
            }
            if np.any(g != 0):
                return found
            zero = zero or found
    return zero


def _float_list(value) -> bool:
    return isinstance(value, list) and not all(isinstance(v, int) for v in np.ravel(value))


def compare(reference_file: str, out: str) -> None:
    """adcompare's gradients, both modes, against autograd's, name by name."""
    import autograd.numpy as anp

    import adcompare as ad

    with open(reference_file, encoding="utf-8") as f:
        reference_calls = json.load(f)
    results = {}
    for path, call in reference_calls.items():
        if call is None:
            results[path] = {"outcome": "no input autograd differentiates"}
            continue
        module, name = path.rsplit(".", 1)
        key = _key(module, name)
        pattern = (
            (SPECIAL.get(key) or SPECIAL[name]) if call["special"] else PATTERNS[call["pattern"]]
        )
        expected = np.array(call["real"]) + 1j * np.array(call["imag"])
        results[path] = {
            mode: _compare_one(ad, anp, module, name, pattern, call["argnum"], expected, mode)
            for mode in ("reverse", "forward")
        }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, sort_keys=True)


def _compare_one(ad, anp, module, name, pattern, argnum, expected, mode):
    key = _key(module, name)
    try:
        fn = _resolve(module, name)
        with np.errstate(all="ignore"):
            g = _gradient(ad.grad, anp, fn, key, pattern, argnum, mode=mode)
    except Exception as error:  # every failure is a finding: a refusal or an error
        outcome = "refusal" if ADVICE.search(str(error)) else "error"
        return {"outcome": outcome, "error": type(error).__name__, "message": str(error)[:200]}
    if key in SYMMETRIC and g.shape == expected.shape:
        g, expected = (g + g.T) / 2, (expected + expected.T) / 2
    if g.shape == expected.shape and np.allclose(g, expected, rtol=1e-6, atol=1e-9):
        return {"outcome": "reached"}
    return {"outcome": "wrong value", "expected": expected.real.tolist(), "got": g.real.tolist()}


if __name__ == "__main__":
    if sys.argv[1] == "--reference":
        reference(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])
