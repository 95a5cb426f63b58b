"""Reference answers computed by other tools, and ADBench's error measure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from adcompare import check
from adcompare.adbench.tokens import FormatError

__all__ = ["adbench_references", "relative_error"]

# ADBench's test-suite keys, by problem and by the name used here.
_KEYS = {
    "gmm": {
        "objective": "gmm:objective_calculation_correctness:expected_objective_scalar",
        "gradient": "gmm:jacobian_calculation_correctness:expected_gradient",
    },
    "ba": {
        "reprojection_error": "ba:objective_calculation_correctness:expected_reproj_err",
        "weight_error": "ba:objective_calculation_correctness:expected_weight_err",
        "jacobian_csr_values": "ba:jacobian_calculation_correctness:expected_J_values",
    },
    "lstm": {
        "objective": "lstm:objective_calculation_correctness:expected_objective_scalar",
        "gradient": "lstm:jacobian_calculation_correctness:expected_gradient",
    },
}


def adbench_references(problem: str, path: str | Path) -> dict:
    """ADBench's expected outputs for its ``"gmm"``, ``"ba"`` or ``"lstm"`` test instance,
    read from ADBench's ``reference_values.json`` at ``path`` (adcompare ships no copy).

    Values are floats or float arrays.

    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "reference_values.json"
    >>> _ = path.write_text(json.dumps({key: 1.0 for key in _KEYS["gmm"].values()}))
    >>> sorted(adbench_references("gmm", path).items())
    [('gradient', 1.0), ('objective', 1.0)]
    """
    if problem not in _KEYS:
        raise ValueError(f"no ADBench references for {problem!r}; use one of {sorted(_KEYS)}")
    path = Path(path)
    document = json.loads(path.read_text())
    references = {}
    for name, key in _KEYS[problem].items():
        if key not in document:
            raise FormatError(f"{path}: no entry {key!r} (the {problem} {name})")
        value = document[key]
        references[name] = float(value) if np.isscalar(value) else np.asarray(value, float)
    return references


def relative_error(a, b) -> np.ndarray:
    """ADBench's error measure ρ = |a − b| / max(1, |a| + |b|), elementwise:
    absolute for small values, relative for large ones. The one definition
    lives in :func:`adcompare.check.relative_error`.

    >>> print(relative_error([1e-9, 1000.0], [0.0, 1001.0]))
    [1.00000000e-09 4.99750125e-04]
    """
    return check.relative_error(a, b)
