"""``adcompare gradbench``: GradBench's tool protocol, its workloads, and the report.

With no other option it serves the protocol on stdin and stdout (as
``python -m adcompare.gradbench``), so GradBench can run adcompare as a tool.
``--run EVAL`` measures the eval's own workloads, each in a fresh server
process; ``--report`` sets the measured ratios beside the published ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

from adcompare.cli.outfolder import LATEST, OutputPathError, check_output_folder, output_folder
from adcompare.durations import format_duration
from adcompare.gradbench.evals import EVAL_NAMES, MODES, get_eval, implemented
from adcompare.gradbench.protocol import serve_stdio
from adcompare.gradbench.published import PublishedUnavailableError, load_published
from adcompare.gradbench.report import report_markdown, workload_lines
from adcompare.gradbench.runner import load_results, measure_workload, merge, select_workloads

DEFAULT_OUT = LATEST / "gradbench"
RESULTS = "results.json"


def _folder(args) -> Path:
    return check_output_folder(output_folder(args.out, "gradbench"))


def _plan(names: list[str], mode: str, which: list[str]) -> list[tuple]:
    """``(eval, concrete mode, workloads)`` for each eval named (``all``: every implemented
    one that answers in ``mode``); a ``ValueError`` saying what to change."""
    every = names == ["all"]
    plan = []
    for name in implemented() if every else names:
        if name not in implemented():
            raise ValueError(
                f"no eval {name!r} here; the implemented ones are {', '.join(implemented())}"
            )
        ev = get_eval(name)
        concrete = ev.resolve(mode) if ev.primal else mode
        if ev.primal and concrete not in (*ev.modes, "auto"):
            if every:
                print(f"{name}: left out, it answers in {', '.join(ev.modes)}", file=sys.stderr)
                continue
            raise ValueError(
                f"the {name} eval answers in modes {', '.join(ev.modes)}, not {concrete}; pick "
                "one of those with --mode"
            )
        plan.append((name, concrete, select_workloads(ev, which)))
    return plan


def _run(args, out: Path) -> int:
    """Measure the chosen workloads one by one, rewriting the results after each."""
    path = out / RESULTS
    failed = 0
    plan = _plan(args.eval, args.mode, args.workloads)
    # Run after run over every workload, so that one workload's runs are spread in time.
    for repeat in range(args.repeat):
        for name, mode, workloads in plan:
            for index, workload in workloads:
                record = measure_workload(name, workload, mode, args.timeout, index)
                record["repeat"] = repeat
                records = merge(path, record)
                (out / "runs.md").write_text("\n".join(workload_lines(records)) + "\n")
                print(_line(record), flush=True)
                failed += record["status"] != "ok"
    print(f"wrote {path} and {out / 'runs.md'}")
    return 1 if failed else 0


def _line(record: dict) -> str:
    """One workload's figures on one line."""
    head = f"{record['eval']} {record['workload']} ({record['mode']}):"
    if record["status"] != "ok":
        return f"{head} {record['status']}: {record.get('error', '')}"
    times = ", ".join(f"{name} {format_duration(s)}" for name, s in record["seconds"].items())
    ratio = f", ratio {record['ratio']:.2f}" if "ratio" in record else ""
    peak = record["peak_bytes"] / 2**20
    return f"{head} {times}{ratio}, peak memory {peak:.0f} MiB"


def _report(out: Path) -> int:
    from adcompare.bench.report.html import write_html

    records = load_results(out / RESULTS)
    if not records:
        print(
            f"adcompare gradbench: no results in {out / RESULTS}; measure first with "
            "adcompare gradbench --run EVAL",
            file=sys.stderr,
        )
        return 2
    try:
        published, unavailable = load_published(), ""
    except PublishedUnavailableError as error:
        published, unavailable = None, str(error)
    path = out / "report.md"
    path.write_text(report_markdown(records, published, unavailable))
    print(f"wrote {path} and {write_html(path)}")
    return 0


def run_command(args) -> int:
    """Serve the protocol, measure an eval's workloads, or write the report."""
    if args.eval is None and not args.report:
        return serve_stdio(args.mode)
    try:
        out = _folder(args)
    except OutputPathError as error:
        print(f"adcompare gradbench: {error}", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print("adcompare gradbench: --repeat must be 1 or more runs", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print(
            "adcompare gradbench: --timeout must be a positive number of seconds", file=sys.stderr
        )
        return 2
    status = _run(args, out) if args.eval is not None else 0
    reported = _report(out) if args.report else 0
    return status or reported


def add_parser(subparsers) -> None:
    """Register ``adcompare gradbench``."""
    parser = subparsers.add_parser(
        "gradbench",
        help="speak GradBench's tool protocol, run its evals' workloads, report the ratios",
        description="Without --run or --report: answer GradBench's messages (newline-"
        "delimited JSON) on stdin and stdout, so GradBench can run adcompare as a tool. "
        "--run measures an eval's own workloads through the same server; --report writes "
        "adcompare's derivative ÷ primal beside GradBench's published ratios.",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="the engine that answers each derivative (default auto: each eval's own choice)",
    )
    parser.add_argument(
        "--run",
        dest="eval",
        nargs="+",
        metavar="EVAL",
        choices=[*EVAL_NAMES, "all"],
        help="measure these evals' workloads (all: every implemented eval)",
    )
    parser.add_argument(
        "--workloads",
        nargs="+",
        default=["small"],
        metavar="W",
        help="small (the first two, default), all, or workload descriptions",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds allowed per response before the workload is stopped (default 600)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="measure every workload K times, each in its own server, run after run over "
        "all of them; the report takes each workload's median ratio (default 1)",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="write report.md and report.html from the results measured so far",
    )
    parser.add_argument(
        "--out", type=Path, help=f"the folder of results and report (default {DEFAULT_OUT})"
    )
    parser.set_defaults(run=run_command)
