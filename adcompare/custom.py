"""User-defined derivative rules: ``custom_jvp`` and ``custom_vjp``, as in JAX.

A decorated function becomes an op of its own (an ``OpDef`` that is not in
the registry), so the engines run its rules exactly as they run a
primitive's, at any nesting level. With only a JVP rule, reverse mode
transposes it: the VJP is the reverse-mode gradient of the rule, which is
linear in the tangents. With only a VJP rule, forward mode refuses, as
JAX does. The symbolic reference ignores the rules and differentiates the
function itself, so :func:`adcompare.check_grad` checks a user's rule
against SymPy and finite differences.

The classic case is a function whose derivative is numerically unsafe
written naively: ``log(1 + exp(x))`` overflows at ``x = 1000`` and its
derivative becomes ``inf / inf``.

>>> import adcompare as ad
>>> @ad.custom_jvp
... def log1pexp(x):
...     return ad.log(1.0 + ad.exp(x))
>>> @log1pexp.defjvp
... def log1pexp_jvp(primals, tangents):
...     (x,), (x_dot,) = primals, tangents
...     return log1pexp(x), (1.0 - 1.0 / (1.0 + ad.exp(x))) * x_dot
>>> import numpy as np
>>> with np.errstate(over="ignore"):  # exp(1000) overflows; the rule copes
...     print(ad.grad(log1pexp)(1000.0), ad.grad(log1pexp, mode="forward")(1000.0))
1.0 1.0
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from adcompare.ops import getitem, stack
from adcompare.ops.registry import OpDef, apply, shape_of
from adcompare.pytree import join_leaves, split_leaves, tree_flatten, tree_unflatten

__all__ = ["custom_jvp", "custom_vjp"]


class _CustomFunction:
    """A function with user-given derivative rules (see :func:`custom_jvp`)."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.jvp_rule: Callable | None = None
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        name = getattr(fun, "__name__", "custom")
        self.layout = None  # the outputs' tree and shapes: the op's value joins them
        self.op = OpDef(
            name=name,
            value=self._joined_value,
            jvp=self._jvp,
            vjp=self._vjp,
            nargs=None,
            label=f"Custom[{name}]",
            batch=self._batch,
        )

    def defjvp(self, rule: Callable) -> Callable:
        """Set the JVP rule ``rule(primals, tangents) -> (out, tangent_out)`` (JAX's form)."""
        self.jvp_rule = rule
        return rule

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the VJP rule: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, g) -> tuple``.

        ``bwd`` returns one cotangent per argument. The residuals are
        recomputed by ``fwd`` in the backward pass, not kept on the tape.
        """
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(
                f"{self.op.name}: a custom-rule function takes positional arrays only; "
                "bind static settings with functools.partial before decorating"
            )
        from adcompare.symbolic import Symbolic

        if any(isinstance(a, Symbolic) for a in args):
            return self.fun(*args)  # the exact reference differentiates the function itself
        flat = apply(self.op, args, {})
        treedef, shapes = self.layout
        return tree_unflatten(treedef, split_leaves(flat, shapes))

    # --- outputs: any tree of arrays (a tuple, a dict), as one array for the engines ----
    def _joined_value(self, *args):
        return self._joined(self.fun(*args))

    def _joined(self, out):
        """``out`` (the function's output, or a tangent of it) as one array."""
        leaves, treedef = tree_flatten(out)
        self.layout = (treedef, [shape_of(leaf) for leaf in leaves])
        return join_leaves(leaves)

    def _split(self, flat):
        treedef, shapes = self.layout
        return tree_unflatten(treedef, split_leaves(flat, shapes))

    # --- the op's rules ---------------------------------------------------------------
    def _no_rule(self) -> TypeError:
        name = self.op.name
        return TypeError(
            f"{name} has no derivative rule yet; give one with {name}.defvjp(fwd, bwd) or "
            f"{name}.defjvp(rule) before differentiating it"
        )

    def _jvp(self, out, primals, tangents):
        if self.jvp_rule is None and self.bwd is None:
            raise self._no_rule()
        if self.jvp_rule is None:
            raise TypeError(
                f"{self.op.name} has a custom VJP rule but no JVP rule, so forward mode "
                "(jvp, jacfwd, grad(mode='forward'), fwd-over-* Hessians) cannot run through "
                f"it; give one with {self.op.name}.defjvp, or use reverse mode"
            )
        # The engine's tangents carry a leading lane axis; the rule takes one direction.
        lanes = shape_of(next(t for t in tangents if t is not None))[0]
        per_lane = []
        for j in range(lanes):
            directions = [
                np.zeros(shape_of(p)) if t is None else getitem(t, j)
                for p, t in zip(primals, tangents)
            ]
            per_lane.append(self._joined(self.jvp_rule(tuple(primals), tuple(directions))[1]))
        return stack(per_lane)

    def _vjp(self, position, out, *rest):
        *args, out_bar = rest
        if self.bwd is not None:
            _, residuals = self.fwd(*args)
            cotangents = self.bwd(residuals, self._split(out_bar))
            if not isinstance(cotangents, (tuple, list)) or len(cotangents) != len(args):
                raise TypeError(
                    f"{self.op.name}: the bwd rule must return a tuple with one cotangent per "
                    f"argument ({len(args)}), not {cotangents!r}"
                )
            found = cotangents[position]
            if found is None:
                return np.zeros(shape_of(args[position]))
            if shape_of(found) != shape_of(args[position]):
                raise ValueError(
                    f"{self.op.name}: the bwd rule's cotangent for argument {position} has "
                    f"shape {shape_of(found)}, but the argument has shape "
                    f"{shape_of(args[position])}; return one shaped like the argument"
                )
            return found
        if self.jvp_rule is None:
            raise self._no_rule()
        from adcompare.transforms import vjp

        # The JVP rule is linear in the tangents: its reverse-mode gradient is the VJP.
        def tangent_out(*directions):
            return self._joined(self.jvp_rule(tuple(args), directions)[1])

        zeros = [np.zeros(shape_of(a)) for a in args]
        return vjp(tangent_out, *zeros)[1](out_bar)[position]

    def _batch(self, args, batched):
        # Rules are written for one example: run them one example at a time.
        size = next(shape_of(a)[0] for a, b in zip(args, batched) if b)
        examples = [[getitem(a, j) if b else a for a, b in zip(args, batched)] for j in range(size)]
        return stack([apply(self.op, example, {}) for example in examples])


def custom_jvp(fun: Callable) -> _CustomFunction:
    """Decorate ``fun`` so that ``fun.defjvp(rule)`` gives its forward-mode rule (JAX's API).

    ``rule(primals, tangents)`` returns ``(fun(*primals), tangent_out)`` for
    one direction. Reverse mode uses the same rule, transposed; both modes
    therefore agree.

    >>> import adcompare as ad
    >>> @custom_jvp
    ... def square(x):
    ...     return x * x
    >>> _ = square.defjvp(lambda p, t: (square(p[0]), 2.0 * p[0] * t[0]))
    >>> print(ad.grad(square)(3.0), ad.jvp(square, (3.0,), (1.0,))[1])
    6.0 6.0
    """
    return _CustomFunction(fun)


def custom_vjp(fun: Callable) -> _CustomFunction:
    """Decorate ``fun`` so that ``fun.defvjp(fwd, bwd)`` gives its reverse-mode rule (JAX's API).

    Forward mode refuses unless a JVP rule is given too (``fun.defjvp``);
    where both are given, the tests check that the modes agree.

    >>> import adcompare as ad
    >>> @custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (ad.clip(g, -1.0, 1.0),))
    >>> print(ad.grad(lambda x: 5.0 * clip_gradient(x))(2.0))
    1.0
    """
    return _CustomFunction(fun)
