"""The pytest plugin: a user's own function timed in each mode, inside their pytest-benchmark suite.

The README's example file (docs/examples/test_mymodel_bench.py) runs verbatim
under pytester; its JSON goes through ``adcompare report`` to the same plots
and report as the harness, with the crossover the mathematics predicts.
Bad uses get one sentence, and a suite that never uses the plugin never
imports adcompare.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adcompare.bench.harness.from_pytest import from_pytest_benchmark
from adcompare.bench.report.compare import crossovers
from adcompare.cli import main

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "test_mymodel_bench.py"
#: One round each, untimed warm-up: the tests assert counts, never times.
QUICK = ("--benchmark-max-time=0.0001", "--benchmark-min-rounds=1", "--benchmark-warmup=off")


def _element_work(bench: dict) -> int:
    return sum(bench["extra_info"]["counts"]["elements"].values())


def test_the_readme_example_reports_the_crossover_near_n_equal_m(pytester, tmp_path):
    pytester.makepyfile(test_mymodel_bench=EXAMPLE.read_text(encoding="utf-8"))
    out = tmp_path / "out.json"
    result = pytester.runpytest(f"--benchmark-json={out}", *QUICK, "-W", "error")
    result.assert_outcomes(passed=12)
    benchmarks = json.loads(out.read_text(encoding="utf-8"))["benchmarks"]
    work = {(b["extra_info"]["mode"], b["extra_info"]["n"]): _element_work(b) for b in benchmarks}
    assert {b["extra_info"]["m"] for b in benchmarks} == {8}
    assert {b["group"] for b in benchmarks} == {f"mymodel n={n}" for n in (2, 8, 32, 128)}
    for bench in benchmarks:
        check = bench["extra_info"]["check"]
        assert check is None or check["error"] <= check["tolerance"]
    # Forward mode pushes n lanes through f, reverse mode sweeps back once per output
    # (m = 8): per evaluation of f, forward's work grows like n, reverse's stays put.
    forward = {n: work["forward", n] / work["f", n] for n in (2, 8, 32, 128)}
    reverse = {n: work["reverse", n] / work["f", n] for n in (2, 8, 32, 128)}
    assert 0.5 * 128 / 2 < forward[128] / forward[2] < 2 * 128 / 2
    assert max(reverse.values()) < 1.5 * min(reverse.values())
    assert work["forward", 2] < work["reverse", 2] and work["forward", 128] > work["reverse", 128]

    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    (by_work,) = crossovers(
        from_pytest_benchmark(json.loads(out.read_text()), out), "mymodel", "work"
    )
    assert (by_work.winner, by_work.loser, by_work.kind) == ("reverse", "forward", "at")
    assert 2 <= by_work.below < by_work.above <= 32
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "## mymodel" in report and f"from n ≈ {by_work.value:.3g}" in report
    assert (tmp_path / "report" / "mymodel.png").stat().st_size > 10_000
    assert (tmp_path / "report" / "summary.png").stat().st_size > 10_000


WRONG_REVERSE_RULE = """
import numpy as np
import pytest
import adcompare as ad

@ad.custom_vjp
def cube(x):
    return x**3

cube.defvjp(lambda x: (x**3, x), lambda x, g: (2.0 * x**2 * g,))  # the factor is 3, not 2
cube.defjvp(lambda p, t: (p[0] ** 3, 3.0 * p[0] ** 2 * t[0]))

@pytest.mark.adcompare(modes=["forward", "reverse"], n=[3])
def test_cube(adcompare_bench, n):
    adcompare_bench(lambda x: np.sum(cube(x)), np.linspace(0.5, 1.5, n))
"""


def test_a_wrong_derivative_fails_the_users_test(pytester):
    pytester.makepyfile(WRONG_REVERSE_RULE)
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*cube: the reverse derivative disagrees with one forward pass*"])


PYTREES_AND_A_MATRIX = """
import numpy as np
import pytest

def loss(params, data):
    return np.sum((data @ params["w"] + params["b"]) ** 2)

@pytest.mark.adcompare(modes=["reverse"], n=[3])
def test_fit(adcompare_bench, n):
    adcompare_bench(loss, {"w": np.linspace(0.1, 1.0, n), "b": 0.5}, np.ones((4, n)))

@pytest.mark.adcompare(modes=["forward"], n=[3])
def test_outer(adcompare_bench, n):
    adcompare_bench(lambda x: np.outer(x, x), np.ones(n))
"""


def test_pytree_arguments_and_a_matrix_valued_function(pytester, tmp_path):
    pytester.makepyfile(PYTREES_AND_A_MATRIX)
    out = tmp_path / "out.json"
    result = pytester.runpytest(*QUICK, f"--benchmark-json={out}")
    result.assert_outcomes(passed=1, failed=1)
    # The harness differentiates scalars and vectors: one sentence, not a traceback.
    result.stdout.fnmatch_lines(["outer returns an array of shape (3, 3) at n = 3; return a *"])
    assert "Traceback" not in result.stdout.str()
    (bench,) = json.loads(out.read_text(encoding="utf-8"))["benchmarks"]
    # The float leaves are the inputs (w's 3 entries and b); the data's ones are too.
    assert bench["extra_info"]["n"] == 3 + 1 + 4 * 3 and bench["extra_info"]["m"] == 1


MARKED = """
import numpy as np
import pytest

@pytest.mark.adcompare({marker})
def test_mine({arguments}):
    adcompare_bench(np.sin, np.ones(3))
"""


@pytest.mark.parametrize(
    "marker,arguments,sentence",
    [
        (
            "modes=['forward', 'backward'], n=[4]",
            "adcompare_bench, n",
            "unknown mode 'backward'; the modes are f, forward1, forward, reverse1, reverse, *",
        ),
        ("modes='reverse', n=[4]", "adcompare_bench, n", "modes='reverse' is not a list *"),
        (
            "modes=['reverse'], k=[4]",
            "adcompare_bench, k",
            "unknown size k=?4?; the marker sweeps n *",
        ),
        (
            "modes=['reverse'], n=[0, 4]",
            "adcompare_bench, n",
            "n=?0, 4? is not a list of positive whole numbers",
        ),
        ("modes=['reverse'], n=[4]", "adcompare_bench", "the test takes no argument n; add n *"),
        ("modes=['reverse'], n=[4]", "n", "the test takes no adcompare_bench; take it *"),
    ],
)
def test_a_bad_marker_gives_one_sentence(pytester, marker, arguments, sentence):
    pytester.makepyfile(MARKED.format(marker=marker, arguments=arguments))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"@pytest.mark.adcompare on test_mine: {sentence}"])
    assert "Traceback" not in result.stdout.str() and "raise " not in result.stdout.str()


def test_the_fixture_without_the_marker_says_what_it_needs(pytester):
    pytester.makepyfile(MARKED.format(marker="", arguments="adcompare_bench").replace("@", "#"))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*adcompare_bench needs @pytest.mark.adcompare(modes=*"])


def test_a_mode_that_cannot_take_the_function_skips_with_the_reason(pytester, tmp_path):
    pytester.makepyfile(
        "import numpy as np, pytest\n"
        "@pytest.mark.adcompare(modes=['reverse', 'hvp:fwd-over-rev', 'symbolic'], n=[80],\n"
        "                       name='tanh-map')\n"
        "def test_map(adcompare_bench, n):\n"
        "    adcompare_bench(np.tanh, np.linspace(0.0, 1.0, n))\n"
    )
    out = tmp_path / "out.json"
    result = pytester.runpytest(*QUICK, "-rs", f"--benchmark-json={out}")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        ["*HVPs and Hessians are of scalar-valued functions (m = 1)*", "*n·m ≤ 64 (here 80·80)*"]
    )
    (bench,) = json.loads(out.read_text(encoding="utf-8"))["benchmarks"]
    assert bench["group"] == "tanh-map n=80"
    info = bench["extra_info"]
    assert (info["problem"], info["mode"], info["n"], info["m"]) == ("tanh-map", "reverse", 80, 80)
    # m = 80 rows of the Jacobian, carried as the cotangent lanes of one reverse sweep.
    assert (info["counts"]["sweeps"], info["counts"]["cotangent_seeds"]) == (1, 80)


def test_a_suite_that_does_not_use_the_plugin_never_imports_adcompare(pytester):
    pytester.makepyfile(
        "import sys\n"
        "import pytest\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_plain(n):\n"
        "    assert 'adcompare' not in sys.modules\n"
    )
    result = pytester.runpytest_subprocess("-W", "error", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "warning" not in result.stdout.str().lower()
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.adcompare(modes, n=None, m=None, name=None):*"])
