"""adcompare's pytest plugin: time your own function in each mode, inside pytest-benchmark.

Found through the ``pytest11`` entry point in every pytest run once adcompare
is installed (``-p no:adcompare`` turns it off). It lives outside the
``adcompare`` package and imports adcompare only for a test marked
``adcompare``, so a suite that does not use it pays nothing for it::

    @pytest.mark.adcompare(modes=["f", "forward", "reverse"], n=[8, 64])
    def test_mymodel(adcompare_bench, n):
        adcompare_bench(mymodel, np.linspace(-1.0, 1.0, n))

The marker parametrises the test over the sizes (each passed as the
argument of that name, to build the point with) and the modes; the fixture
checks f's derivative in its mode against the other engine, then times it
with pytest-benchmark's ``benchmark``
(:mod:`adcompare.bench.harness.pytest_cells`). ``pytest --benchmark-json
out.json`` then ``adcompare report out.json`` draws the same plots and
report as ``adcompare bench``.
"""

from __future__ import annotations

import pytest

MARKER = "adcompare"
_OPTIONS = ("modes", "name")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "adcompare(modes, n=None, m=None, name=None): time the function the test gives "
        "adcompare_bench in each mode and at each size (n, m: lists of sizes, passed to the "
        "test as arguments); name the problem in the report (default: the test's name)",
    )


def _sizes(marker) -> dict:
    return {key: value for key, value in marker.kwargs.items() if key not in _OPTIONS}


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    from adcompare.bench.harness.pytest_cells import marked_modes

    where = f"@pytest.mark.adcompare on {metafunc.function.__name__}"
    if marker.args:
        pytest.fail(f"{where} takes keywords only: modes=[...], n=[...], m=[...]", pytrace=False)
    sizes = _sizes(marker)
    problem = None
    try:
        modes = marked_modes(marker.kwargs.get("modes"), sizes)
    except ValueError as error:
        problem = str(error)
    if problem is not None:  # outside the handler: the report shows the sentence alone
        pytest.fail(f"{where}: {problem}", pytrace=False)
    if "adcompare_bench" not in metafunc.fixturenames:
        pytest.fail(
            f"{where}: the test takes no adcompare_bench; take it as an argument and call "
            "adcompare_bench(f, x) in the test",
            pytrace=False,
        )
    for key, values in sizes.items():
        if key not in metafunc.fixturenames:
            pytest.fail(
                f"{where}: the test takes no argument {key}; add {key} to its arguments "
                f"to build its point at each {key}",
                pytrace=False,
            )
        metafunc.parametrize(key, list(values), ids=[f"{key}{v}" for v in values])
    metafunc.parametrize("adcompare_bench", modes, indirect=True, ids=modes)


@pytest.fixture
def adcompare_bench(request, benchmark):
    """Call ``adcompare_bench(f, x)`` (or ``adcompare_bench(f, *args)`` for pytrees) to time
    f's derivative at that point in this test's mode, checked against the other engine
    first; needs ``@pytest.mark.adcompare``."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is None or not hasattr(request, "param"):
        pytest.fail(
            "adcompare_bench needs @pytest.mark.adcompare(modes=[...], n=[...]) on the test: "
            "the marker names the modes and sizes to measure",
            pytrace=False,
        )
    from adcompare.bench.harness.modes import get_mode
    from adcompare.bench.harness.pytest_cells import measure, user_instance
    from adcompare.bench.problems import ProblemError

    mode = get_mode(request.param)
    size = {key: request.node.callspec.params[key] for key in _sizes(marker)}
    name = marker.kwargs.get("name") or request.node.originalname.removeprefix("test_")

    def bench(f, *args) -> None:
        problem = None
        try:
            reason = measure(benchmark, user_instance(f, args, name=name, size=size), mode)
        except ProblemError as error:
            problem = str(error)
        if problem is not None:  # outside the handler: the report shows the sentence alone
            pytest.fail(problem, pytrace=False)
        if reason:
            pytest.skip(reason)

    return bench
