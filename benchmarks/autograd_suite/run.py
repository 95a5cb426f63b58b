"""Run HIPS autograd 1.9.1's own test suite with every derivative from adcompare.

    python benchmarks/autograd_suite/run.py [--sdist PATH] [--out FOLDER] [-k EXPR]

Fetches autograd's sdist with pip (or takes ``--sdist``), extracts its ``tests/`` to a
temporary folder, runs them with pytest against the adapter in ``shim/`` (a stand-in
``autograd`` package first on ``sys.path``), prints the table of outcomes and writes
``outcomes.json`` (every test's outcome, error and message) to ``--out``
(default ``reports/latest/autograd_suite/``, git-ignored). See README.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VERSION = "1.9.1"
OUTCOMES = (
    "pass",
    "wrong value",
    "internal error",
    "refusal",
    "other failure",
    "collection error",
    "skipped",
    "not applicable",
)


def fetch_sdist(folder: pathlib.Path) -> pathlib.Path:
    """autograd's source distribution, downloaded by pip into ``folder`` once."""
    sdist = folder / f"autograd-{VERSION}.tar.gz"
    if not sdist.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             f"autograd=={VERSION}", "-d", str(folder), "-q"],
            check=True,
        )  # fmt: skip
    return sdist


def extract_tests(sdist: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """autograd's ``tests/`` folder from the sdist, extracted under ``into``."""
    prefix = f"autograd-{VERSION}/tests/"
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
        archive.extractall(into, members=members, filter="data")
    return into / prefix


def run_suite(tests: pathlib.Path, out: pathlib.Path, extra: list[str]) -> dict:
    """Run pytest on ``tests`` with the adapter first on the path; the outcomes by test id."""
    results = out / "outcomes.json"
    (tests / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # no outside config
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE / "shim"), str(HERE)]),
        "AUTOGRAD_SUITE_OUT": str(results),
    }
    command = [sys.executable, "-m", "pytest", str(tests), "-p", "outcomes", "-q",
               "-p", "no:cacheprovider", "--no-header", "--tb=no", "-W", "ignore",
               "--continue-on-collection-errors", *extra]  # fmt: skip
    with open(out / "pytest.log", "w", encoding="utf-8") as log:
        subprocess.run(command, env=env, cwd=tests, check=False, stdout=log, stderr=log)
    return json.loads(results.read_text(encoding="utf-8"))


def summary(results: dict) -> str:
    """The table of outcomes, with the pass rates over all tests and applicable ones."""
    counts = collections.Counter(r["outcome"] for r in results.values())
    total = sum(counts.values())
    applicable = total - counts["not applicable"]
    lines = ["| outcome | tests |", "|---|---:|"]
    lines += [f"| {name} | {counts[name]} |" for name in OUTCOMES if counts[name]]
    lines.append(f"| **total** | {total} |")
    passed = counts["pass"]
    lines.append("")
    lines.append(
        f"pass rate: {passed}/{total} = {100 * passed / max(total, 1):.1f} % of all tests, "
    )
    lines.append(
        f"{passed}/{applicable} = {100 * passed / max(applicable, 1):.1f} % of applicable tests"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sdist", type=pathlib.Path, help="autograd's sdist (default: pip download)"
    )
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "reports/latest/autograd_suite")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (-k EXPR, a file)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sdist = args.sdist or fetch_sdist(args.out / "download")
    with tempfile.TemporaryDirectory() as folder:
        tests = extract_tests(sdist, pathlib.Path(folder))
        results = run_suite(tests, args.out, args.pytest_args)
    print(summary(results))
    print(f"every test's outcome: {args.out / 'outcomes.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
