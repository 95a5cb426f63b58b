"""``adcompare demo``: the worked example, by both engines, with their costs."""

from __future__ import annotations

import math
import sys

import numpy as np

from adcompare.engines.forward import Dual
from adcompare.engines.reverse import Tensor
from adcompare.runtime.cost import count


def worked_example(x, y):
    """f(x, y) = 3x² + xy + 5y², the example the blog post walks through.

    >>> print(worked_example(2.0, 3.0))
    63.0
    """
    return 3 * x**2 + x * y + 5 * y**2


def demo_lines(x: float = 2.0, y: float = 3.0) -> list[str]:
    """The demo's report: value and gradient by forward and by reverse mode.

    >>> print(demo_lines()[0])
    f(x, y) = 3x² + xy + 5y² at (x, y) = (2, 3)
    """
    lines = [f"f(x, y) = 3x² + xy + 5y² at (x, y) = ({x:g}, {y:g})", ""]
    lines.append(
        f"by hand: f = {worked_example(x, y):g}, ∂f/∂x = 6x + y = {6 * x + y:g}, "
        f"∂f/∂y = x + 10y = {x + 10 * y:g}"
    )
    lines += ["", "forward mode: dual numbers, one tangent per pass"]
    forward_grad = []
    with count() as forward_cost:
        for i, seed in enumerate([(1.0, 0.0), (0.0, 1.0)], start=1):
            out = worked_example(Dual(x, seed[0]), Dual(y, seed[1]))
            forward_grad.append(float(out.tangent))
            lines.append(
                f"  pass {i}: seed (ẋ, ẏ) = ({seed[0]:g}, {seed[1]:g})  ->  "
                f"f = {float(out.primal):g}, df = {float(out.tangent):g}"
            )
    lines.append(
        f"  gradient ({forward_grad[0]:g}, {forward_grad[1]:g}) in 2 forward passes "
        f"({forward_cost.ops['forward']} dual-number op applications)"
    )
    lines += ["", "reverse mode: one recorded pass, then one backward sweep"]
    tx, ty = Tensor(x, requires_grad=True), Tensor(y, requires_grad=True)
    with count() as reverse_cost:
        out = worked_example(tx, ty)
        records, tape_bytes = reverse_cost.tape_records, reverse_cost.tape_bytes
        out.backward()
    lines.append(
        f"  forward pass: f = {out.item():g}, {records} records on the tape "
        f"({tape_bytes} bytes saved for the backward pass)"
    )
    lines.append(f"  backward sweep 1  ->  gradient ({tx.grad.item():g}, {ty.grad.item():g})")
    lines.append(f"  gradient in 1 backward sweep ({reverse_cost.sweeps} sweep)")
    lines += [
        "",
        "Forward mode needs one pass per input; reverse mode one sweep per output.",
        "With 2 inputs and 1 output, reverse mode needs half the passes.",
    ]
    if not np.allclose(forward_grad, [tx.grad.item(), ty.grad.item()]):
        raise AssertionError("forward and reverse mode disagree: please report this")
    return lines


def add_parser(subparsers) -> None:
    """Register ``adcompare demo``."""
    parser = subparsers.add_parser(
        "demo",
        help="the worked example f(x, y) = 3x² + xy + 5y² by both modes",
        description="Compute f(x, y) = 3x² + xy + 5y² and its gradient by forward and "
        "reverse mode, showing how many passes each needs.",
    )
    parser.add_argument("--x", type=float, default=2.0, help="the point's x (default 2)")
    parser.add_argument("--y", type=float, default=3.0, help="the point's y (default 3)")
    parser.set_defaults(run=run)


def run(args) -> int:
    """Carry out ``adcompare demo``: refuse a point where f is not a finite number."""
    try:
        value = worked_example(args.x, args.y)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        print(
            f"adcompare demo: f(x, y) = 3x² + xy + 5y² is not a finite float at "
            f"(x, y) = ({args.x:g}, {args.y:g}); choose finite x and y with |x|, |y| below "
            "about 1e153",
            file=sys.stderr,
        )
        return 2
    lines = demo_lines(args.x, args.y)
    print("\n".join(lines))
    return 0
