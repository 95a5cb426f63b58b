"""Readers for the GMM inputs: ADBench's text format and GradBench's JSON.

Both give a :class:`GMMData`; the parameters are laid out as ADBench lays
out its gradient: α (K), then μ (K·D, row by row), then for each component
its D log-diagonal values q followed by its D(D−1)/2 off-diagonal values l.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adcompare.adbench.records import json_array, json_integer, json_number, json_object
from adcompare.adbench.tokens import FormatError, NumberStream

__all__ = ["GMMData", "gmm_input", "gradbench_gmm_input", "read_adbench_gmm", "read_gradbench_gmm"]


@dataclass(frozen=True)
class GMMData:
    """A Gaussian mixture instance: parameters, data points and Wishart prior."""

    alpha: np.ndarray  # (K,)
    mu: np.ndarray  # (K, D)
    icf: np.ndarray  # (K, D + D(D-1)/2): q then l per component
    x: np.ndarray  # (N, D)
    gamma: float
    m: int

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(D, K, N)``."""
        return self.mu.shape[1], self.mu.shape[0], self.x.shape[0]

    @property
    def params(self) -> np.ndarray:
        """The flat parameter vector in ADBench's gradient order."""
        return np.concatenate([self.alpha, self.mu.ravel(), self.icf.ravel()])


def read_adbench_gmm(path: str | Path) -> GMMData:
    """Read ADBench's GMM text format: ``D K N``, α, μ, icf, x, then ``γ m``.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gmm.txt"
    >>> _ = path.write_text("1 2 3\\n0\\n0\\n0\\n1\\n0\\n0\\n1\\n2\\n3\\n1.5 2\\n")
    >>> data = read_adbench_gmm(path)
    >>> data.sizes, data.gamma, data.m
    ((1, 2, 3), 1.5, 2)
    """
    stream = NumberStream(path)
    d, k, n = (int(v) for v in stream.ints(3, "the sizes D K N", minimum=1))
    icf_size = d * (d + 1) // 2
    alpha = stream.floats(k, f"the {k} mixture weights alpha")
    mu = stream.floats(k * d, f"the {k} means of {d} values each").reshape(k, d)
    icf = stream.floats(k * icf_size, f"the {k} rows of {icf_size} icf values").reshape(k, icf_size)
    x = stream.floats(n * d, f"the {n} data points of {d} values each").reshape(n, d)
    gamma = float(stream.floats(1, "the Wishart gamma")[0])
    m = int(stream.ints(1, "the Wishart m")[0])
    stream.expect_end()
    return GMMData(alpha, mu, icf, x, gamma, m)


def read_gradbench_gmm(path: str | Path) -> tuple[GMMData, dict | None]:
    """Read a GradBench GMM JSON file: the input and, if present, its reference outputs.

    The reference (``{"objective": float, "gradient": array}``, gradient in
    ADBench order) comes from the first key starting with
    ``reference_outputs``, or is ``None``.

    >>> import json, pathlib, tempfile
    >>> from adcompare.adbench.generate import generate_gmm
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gmm.json"
    >>> data = generate_gmm(2, 5, 10)
    >>> gradient = {"alpha": data.alpha.tolist(), "mu": data.mu.tolist(),
    ...             "q": data.icf[:, :2].tolist(), "l": data.icf[:, 2:].tolist()}
    >>> _ = path.write_text(json.dumps({"input": gradbench_gmm_input(data),
    ...     "reference_outputs_of_a_tool": {"objective": 1.0, "jacobian": gradient}}))
    >>> data, reference = read_gradbench_gmm(path)
    >>> data.sizes, reference["gradient"].shape
    ((2, 5, 10), (30,))
    """
    path = Path(path)
    document = _json_document(path)
    record = document.get("input") if isinstance(document, dict) else None
    if not isinstance(record, dict):
        raise FormatError(f"{path}: expected a JSON object with an 'input' object")
    data = gmm_input(record, path)
    outputs = [v for key, v in document.items() if key.startswith("reference_outputs")]
    if not outputs:
        return data, None
    return data, _reference(outputs[0], data, path)


def _json_document(path: Path):
    try:
        return json.loads(path.read_text())
    except OSError as error:
        raise FormatError(f"{path}: cannot read the file ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None


def gmm_input(record, where: str) -> GMMData:
    """GradBench's GMM ``input`` object (sizes ``d k n m``, ``gamma``, the arrays) as
    :class:`GMMData`; ``where`` names its source in the :class:`FormatError` it raises.

    >>> data = gmm_input(gradbench_gmm_input(GMMData(*[np.zeros(s) for s in (3, (3, 2),
    ...     (3, 3), (4, 2))], gamma=1.0, m=0)), "gmm")
    >>> data.sizes
    (2, 3, 4)
    """
    record = json_object(record, where, "an object with d, k, n, m, gamma, x, alpha, mu, q, l")
    d, k, n = (json_integer(record, key, where, label="input.") for key in "dkn")
    m = json_integer(record, "m", where, minimum=0, label="input.")
    return GMMData(
        alpha=json_array(record, "alpha", (k,), where),
        mu=json_array(record, "mu", (k, d), where),
        icf=_icf(record, k, d, where),
        x=json_array(record, "x", (n, d), where),
        gamma=json_number(record, "gamma", where, positive=True, label="input."),
        m=m,
    )


def gradbench_gmm_input(data: GMMData) -> dict:
    """``data`` as GradBench's GMM ``input`` object: the inverse of :func:`gmm_input`.

    >>> sorted(gradbench_gmm_input(GMMData(*[np.zeros(s) for s in (1, (1, 1), (1, 1),
    ...     (2, 1))], gamma=1.0, m=0)))
    ['alpha', 'd', 'gamma', 'k', 'l', 'm', 'mu', 'n', 'q', 'x']
    """
    d, k, n = data.sizes
    return {
        "d": d,
        "k": k,
        "n": n,
        "m": data.m,
        "gamma": data.gamma,
        "x": data.x.tolist(),
        "alpha": data.alpha.tolist(),
        "mu": data.mu.tolist(),
        "q": data.icf[:, :d].tolist(),
        "l": data.icf[:, d:].tolist(),
    }


def _icf(record: dict, k: int, d: int, where) -> np.ndarray:
    """Each component's ``q`` then ``l`` values, one row per component, as ADBench's icf."""
    q = json_array(record, "q", (k, d), where)
    lower = json_array(record, "l", (k, d * (d - 1) // 2), where)
    return np.concatenate([q, lower], axis=1)


def _reference(output: dict, data: GMMData, path: Path) -> dict:
    """The objective, and the gradient flattened in ADBench's order (α, μ, icf)."""
    d, k, _ = data.sizes
    gradient = output.get("jacobian", {})
    ordered = [
        json_array(gradient, "alpha", (k,), path).ravel(),
        json_array(gradient, "mu", (k, d), path).ravel(),
        _icf(gradient, k, d, path).ravel(),
    ]
    return {"objective": float(output["objective"]), "gradient": np.concatenate(ordered)}
