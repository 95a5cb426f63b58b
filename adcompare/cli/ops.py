"""``adcompare ops``: what adcompare differentiates, read from the op registry.

The README's coverage table is this command's ``--markdown`` output, and a
test keeps the two the same.
"""

from __future__ import annotations

import argparse

from adcompare.ops import COMPOSITES, OPS, stats
from adcompare.ops.registry import BILINEAR, HOLOMORPHIC, LINEAR, SLOPE, WIRTINGER


def _numpy_names(names) -> str:
    spelled = (name if name.startswith("scipy.") else f"np.{name}" for name in names)
    return ", ".join(f"`{name}`" for name in spelled) or "–"


#: The ``rules`` column: how a primitive's derivative rules are given.
RULES = {LINEAR: "linear", BILINEAR: "bilinear", SLOPE: "slope", "": "by hand"}


def coverage_rows() -> list[tuple[str, str, str, str, str]]:
    """``(function, numpy names, kind, complex input, rules)`` for every public op, by name.

    ``rules`` says how ``defop`` got the derivative rules: derived from a
    ``linear`` or ``bilinear`` declaration or a ``slope``, or written by hand.

    >>> [row for row in coverage_rows() if row[0] in ("`sin`", "`sum`", "`erf`")]
    [('`erf`', '`scipy.special.erf`', 'primitive', 'refused', 'slope'), \
('`sin`', '`np.sin`', 'primitive', 'holomorphic', 'slope'), \
('`sum`', '`np.sum`', 'primitive', 'holomorphic', 'linear')]
    """
    rows = []
    for name, op in OPS.items():
        if name.startswith("_") or not op.built_in:
            continue
        complex_input = {HOLOMORPHIC: "holomorphic", WIRTINGER: "Wirtinger rules"}.get(
            op.complex, "refused"
        )
        rules = RULES[op.derived]
        rows.append((f"`{name}`", _numpy_names(op.numpy), "primitive", complex_input, rules))
    for name, composite in COMPOSITES.items():
        numpy = _numpy_names(composite.numpy)
        rows.append((f"`{name}`", numpy, "composite", "as its parts", "its parts'"))
    # scipy.stats' distributions, composed in adcompare.stats (scipy's do not dispatch).
    for distribution in stats.__all__:
        for method in vars(getattr(stats, distribution)):
            name = f"`stats.{distribution}.{method}`"
            rows.append((name, "–", "composite", "as its parts", "its parts'"))
    return sorted(rows)


def derived_count(rows) -> str:
    """How many primitives among ``rows`` have derived rules, by kind, in one sentence.

    >>> derived_count([("a", "", "primitive", "", "linear"), ("b", "", "primitive", "", "by hand")])
    '1 of the 2 primitives have rules derived from structure (1 linear, 0 bilinear, 0 slope).'
    """
    rules = [row[4] for row in rows if row[2] == "primitive"]
    kinds = [RULES[kind] for kind in (LINEAR, BILINEAR, SLOPE)]
    by_kind = ", ".join(f"{rules.count(kind)} {kind}" for kind in kinds)
    derived = sum(rules.count(kind) for kind in kinds)
    return (
        f"{derived} of the {len(rules)} primitives have rules derived from structure ({by_kind})."
    )


def coverage_markdown() -> str:
    """The coverage table in Markdown, with a line counting numpy's functions reached and
    one counting the primitives whose rules are derived.

    >>> print(coverage_markdown().splitlines()[0])  # doctest: +ELLIPSIS
    adcompare differentiates ... functions (... primitives, ... composites); ... numpy ...
    """
    rows = coverage_rows()
    numpy_names = {name for op in OPS.values() if op.built_in for name in op.numpy}
    numpy_names |= {name for composite in COMPOSITES.values() for name in composite.numpy}
    primitives = sum(1 for row in rows if row[2] == "primitive")
    lines = [
        f"adcompare differentiates {len(rows)} functions ({primitives} primitives, "
        f"{len(rows) - primitives} composites); {len(numpy_names)} numpy and SciPy names "
        "dispatch to them when called on a `Tensor` or `Dual`. "
        + derived_count(rows)
        + " A linear op's JVP is the op applied to the tangent, a bilinear op's the op "
        "applied to one tangent at a time, a slope op's the slope times the tangent; "
        "only the VJP (the transpose) or the slope is written.",
        "",
        "| function | numpy's names for it | kind | complex input | rules |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    return "\n".join(lines)


def add_parser(subparsers) -> None:
    """Register ``adcompare ops``."""
    parser = subparsers.add_parser(
        "ops",
        help="list the functions adcompare differentiates, with numpy's names for them",
        description="List every op (primitives with their own derivative rules, composites "
        "built from them) and the numpy names that dispatch to it.",
        epilog="examples:\n  adcompare ops | grep linalg\n  adcompare ops --markdown",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--markdown", action="store_true", help="print the Markdown table the README shows"
    )
    parser.set_defaults(run=_run)


def _run(args) -> int:
    if args.markdown:
        print(coverage_markdown())
        return 0
    rows = [[cell.replace("`", "") for cell in row] for row in coverage_rows()]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4])
    print(derived_count(rows))
    return 0
