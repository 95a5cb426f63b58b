"""Measure your own function (issue 30): a user's problem goes where the built-in ones go.

A function of a flat vector, a function of pytrees and a function built per size
become problems through ``bench.problem``; ``bench.measure`` sweeps them by every
mode into the same results file the CLI writes, and the report speaks only of
them, with a recommendation read from the measurements. Bad functions get one
sentence; third-party packages add problems and peers by entry points.
"""

from __future__ import annotations

import importlib.metadata
import json
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

import adcompare.bench as bench
from adcompare.bench.harness.modes import get_mode
from adcompare.bench.memory.loops import loop_instance
from adcompare.bench.peers import PEER_MODES, PeerMode
from adcompare.bench.problems import REGISTRY, registry
from adcompare.bench.report.plots import problem_figure
from adcompare.bench.report.recommend import recommendation
from adcompare.bench.sparse.sweep import run_sparse_sweep
from tests.benchcases import synthetic_cell

QUICK = {"repeats": 1, "budget": 5.0, "memory": False}
ROOT = Path(__file__).resolve().parents[1]


def running_sine(x):
    """R^n -> R^2: the sines of the last two running sums."""
    return np.sin(np.cumsum(x))[-2:]


def running_sine_jacobian(x):
    """By hand: d sin(S_k)/dx_j = cos(S_k) for j ≤ k, S_k = x_0 + ... + x_k."""
    n, sums = x.size, np.cumsum(x)
    rows = [np.cos(sums[k]) * (np.arange(n) <= k) for k in (n - 2, n - 1)]
    return np.array(rows)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The flat-vector function swept at n = 3, 6 by every first-order mode, with its report."""
    out = tmp_path_factory.mktemp("mymodel")
    p = bench.problem(running_sine, description="running sines")
    modes = ["f", "forward1", "forward", "reverse", "fd", "symbolic"]
    results = bench.measure(p, modes=modes, sizes=[3, 6], out=out, **QUICK)
    return p, results, out


def test_a_user_function_gets_every_mode_checked_and_counted(measured):
    p, results, _ = measured
    cells = {(c["mode"], c["n"]): c for c in results}
    assert {c["status"] for c in results} == {"ok"}
    assert {c["m"] for c in results} == {2}
    for (mode, n), cell in cells.items():
        assert cell["time"]["median"] > 0
        if mode != "f":
            assert cell["check"]["ok"], (mode, n, cell["check"])
    # The deterministic counts: one lane a pass, one sweep per output.
    assert cells["forward1", 6]["counts"]["passes"] == 6
    assert cells["reverse", 6]["counts"]["sweeps"] == 2
    assert cells["fd", 6]["counts"]["evaluations"] == 12
    # The harness differentiates the user's function itself: its Jacobian by hand.
    instance = p.build(n=6)
    jacobian = get_mode("reverse").prepare(instance)()
    np.testing.assert_allclose(jacobian, running_sine_jacobian(instance.x), rtol=1e-13)


def test_results_iterate_save_and_reload_as_the_cli_file(measured, tmp_path):
    _, results, out = measured
    on_disk = bench.load_results(out / "results.json")
    assert [c["mode"] for c in on_disk] == [c["mode"] for c in results]
    copy = tmp_path / "copy.json"
    results.save(copy)
    again = bench.load_results(copy)
    assert again.cells == results.cells and not again.rejected
    assert json.loads(copy.read_text())["schema"] == "adcompare-bench-results"
    assert again.data["runs"][0]["config"]["problems"] == ["running_sine"]


def test_the_report_speaks_only_of_the_function_asked_for(measured):
    _, results, out = measured
    text = (out / "report.md").read_text()
    assert "## running_sine: running sines (many-inputs)" in text
    assert "(summary.png)" in text.split("## Summary")[0], "the summary figure comes first"
    for unasked in ("adbench", "gradbench", "rosenbrock", "was not measured"):
        assert unasked not in text
    sentence = recommendation(results, "running_sine")
    assert sentence.startswith("**running_sine** (m = 2): ")
    assert 'jacobian(mode="auto") picks reverse at n = 3–6' in sentence
    assert sentence in text
    labels = problem_figure(results, "running_sine").axes[2].get_legend_handles_labels()[1]
    theory = [label for label in labels if label.startswith("theory")]
    assert theory and all(label.endswith("·f, m = 2") for label in theory), theory
    assert any("·n·f" in label for label in theory) and any("·m·f" in label for label in theory)


def test_the_recommendation_reads_the_crossover_and_judges_auto():
    # Chunked forward costs 1e-4·n, reverse 1e-3 whatever n: they cross at n = 10, and
    # jacobian(mode="auto") picks reverse for every n > m = 1, the slower at n = 4.
    results = bench.Results()
    for n in (4, 16, 64, 256):
        for mode, seconds in (("f", 1e-5), ("forward", 1e-4 * n), ("reverse", 1e-3)):
            results.add(synthetic_cell("mine", "many-inputs", mode, {"n": n}, n, 1, seconds, n))
    assert recommendation(results, "mine") == (
        "**mine** (m = 1): forward, chunked is cheapest at n = 4 (2.5× faster than reverse), "
        "then reverse at n = 16–256 (1.6–26× faster than forward, chunked); reverse overtakes "
        'forward, chunked at n ≈ 10; jacobian(mode="auto") picks reverse at n = 4–256, but at '
        'n = 4 forward, chunked is 2.5× faster, so pass mode="forward" there.'
    )


def test_a_pytree_function_is_flattened_and_its_hessian_measured(tmp_path):
    def loss(params, power):
        return np.sum(params["w"] ** power) + np.sin(params["b"])

    p = bench.problem(
        loss, name="pytree_loss", inputs=lambda n: ({"w": np.linspace(0.5, 1.0, n), "b": 0.3}, 2)
    )
    instance = p.build(n=4)
    assert instance.n == 5 and instance.m == 1  # b, then the four w (sorted keys)
    gradient = get_mode("reverse").prepare(instance)()
    x = instance.x
    np.testing.assert_allclose(gradient.ravel(), [np.cos(x[0]), *(2 * x[1:])], rtol=1e-14)
    modes = ["f", "forward", "reverse", "hessian:fwd-over-rev"]
    results = bench.measure(p, modes=modes, sizes=[4], out=None, **QUICK)
    assert {c["mode"]: c["status"] for c in results} == dict.fromkeys(modes, "ok")
    hessian = get_mode("hessian:fwd-over-rev").prepare(instance)()
    np.testing.assert_allclose(
        np.asarray(hessian), np.diag([-np.sin(x[0]), 2, 2, 2, 2]), atol=1e-14
    )


def test_a_function_built_per_size_is_swept_over_m(tmp_path):
    def oscillation(m):
        times = np.linspace(0.0, 1.0, m)
        return (lambda w: np.exp(-times) * np.sin(w * times)), np.array([1.3])

    p = bench.problem(build=oscillation, sweep=("m",))
    results = bench.measure(p, modes=["f", "forward", "reverse"], sizes=[2, 8], out=tmp_path)
    assert sorted({(c["n"], c["m"]) for c in results}) == [(1, 2), (1, 8)]
    assert {c["family"] for c in results} == {"one-input"}
    text = (tmp_path / "report.md").read_text()
    assert "**oscillation** (n = 1): " in text
    instance = p.build(m=8)
    times = np.linspace(0.0, 1.0, 8)
    expected = np.exp(-times) * times * np.cos(1.3 * times)
    np.testing.assert_allclose(np.ravel(get_mode("forward").prepare(instance)()), expected)


def bad(returns):
    """A function named ``bad`` returning ``returns(x)``."""

    def bad(x):
        return returns(x)

    return bad


@pytest.mark.parametrize(
    ("returns", "inputs", "says"),
    [
        (lambda x: x.reshape(2, -1), None, "bad returns an array of shape (2, 2) at n = 4; "),
        (lambda x: x > 0, None, "bad returns bool values at n = 4, not floats; return a float"),
        (lambda x: np.sum(x) if x.size < 8 else x, None, "bad returns a 1-D array at n = 8 but"),
        (lambda x: x + np.nan, None, "bad returns NaN or inf at n = 4; give it inputs"),
        (
            lambda x: np.sqrt(np.abs(x)),
            lambda n: np.zeros(n),
            "the derivative of bad by forward1 is NaN or inf at n = 4, where bad itself is "
            "finite: it is not differentiable at that point",
        ),
        (lambda x: x * (1 / (8 - x.size)), None, "bad raised ZeroDivisionError at n = 8: "),
        (lambda x: x[:0], None, "bad returns an empty array at n = 4; return at least one value"),
    ],
    ids=["2-d", "bool", "varying", "nan", "not-differentiable", "raises", "empty"],
)
# numpy warns where a derivative divides by zero; outside pytest's warnings-as-errors the
# computation goes on, as here, and the harness meets the inf it returns.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_bad_function_gets_one_sentence_and_keeps_what_was_measured(
    tmp_path, returns, inputs, says
):
    p = bench.problem(bad(returns), inputs=inputs)
    with pytest.raises(bench.ProblemError) as raised:
        bench.measure(p, modes=["f", "forward1", "reverse"], sizes=[4, 8], out=tmp_path, **QUICK)
    message = str(raised.value)
    assert says in message and "\n" not in message
    assert isinstance(raised.value, ValueError)  # the CLI's exit 2
    kept = bench.load_results(tmp_path / "results.json")
    if says.endswith("at n = 8 but") or "n = 8" in says:
        assert {(c["mode"], c["status"]) for c in kept if c["n"] == 4} == {
            ("f", "ok"),
            ("forward1", "ok"),
            ("reverse", "ok"),
        }


def test_the_sparse_and_memory_studies_take_a_user_problem(tmp_path):
    def stencil(x):
        return np.concatenate([x[:1], x[1:] - x[:-1]]) * np.cos(x)

    p = bench.problem(stencil)
    out = tmp_path / "sparse.json"
    results = run_sparse_sweep(out, problems=[p], sizes={"stencil": (12,)}, log=lambda _: None)
    cells = [c for c in results["cells"] if "time" in c]
    assert cells and all(c["problem"] == "stencil" for c in cells)
    assert all(c["error"] <= 1e-12 for c in cells if "error" in c)
    assert results["colours"][0]["nnz"] == 12 + 11  # a bidiagonal pattern
    with pytest.raises(bench.ProblemError, match="stencil is not one: define it with"):
        loop_instance(p, 5)


@pytest.fixture
def entry_points(monkeypatch, tmp_path):
    """Fake installed entry points, served from a module written into ``tmp_path``."""
    (tmp_path / "thirdparty_bench.py").write_text(
        "import numpy as np\n"
        "import adcompare.bench as bench\n"
        "from adcompare.bench.peers import PeerMode\n"
        "problem = bench.problem(lambda x: np.sum(np.exp(x)), name='thirdparty-exp')\n"
        "def _prepare(instance):\n"
        "    return lambda: np.exp(instance.x)\n"
        "modes = [PeerMode('numpylib:by-hand', 'by hand', 'numpy', _prepare, 'reverse')]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = [
        importlib.metadata.EntryPoint("exp", "thirdparty_bench:problem", "adcompare.problems"),
        importlib.metadata.EntryPoint("broken", "thirdparty_bench:missing", "adcompare.problems"),
        importlib.metadata.EntryPoint("numpylib", "thirdparty_bench:modes", "adcompare.peers"),
    ]
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [e for e in found if e.group == group],
    )
    monkeypatch.setattr(registry, "_loaded", set())
    monkeypatch.setattr(registry, "_FAILED", {})
    yield
    REGISTRY.pop("thirdparty-exp", None)
    PEER_MODES.pop("numpylib:by-hand", None)
    sys.modules.pop("thirdparty_bench", None)


def test_entry_points_add_problems_and_peers_lazily(entry_points):
    listed = bench.available_problems()
    assert listed["thirdparty-exp"] == ""
    assert "rosenbrock" in listed
    assert listed["broken"].startswith(
        "the adcompare.problems entry point 'broken' = thirdparty_bench:missing fails to load: "
        "AttributeError"
    )
    with pytest.raises(bench.ProblemError, match="fix or uninstall its package"):
        bench.get_problem("broken")
    peer = get_mode("numpylib:by-hand")
    assert isinstance(peer, PeerMode)
    results = bench.measure(
        "thirdparty-exp", modes=["f", "reverse", "numpylib:by-hand"], sizes=[3], out=None, **QUICK
    )
    cells = {c["mode"]: c for c in results}
    assert cells["numpylib:by-hand"]["status"] == "skipped"  # written with numpy, not xp
    assert cells["reverse"]["check"]["ok"]


def test_the_readme_example_runs_and_draws_a_crossover(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(ROOT / "docs" / "examples" / "mymodel.py"), run_name="__main__")
    folder = tmp_path / "reports" / "latest" / "mymodel"
    assert {p.name for p in folder.iterdir()} >= {"results.json", "report.md", "mymodel.png"}
    text = (folder / "report.md").read_text()
    assert "**mymodel** (m = 4): " in text and 'jacobian(mode="auto") picks' in text
