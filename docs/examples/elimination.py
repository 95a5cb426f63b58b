"""Elimination orders between forward and reverse mode: the counts, the timing, the picture.

Run it with ``python docs/examples/elimination.py`` (about a minute). It prints
the tables of docs/elimination.md's numbers (every count is exact and the same
on every machine; the times are medians of interleaved repeats with the
allocator pinned) and draws ``docs/elimination.png``.
"""

import sys
import time
from pathlib import Path

import numpy as np

import adcompare as ad
from adcompare.bench.harness.env import pin_allocator
from adcompare.bench.problems import get_problem
from adcompare.elimination import ORDERS, draw_order, eliminate, jacobian, linearize
from adcompare.elimination.orders import MAX_EXACT

HEURISTICS = [o for o in ORDERS if o != "optimal"]


def counts(problem: str, **size) -> dict[str, int]:
    """Each order's multiplications on ``problem`` at ``size`` (optimal where it reaches)."""
    instance = get_problem(problem).build(**size)
    graph = linearize(instance.on(ad), instance.x)
    orders = ORDERS if len(graph.intermediates) <= MAX_EXACT else HEURISTICS
    return {order: eliminate(graph, order).multiplications for order in orders}


def hourglass_table(n: int) -> list[str]:
    lines = [
        f"| k | {' | '.join(ORDERS)} | k·n² | (k+1)·n² |",
        "|---:|" + "---:|" * (len(ORDERS) + 2),
    ]
    for k in (1, 2, 4, 8):
        name = "hourglass" if k == 1 else f"hourglass-{k}"
        found = counts(name, n=n, m=n)
        row = " | ".join(f"{found[o]:,}" for o in ORDERS)
        lines.append(f"| {k} | {row} | {k * n * n:,} | {(k + 1) * n * n:,} |")
    return lines


def problem_table(problem: str, sizes: list[int]) -> list[str]:
    lines = [
        f"| n | {' | '.join(ORDERS)} | Markowitz ÷ optimal |",
        "|---:|" + "---:|" * (len(ORDERS) + 1),
    ]
    for n in sizes:
        found = counts(problem, n=n)
        cells = [f"{found[o]:,}" if o in found else "–" for o in ORDERS]
        ratio = f"{found['markowitz'] / found['optimal']:.3f}" if "optimal" in found else "–"
        lines.append(f"| {n} | {' | '.join(cells)} | {ratio} |")
    return lines


def timing(n: int = 1000, rounds: int = 15) -> list[str]:
    """Medians of interleaved repeats on the one-wide hourglass at n = m."""
    pin_allocator()
    instance = get_problem("hourglass").build(n=n, m=n)
    f, x = instance.on(ad), instance.x
    work = {
        "eliminate, markowitz": lambda: jacobian(f, x, "markowitz"),
        "eliminate, forward": lambda: jacobian(f, x, "forward"),
        "jacfwd (chunked)": lambda: ad.jacfwd(f)(x),
        "jacrev (chunked)": lambda: ad.jacrev(f)(x),
    }
    reference = np.asarray(ad.jacrev(f)(x))
    samples = {name: [] for name in work}
    for name, call in work.items():  # warm up, and check every Jacobian once
        assert np.allclose(call(), reference, rtol=1e-12, atol=1e-12), name
    for _ in range(rounds):
        for name, call in work.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    lines = ["| mode | median | min | max |", "|---|---:|---:|---:|"]
    for name, times in samples.items():
        lines.append(
            f"| {name} | {np.median(times) * 1e3:.1f} ms | {min(times) * 1e3:.1f} ms "
            f"| {max(times) * 1e3:.1f} ms |"
        )
    return lines


def element_work(n: int = 64) -> list[str]:
    """Each engine's element work (ad.count) beside the forward and reverse orders' counts."""
    instance = get_problem("hourglass").build(n=n, m=n)
    f, x = instance.on(ad), instance.x
    lines = ["| way | element work or multiplications |", "|---|---:|"]
    for name, jac in (
        ("jacfwd, n lanes", ad.jacfwd(f, chunk_size=n)),
        ("jacrev, m rows", ad.jacrev(f, chunk_size=n)),
    ):
        with ad.count() as cost:
            jac(x)
        lines.append(f"| {name}: element work | {sum(cost.elements.values()):,} |")
    for order in ("forward", "reverse", "markowitz"):
        found = eliminate(linearize(f, x), order).multiplications
        lines.append(f"| eliminate, {order}: multiplications | {found:,} |")
    return lines


def picture(path: Path) -> None:
    """Three orders on a small one-wide hourglass, and each order's count against n."""
    from matplotlib.figure import Figure

    instance = get_problem("hourglass").build(n=4, m=4)
    graph = linearize(instance.on(ad), instance.x)
    figure = Figure(figsize=(13, 5.2), layout="constrained")
    axes = figure.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1, 1.5]})
    titles = ["forward order\n= forward mode", "reverse order\n= reverse mode", "Markowitz"]
    for ax, order, title in zip(axes, ("forward", "reverse", "markowitz"), titles):
        draw_order(ax, graph, order, title)
    sizes = [4, 16, 64, 256, 1024]
    found = {n: counts("hourglass", n=n, m=n) for n in sizes}
    ax = axes[3]
    for order, style in (("forward", "o-"), ("reverse", "x--"), ("markowitz", "s-")):
        ax.plot(sizes, [found[n][order] for n in sizes], style, label=order)
    ax.plot(sizes, [2 * n * n for n in sizes], ":", color="0.4", label="2n²")
    ax.plot(sizes, [n * n for n in sizes], "-.", color="0.4", label="n²")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n = m, the hourglass's width")
    ax.set_ylabel("multiplications")
    ax.set_title("the same orders as the hourglass widens\n(bottleneck one value wide)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    figure.suptitle(
        "Jacobian of tanh(W₂ tanh(W₁ tanh x)), W₁ 1×4, W₂ 4×1, by vertex elimination: a red "
        "number is the step that removes the vertex, the figure beside it what that step "
        "multiplies",
        fontsize=10,
    )
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1]
    print("hourglass, n = m = 64", *hourglass_table(64), sep="\n")
    print("\nhelmholtz", *problem_table("helmholtz", [4, 16, 64, 256]), sep="\n")
    print("\nrobot-arm", *problem_table("robot-arm", [4, 16, 64]), sep="\n")
    print("\nelement work, hourglass n = m = 64", *element_work(), sep="\n")
    print("\ntiming, hourglass n = m = 1000", *timing(), sep="\n")
    picture(out / "elimination.png")
    print(f"\nwrote {out / 'elimination.png'}")
