"""Peers in the harness: the namespace wrapper, availability, the adapters, plots, report.

The tests of the adapters themselves skip when their library is missing;
everything else runs without any peer installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcompare as ad
from adcompare.bench import peers
from adcompare.bench.harness.measure import check_derivative, measure_cell
from adcompare.bench.harness.modes import MODES, as_matrix, get_mode, mode_label
from adcompare.bench.harness.results import Results
from adcompare.bench.peers import PEER_MODES, missing_note
from adcompare.bench.peers.namespace import WrappedArray, WrappedNamespace
from adcompare.bench.problems import PROBLEMS
from adcompare.bench.report.peers import peer_comparisons, peer_section
from adcompare.bench.report.plots import PEER_COLORS, line_style, problem_figure
from adcompare.check import finite_differences
from adcompare.cli import bench as cmd_bench

SWEPT = [name for name, problem in PROBLEMS.items() if problem.family != "fixed"]
NUMPY_FUNCTIONS = {
    name: getattr(np, name)
    for name in ("sum", "mean", "max", "tanh", "sin", "cos", "exp", "log", "log1p", "reshape")
} | {"concatenate": np.concatenate}


class Native:
    """A stand-in for a foreign library's array: it refuses to mix with numpy's."""

    def __init__(self, array):
        self.array = np.asarray(array)


def _build(name: str, size: int = 5):
    problem = PROBLEMS[name]
    return problem.build(**{key: size for key in problem.sweeps})


# --- the namespace wrapper, with numpy as the library ---------------------------------


@pytest.mark.parametrize("name", SWEPT)
def test_wrapped_numpy_computes_what_numpy_computes(name):
    instance = _build(name)
    xp = WrappedNamespace("numpy", NUMPY_FUNCTIONS, np.asarray)
    wrapped = xp.unwrap(instance.f(xp, xp.wrap(instance.x)))
    np.testing.assert_array_equal(wrapped, instance.on(np)(instance.x))


def test_numpy_operands_reach_the_wrapper_and_are_converted():
    converted = []

    def as_native(array):
        converted.append(array.shape)
        return array

    xp = WrappedNamespace("numpy", NUMPY_FUNCTIONS, as_native)
    x = xp.wrap(np.array([1.0, 2.0]))
    matrix = np.array([[1.0, 2.0], [3.0, 4.0]])
    product = matrix @ x
    scaled = np.array([2.0, 3.0]) * x - np.array([1.0, 1.0])
    assert isinstance(product, WrappedArray) and isinstance(scaled, WrappedArray)
    np.testing.assert_array_equal(product.value, [5.0, 11.0])
    np.testing.assert_array_equal(scaled.value, [1.0, 5.0])
    assert converted == [(2, 2), (2,), (2,)]


def test_wrapper_unwraps_lists_for_concatenate_and_keeps_python_numbers():
    xp = WrappedNamespace("numpy", NUMPY_FUNCTIONS, np.asarray)
    x = xp.wrap(np.array([1.0]))
    joined = xp.concatenate([xp.sin(x), np.array([7.0]), 2.0 - x])
    np.testing.assert_allclose(joined.value, [np.sin(1.0), 7.0, 1.0])


def test_a_missing_function_names_the_table():
    xp = WrappedNamespace("torch", {"sum": np.sum}, np.asarray)
    with pytest.raises(AttributeError, match=r"no 'arctan2'.*only sum"):
        xp.arctan2  # noqa: B018 - the look-up itself raises


def test_foreign_arrays_never_meet_numpy_through_the_wrapper():
    """The wrapper hands the library only its own arrays: numpy operands are
    converted before the library's operator sees them."""

    def multiply(a, b):
        assert isinstance(a, Native) and isinstance(b, Native)
        return Native(a.array * b.array)

    xp = WrappedNamespace("native", {"multiply": multiply}, Native)
    product = xp.multiply(np.array([2.0, 3.0]), xp.wrap(Native([4.0, 5.0])))
    np.testing.assert_array_equal(xp.unwrap(product).array, [8.0, 15.0])


# --- availability and the one-line note -----------------------------------------------


def test_missing_note_is_one_line_naming_the_packages_and_the_fix():
    note = missing_note(["jax", "autograd"])
    assert "\n" not in note
    assert "jax and autograd are not installed" in note
    assert 'pip install -e ".[peers]"' in note


def test_with_peers_prints_one_line_when_no_peer_is_installed(monkeypatch, capsys):
    monkeypatch.setattr(peers, "is_installed", lambda library: False)
    modes = cmd_bench.with_peers(None, True)
    assert modes == list(MODES)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "jax, torch and autograd" in lines[0]


def test_with_peers_adds_the_installed_libraries_modes_only(monkeypatch, capsys):
    monkeypatch.setattr(peers, "is_installed", lambda library: library == "torch")
    modes = cmd_bench.with_peers(["reverse"], True)
    assert modes == ["reverse", "torch:reverse", "torch:jacfwd", "torch:jacrev"]
    assert "jax and autograd are not installed" in capsys.readouterr().err


def test_a_missing_peer_is_skipped_with_the_note(monkeypatch):
    monkeypatch.setattr(peers, "is_installed", lambda library: False)
    reason = PEER_MODES["jax:jacrev"].unavailable(_build("tanh_map"))
    assert reason == missing_note(["jax"])


def test_peers_refuse_what_they_cannot_compute():
    assert "scalar functions only (here m = 5)" in PEER_MODES["torch:reverse"].unavailable(
        _build("tanh_map")
    )
    gmm = PROBLEMS["adbench-gmm-1k"].build()
    assert "array namespace" in PEER_MODES["jax:grad"].unavailable(gmm)


def test_peer_modes_are_found_and_labelled_like_ours():
    assert get_mode("autograd:jvp-loop") is PEER_MODES["autograd:jvp-loop"]
    assert mode_label("torch:jacfwd") == "torch.func.jacfwd"
    with pytest.raises(ValueError, match="the peers' jax:grad"):
        get_mode("jax:hessian")


# --- plots and report, from results written by hand -----------------------------------


def test_peers_are_dashed_and_hollow_in_one_colour_per_library():
    styles = {name: line_style(name) for name in PEER_MODES}
    for name, style in styles.items():
        library = PEER_MODES[name].library
        assert style["color"] == PEER_COLORS[library]
        assert style["markerfacecolor"] == "none"
        assert style["linestyle"] == (":" if PEER_MODES[name].jit else "--")
    assert len(set(PEER_COLORS.values())) == len(PEER_COLORS)
    ours = {line_style(name)["color"] for name in MODES if name in ("f", "forward", "reverse")}
    assert not ours & set(PEER_COLORS.values())
    assert line_style("reverse")["linestyle"] == "-"


def _cell(mode: str, n: int, seconds: float, warmup: float | None = None) -> dict:
    return {
        "problem": "rosenbrock",
        "family": "many-inputs",
        "mode": mode,
        "size": {"n": n},
        "n": n,
        "m": 1,
        "status": "ok",
        "time": {"median": seconds, "iqr": 0.0, "warmup": warmup or seconds},
    }


def _results() -> Results:
    results = Results()
    for n, scale in ((8, 1.0), (64, 2.0)):
        results.add(_cell("f", n, 1e-5 * scale))
        results.add(_cell("reverse", n, 1e-3 * scale))
        results.add(_cell("torch:reverse", n, 4e-4 * scale))
        results.add(_cell("jax:grad+jit", n, 1e-4 * scale, warmup=0.3))
    results.add(_cell("forward", 8, 2e-3))
    return results


def test_peer_comparison_is_taken_at_the_largest_common_size():
    rows = {row["peer"]["mode"]: row for row in peer_comparisons(_results())}
    assert set(rows) == {"torch:reverse", "jax:grad+jit"}
    torch_row = rows["torch:reverse"]
    assert torch_row["peer"]["n"] == 64 and torch_row["counterpart"]["mode"] == "reverse"
    section = "\n".join(peer_section(_results()))
    # 0.8 ms ÷ 2 ms, and a jitted first call minus its median as compile time.
    assert "| 0.4× |" in section
    assert "compile ≈ 300 ms" in section


def test_figure_draws_peers_on_the_same_time_axes():
    figure = problem_figure(_results(), "rosenbrock")
    time_axes = figure.axes[0]
    styles = {line.get_label().split(" (")[0]: line.get_linestyle() for line in time_axes.lines}
    assert styles["torch eager backward"] == "--"
    assert styles["JAX grad + jit"] == ":"
    assert styles["reverse"] == "-"
    assert figure.legends, "with peers the top row shares one legend beside the panels"


# --- the adapters, when their library is installed ------------------------------------

FIRST_ORDER = [(name, problem) for name in PEER_MODES for problem in ("mlp", "fourier", "tanh_map")]


@pytest.mark.parametrize(("mode_name", "problem"), FIRST_ORDER)
def test_peer_jacobian_matches_adcompare_and_finite_differences(mode_name, problem):
    mode = PEER_MODES[mode_name]
    pytest.importorskip(mode.library)
    instance = _build(problem, 4)
    reason = mode.unavailable(instance)
    if reason:
        assert mode.scalar_only and instance.m != 1
        return
    got = as_matrix(mode.prepare(instance)(), instance)
    expected = as_matrix(ad.jacrev(instance.on(ad))(instance.x), instance)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    numeric = as_matrix(finite_differences(instance.on(np))(instance.x), instance)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-7)
    assert check_derivative(instance, mode, got)["ok"]


def test_torch_runs_problems_with_numpy_constants_through_the_wrapper():
    torch = pytest.importorskip("torch")
    from adcompare.bench.peers import torch as peers_torch

    instance = _build("logistic", 6)
    f = peers_torch.function_of(instance, torch)
    value = f(torch.from_numpy(instance.x))
    assert isinstance(value, torch.Tensor) and value.dtype == torch.float64
    assert float(value) == pytest.approx(float(instance.on(np)(instance.x)), rel=1e-14)


def test_a_peer_cell_records_no_adcompare_counts_and_untraced_memory_as_unknown():
    pytest.importorskip("torch")
    cell = measure_cell(_build("rosenbrock", 8), PEER_MODES["torch:reverse"], repeats=1)
    assert cell["check"]["ok"]
    assert cell["counts"] is None and cell["memory"]["peak_bytes"] is None


def test_autograd_memory_is_traced_since_its_arrays_are_numpys():
    pytest.importorskip("autograd")
    cell = measure_cell(_build("rosenbrock", 8), PEER_MODES["autograd:grad"], repeats=1)
    assert cell["check"]["ok"] and cell["memory"]["peak_bytes"] > 0
