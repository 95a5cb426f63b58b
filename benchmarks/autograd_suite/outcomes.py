"""A pytest plugin that sorts each autograd test's outcome (loaded by run.py).

pass            the test passed
wrong value     an assertion on numbers failed (check_grads, a comparison)
internal error  an exception from inside adcompare that names no alternative
refusal         adcompare's documented refusal: one sentence naming what to use instead
not applicable  a test of autograd's own machinery (NOT_APPLICABLE, or a stand-in
                that raises NotApplicableError)
other failure   anything else (an expected exception that did not come); read it
"""

from __future__ import annotations

import json
import os
import re
import signal
import traceback

import pytest

#: Tests of autograd itself, with no adcompare counterpart: file or node id -> why.
NOT_APPLICABLE = {
    "test_vspaces.py": "autograd's VSpace classes (the adapter has its own, for check_grads)",
    "test_logic.py::test_unimplemented_falseyness": "edits autograd's table of VJP rules",
    "test_misc.py::test_const_graph": "autograd's cache of a traced graph",
    "test_misc.py::test_const_graph_args": "autograd's cache of a traced graph",
    "test_wrappers.py::test_custom_where_dtypes": "autograd.numpy.where's own result types on "
    "plain values (no derivative); here autograd.numpy is numpy",
    "test_wrappers.py::test_custom_where": "autograd.numpy.where's keyword form, which numpy "
    "does not have",
    "test_numpy.py::test_make_diagonal": "np.make_diagonal is autograd's own function",
    "test_numpy.py::test_diagonal": "np.make_diagonal is autograd's own function",
    "test_fft.py::test_rfftn_odd_not_implemented": "asserts autograd's own limitation "
    "(NotImplementedError for odd rfftn sizes)",
    "test_wrappers.py::test_wrapped_name_and_docs": "autograd's own docstrings",
    "test_wrappers.py::test_deprecated_defgrad_wrapper": "a deprecated autograd API",
    "test_wrappers.py::test_deprecated_defvjp_wrapper": "a deprecated autograd API",
    "test_wrappers.py::test_deprecated_defvjp_is_zero_wrapper": "a deprecated autograd API",
    "test_wrappers.py::test_deprecated_quick_grad_check_wrapper": "a deprecated autograd API",
}

#: Words of a refusal that says what to do instead (adcompare's error style).
ADVICE = re.compile(
    r"\buse\b|instead|\bpass\b|\bgive\b|build it from|take the value|call adcompare|"
    r"not supported|supports? only|convert|takes no complex input|leave out|"
    r";\s*(call|remove|add|choose|assign)\b",
    re.IGNORECASE,
)
TIMEOUT = int(os.environ.get("AUTOGRAD_SUITE_TIMEOUT", "120"))
RESULTS: dict[str, dict] = {}


def _not_applicable(nodeid: str) -> str | None:
    path, _, name = nodeid.partition("::")
    base = os.path.basename(path)
    name = name.split("[")[0]
    return NOT_APPLICABLE.get(f"{base}::{name}") or NOT_APPLICABLE.get(base)


def _frames(tb) -> list[str]:
    return [frame.f_code.co_filename for frame, _ in traceback.walk_tb(tb)]


def _in_adcompare(filename: str) -> bool:
    return f"{os.sep}adcompare{os.sep}" in filename


def _library(filename: str) -> bool:
    return any(f"{os.sep}{lib}{os.sep}" in filename for lib in ("numpy", "scipy"))


def _raised_by_adcompare(frames: list[str]) -> bool:
    """Whether the innermost frame outside numpy and SciPy is adcompare's: an error of
    adcompare's own, not of the test's code that runs inside adcompare's transforms."""
    innermost = next((f for f in reversed(frames) if not _library(f)), "")
    return _in_adcompare(innermost)


def classify(nodeid: str, excinfo) -> dict:
    """The outcome of a test that raised ``excinfo`` (``None``: it passed)."""
    reason = _not_applicable(nodeid)
    if reason:
        return {"outcome": "not applicable", "why": reason}
    if excinfo is None:
        return {"outcome": "pass"}
    error = excinfo.value
    kind = type(error).__name__
    message = str(error).strip().splitlines()[0][:300] if str(error).strip() else kind
    frames = _frames(excinfo.tb)
    raised_in = frames[-1] if frames else ""
    record = {"error": kind, "message": message, "raised_in": raised_in}
    if kind == "NotApplicableError":
        return {**record, "outcome": "not applicable", "why": message}
    if isinstance(error, AssertionError):
        return {**record, "outcome": "wrong value"}
    inside = _raised_by_adcompare(frames)
    refusable = isinstance(error, (TypeError, ValueError, NotImplementedError, RuntimeError))
    if inside and refusable and ADVICE.search(str(error)):
        return {**record, "outcome": "refusal"}
    if inside:
        return {**record, "outcome": "internal error"}
    return {**record, "outcome": "other failure"}


class TestTimeoutError(Exception):
    """A test ran longer than TIMEOUT seconds."""


def _alarm(signum, frame):
    raise TestTimeoutError(f"the test ran longer than {TIMEOUT} s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if report.skipped:
            RESULTS[item.nodeid] = {"outcome": "skipped", "why": str(report.longrepr)[-200:]}
        else:
            RESULTS[item.nodeid] = classify(item.nodeid, call.excinfo)


def pytest_configure(config):
    import autograd

    shim = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim")
    if not os.path.abspath(autograd.__file__).startswith(shim):
        raise pytest.UsageError(
            f"autograd comes from {autograd.__file__}, not the adapter in {shim}; "
            "run the suite through run.py, which puts the adapter first on the path"
        )


def pytest_collectreport(report):
    if report.failed:
        RESULTS[report.nodeid] = {
            "outcome": "collection error",
            "message": str(report.longrepr).strip().splitlines()[-1][:300],
        }


def pytest_sessionfinish(session):
    with open(os.environ["AUTOGRAD_SUITE_OUT"], "w", encoding="utf-8") as out:
        json.dump(RESULTS, out, indent=1, sort_keys=True)
