"""Run HIPS autograd 1.9.1's own test suite with every derivative from adcompare.

    python benchmarks/autograd_suite/run.py [--sdist PATH] [--out FOLDER] [-k EXPR]

Fetches autograd's sdist with pip (or takes ``--sdist``), extracts its ``tests/`` to a
temporary folder, runs them with pytest against the adapter in ``shim/`` (a stand-in
``autograd`` package first on ``sys.path``), prints the table of outcomes and writes
``outcomes.json`` (every test's outcome, error and message) to ``--out``
(default ``reports/latest/autograd_suite/``, git-ignored). Where HIPS autograd itself
is installed (``pip install autograd==1.9.1``), it also checks reach by name
(``names.py``) and writes ``names.json``. See README.md.
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


def _user_path() -> list[str]:
    """The caller's PYTHONPATH, after the adapter: ``PYTHONPATH=../main run.py`` measures
    the adcompare of another checkout."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


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
        "PYTHONPATH": os.pathsep.join([str(HERE / "shim"), str(HERE), *_user_path()]),
        "AUTOGRAD_SUITE_OUT": str(results),
    }
    command = [sys.executable, "-m", "pytest", str(tests), "-p", "outcomes", "-q",
               "-p", "no:cacheprovider", "--no-header", "--tb=no", "-W", "ignore",
               "--continue-on-collection-errors", *extra]  # fmt: skip
    with open(out / "pytest.log", "w", encoding="utf-8") as log:
        subprocess.run(command, env=env, cwd=tests, check=False, stdout=log, stderr=log)
    return json.loads(results.read_text(encoding="utf-8"))


def check_names(out: pathlib.Path) -> str:
    """Reach by name (names.py), or a sentence saying why it did not run."""
    reference, compared = out / "names_autograd.json", out / "names.json"
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    made = subprocess.run(
        [sys.executable, str(HERE / "names.py"), "--reference", str(reference)],
        env=plain, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        return (
            "names: not checked, HIPS autograd is not installed as the reference "
            "(pip install autograd==1.9.1)"
        )
    env = {**plain, "PYTHONPATH": os.pathsep.join([str(HERE / "shim"), *_user_path()])}
    subprocess.run(
        [sys.executable, str(HERE / "names.py"), "--compare", str(reference), str(compared)],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    results = json.loads(compared.read_text(encoding="utf-8"))
    lines = [f"names: of autograd's {len(results)} differentiable names, adcompare differentiates"]
    for mode in ("reverse", "forward"):
        counts = collections.Counter(r.get(mode, r)["outcome"] for r in results.values())
        parts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
        lines.append(f"  {mode:8} {counts['reached']}/{len(results)} ({parts})")
    lines.append(f"every name's outcome: {compared}")
    return "\n".join(lines)


def summary(results: dict) -> str:
    """The table of outcomes, with the pass rates over all tests and applicable ones."""
    counts = collections.Counter(r["outcome"] for r in results.values())
    total = sum(counts.values())
    ran = total - counts["skipped"]
    applicable = ran - counts["not applicable"]
    lines = ["| outcome | tests |", "|---|---:|"]
    lines += [f"| {name} | {counts[name]} |" for name in OUTCOMES if counts[name]]
    lines.append(f"| **total** | {total} |")
    passed = counts["pass"]
    lines.append("")
    for what, n in (("tests that ran (not skipped)", ran), ("applicable tests", applicable)):
        lines.append(f"pass rate: {passed}/{n} = {100 * passed / max(n, 1):.1f} % of {what}")
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
    print(check_names(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
