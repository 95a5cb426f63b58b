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

from adcompare.adbench.tokens import FormatError, NumberStream

__all__ = ["GMMData", "read_adbench_gmm", "read_gradbench_gmm"]


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

    >>> from adcompare.adbench.datafiles import data_path
    >>> data = read_adbench_gmm(data_path("adbench/gmm/test.txt"))
    >>> data.sizes, data.gamma, data.m
    ((2, 3, 1), 1.0, 0)
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


def _array(record: dict, key: str, shape: tuple[int, ...], path: Path) -> np.ndarray:
    if key not in record:
        raise FormatError(f"{path}: the input has no {key!r}; expected an array of shape {shape}")
    try:
        value = np.array(record[key], dtype=np.float64)
    except (TypeError, ValueError):
        raise FormatError(
            f"{path}: {key!r} is not a regular array of numbers; expected shape {shape}"
        ) from None
    if value.shape != shape:
        raise FormatError(f"{path}: {key!r} has shape {value.shape}; expected shape {shape}")
    return value


def read_gradbench_gmm(path: str | Path) -> tuple[GMMData, dict | None]:
    """Read a GradBench GMM JSON file: the input and, if present, its reference outputs.

    The reference (``{"objective": float, "gradient": array}``, gradient in
    ADBench order) comes from the first key starting with
    ``reference_outputs``, or is ``None``.

    >>> from adcompare.adbench.datafiles import data_path
    >>> data, reference = read_gradbench_gmm(data_path("gradbench/gmm_2_5_1000.json"))
    >>> data.sizes, reference["gradient"].shape
    ((2, 5, 1000), (30,))
    """
    path = Path(path)
    document = _json_document(path)
    record = document.get("input") if isinstance(document, dict) else None
    if not isinstance(record, dict):
        raise FormatError(f"{path}: expected a JSON object with an 'input' object")
    data = _gmm_input(record, path)
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


def _gmm_input(record: dict, path: Path) -> GMMData:
    """GradBench's ``input`` object: sizes ``d k n m``, ``gamma``, and the arrays."""
    sizes = {}
    for key in ("d", "k", "n", "m"):
        value = record.get(key)
        if not isinstance(value, int) or value < (0 if key == "m" else 1):
            raise FormatError(f"{path}: 'input.{key}' is {value!r}; expected a positive integer")
        sizes[key] = value
    d, k, n = sizes["d"], sizes["k"], sizes["n"]
    gamma = record.get("gamma")
    if not isinstance(gamma, (int, float)) or gamma <= 0:
        raise FormatError(f"{path}: 'input.gamma' is {gamma!r}; expected a positive number")
    return GMMData(
        alpha=_array(record, "alpha", (k,), path),
        mu=_array(record, "mu", (k, d), path),
        icf=_icf(record, k, d, path),
        x=_array(record, "x", (n, d), path),
        gamma=float(gamma),
        m=sizes["m"],
    )


def _icf(record: dict, k: int, d: int, path: Path) -> np.ndarray:
    """Each component's ``q`` then ``l`` values, one row per component, as ADBench's icf."""
    q = _array(record, "q", (k, d), path)
    lower = _array(record, "l", (k, d * (d - 1) // 2), path)
    return np.concatenate([q, lower], axis=1)


def _reference(output: dict, data: GMMData, path: Path) -> dict:
    """The objective, and the gradient flattened in ADBench's order (α, μ, icf)."""
    d, k, _ = data.sizes
    gradient = output.get("jacobian", {})
    ordered = [
        _array(gradient, "alpha", (k,), path).ravel(),
        _array(gradient, "mu", (k, d), path).ravel(),
        _icf(gradient, k, d, path).ravel(),
    ]
    return {"objective": float(output["objective"]), "gradient": np.concatenate(ordered)}
