"""odeint as an op with two derivative rules: forward sensitivities and the adjoint method.

An ``odeint(..., method="forward")`` or ``method="adjoint"`` call is one
application of :data:`ODEINT`, an op record that is not in the registry (as
``checkpoint`` and ``custom_vjp`` make theirs), so the engines run its rules
as they run a primitive's.

Forward sensitivities (the JVP rule)
    For a tangent (ẏ0, ṗ) the sensitivity S(t) = ∂y(t)/∂(y0, p)·(ẏ0, ṗ)
    solves dS/dt = ∂f/∂y S + ∂f/∂p ṗ, S(t0) = ẏ0. The rule integrates y and
    every lane of S together (one augmented ODE, error-controlled as a whole,
    as CVODES does), and ∂f/∂y S + ∂f/∂p ṗ is one forward-mode evaluation of
    f on dual numbers carrying all the lanes. Reverse mode over a
    ``"forward"`` call computes every sensitivity (one lane per input entry)
    and contracts the output cotangent with them.

The adjoint method (the VJP rule)
    With output cotangents ȳ_k at the times t_k, a(t) = dL/dy(t) solves
    da/dt = -(∂f/∂y)ᵀ a backwards, jumping by ȳ_k at each t_k, and
    dL/dp = ∫ aᵀ ∂f/∂p dt; a(t0) is dL/dy0. Each backward step runs over
    one step of the forward solve with the same tableau; the state y inside
    that step comes from the step's dense output, the step being re-run from
    its start state, which :mod:`adcompare.revolve`'s schedule restores from
    at most ``snapshots`` stored states (``None``: every state is stored).
    ``aᵀ ∂f/∂y`` and ``aᵀ ∂f/∂p`` are one reverse-mode evaluation of f
    (:func:`adcompare.vjp`). Forward mode over an ``"adjoint"`` call is
    refused, as JAX's ``odeint`` refuses it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from adcompare import revolve
from adcompare.engines.forward import Dual
from adcompare.ode.solvers import Settings, combine, dense, solve, step
from adcompare.ops import OpDef, add, concatenate, getitem, reshape, stack, transpose
from adcompare.ops.registry import apply, new_level, shape_of
from adcompare.runtime import cost
from adcompare.transforms import vjp

__all__ = ["DIFFERENTIATED", "ODEINT", "OdeCall"]

#: Where a differentiated argument goes among the static ones (``None`` may be static).
DIFFERENTIATED = object()


class OdeCall:
    """One odeint call: ``f(y, t, *args)``, the output times, how to solve and to
    differentiate. ``static`` holds the arguments that carry no derivative (ints,
    strings, ``None``) at their positions, :data:`DIFFERENTIATED` where a differentiated one
    goes."""

    def __init__(
        self, f: Callable, times: np.ndarray, settings: Settings, *, method, snapshots, static
    ):
        self.f = f
        self.times = times
        self.settings = settings
        self.method = method
        self.snapshots = snapshots
        self.static = static
        self.solution = None
        self._jacobian = None  # (out, every sensitivity) for reverse over "forward"
        self._cotangents = None  # (out_bar, every input's cotangent)

    def rhs(self, dynamic) -> Callable:
        """``dy/dt`` as a function of ``(y, t)``, with the differentiated arguments
        ``dynamic``; a list f returns is stacked, a wrongly shaped one refused."""
        values = iter(dynamic)
        args = [next(values) if s is DIFFERENTIATED else s for s in self.static]

        def rhs(y, t):
            out = self.f(y, t, *args)
            if isinstance(out, (list, tuple)):
                out = stack(list(out))
            if shape_of(out) != shape_of(y):
                raise ValueError(
                    f"odeint: f(y, t, *args) returned shape {shape_of(out)} for a state y of "
                    f"shape {shape_of(y)}; f must return dy/dt shaped like y"
                )
            return out

        return rhs

    def copy(self) -> OdeCall:
        """The same call with nothing solved yet (for one example of a batch)."""
        return OdeCall(
            self.f,
            self.times,
            self.settings,
            method=self.method,
            snapshots=self.snapshots,
            static=self.static,
        )

    def run(self, y0, dynamic):
        """The states at the output times, shape ``(len(t), len(y0))``."""
        self.solution = solve(self.rhs(dynamic), y0, self.times, self.settings)
        return stack(self.solution.outputs)

    def cotangent(self, position: int, values: tuple, out, out_bar):
        """Input ``position``'s cotangent; one backward solve serves every input."""
        if self._cotangents is None or self._cotangents[0] is not out_bar:
            if self.solution is None:  # vmap solved the value one example at a time
                self.run(values[0], values[1:])
            found = (
                adjoint(self, values, out_bar)
                if self.method == "adjoint"
                else self._contract(values, out, out_bar)
            )
            self._cotangents = (out_bar, found)
        return self._cotangents[1][position]

    def _contract(self, values, out, out_bar) -> list:
        """Reverse over forward sensitivities: every input entry's lane, contracted."""
        if self._jacobian is None or self._jacobian[0] is not out:
            sizes = [int(np.prod(shape_of(v), dtype=int)) for v in values]
            ends = np.cumsum(sizes)
            identity = np.eye(int(ends[-1]))
            tangents = [
                identity[:, end - size : end].reshape((-1, *shape_of(v)))
                for v, size, end in zip(values, sizes, ends)
            ]
            every = sensitivities(self, values, tangents)
            self._jacobian = (out, every, sizes, ends)
        _, every, sizes, ends = self._jacobian
        flat_bar = reshape(out_bar, (-1,))
        return [
            reshape(reshape(every[end - size : end], (size, -1)) @ flat_bar, shape_of(v))
            for v, size, end in zip(values, sizes, ends)
        ]


def sensitivities(call: OdeCall, primals, tangents):
    """The output's tangent, lanes first ``(lanes, len(t), len(y0))``: y and every lane's
    sensitivity S integrated as one ODE, ∂f/∂y S + ∂f/∂p ṗ by f on dual numbers."""
    y0, dynamic = primals[0], primals[1:]
    lanes = next(shape_of(t)[0] for t in tangents if t is not None)
    size = shape_of(y0)[0]
    level = new_level()
    duals = [a if d is None else Dual(a, d, level=level) for a, d in zip(dynamic, tangents[1:])]
    rhs = call.rhs(duals)

    def augmented(z, t):
        out = rhs(Dual(z[:size], reshape(z[size:], (lanes, size)), level=level), t)
        if isinstance(out, Dual) and out.level == level:
            return concatenate([out.primal, reshape(out.tangent, (-1,))])
        return concatenate([out, np.zeros(lanes * size)])

    start = np.zeros((lanes, size)) if tangents[0] is None else tangents[0]
    z0 = concatenate([y0, reshape(start, (-1,))])
    states = stack(solve(augmented, z0, call.times, call.settings).outputs)
    return transpose(reshape(states[:, size:], (len(call.times), lanes, size)), (1, 0, 2))


def adjoint(call: OdeCall, values, out_bar) -> list:
    """Every input's cotangent by the adjoint ODE, the forward states by revolve."""
    y0, dynamic = values[0], list(values[1:])
    grid, outputs_at = call.solution.grid, call.solution.outputs_at
    adjoint_state = out_bar[len(call.times) - 1]
    dynamic_bar = [np.zeros(shape_of(v)) for v in dynamic]
    steps = len(grid) - 1
    if steps == 0:
        return [adjoint_state, *dynamic_bar]
    rhs = call.rhs(dynamic)
    held, state = {}, y0
    for action in revolve.actions(steps, steps if call.snapshots is None else call.snapshots):
        kind, i = action[0], action[1]
        if kind == "reverse":
            adjoint_state, dynamic_bar = _reverse_step(
                call, rhs, dynamic, i, state, adjoint_state, dynamic_bar
            )
            if i in outputs_at:
                adjoint_state = add(adjoint_state, out_bar[outputs_at[i]])
        elif kind == "advance":
            state = _advance(call, rhs, state, i, action[2])
        elif kind == "snapshot":
            held[i] = state
        elif kind == "restore":
            state = held[i]
        else:
            del held[i]
    return [adjoint_state, *dynamic_bar]


def _advance(call: OdeCall, rhs, state, start: int, end: int):
    """Re-run the forward steps ``start .. end-1`` on their recorded grid."""
    grid, tableau = call.solution.grid, call.settings.tableau
    with cost.recomputing():
        slope = rhs(state, grid[start])
        for i in range(start, end):
            cost.record_recomputed_step()
            state, slopes = step(rhs, grid[i], grid[i + 1], state, slope, tableau)
            slope = slopes[-1]
    return state


def _reverse_step(call: OdeCall, rhs, dynamic, i: int, y, adjoint_state, dynamic_bar):
    """The adjoint across forward step ``i``, from its end back to its start."""
    t, t_end = call.solution.grid[i], call.solution.grid[i + 1]
    tableau, h = call.settings.tableau, t_end - t
    with cost.recomputing():
        cost.record_recomputed_step()
        _, slopes = step(rhs, t, t_end, y, rhs(y, t), tableau)
    state_slopes, dynamic_slopes = [], []
    for j, c in enumerate(tableau.c):
        stage = combine(adjoint_state, h, tableau.a[j - 1], state_slopes) if j else adjoint_state
        at = dense(y, h, slopes, 1.0 - c, tableau)
        time = t_end - c * h
        _, pullback = vjp(lambda y, *dynamic: call.rhs(dynamic)(y, time), at, *dynamic)
        state_bar, *arguments_bar = pullback(stage)
        state_slopes.append(state_bar)
        dynamic_slopes.append(arguments_bar)
    adjoint_state = combine(adjoint_state, h, tableau.b, state_slopes)
    dynamic_bar = [
        combine(bar, h, tableau.b, [slopes[k] for slopes in dynamic_slopes])
        for k, bar in enumerate(dynamic_bar)
    ]
    return adjoint_state, dynamic_bar


def _value(y0, *dynamic, call: OdeCall):
    return call.run(y0, dynamic)


def _batch(args, batched, call: OdeCall):
    """vmap's rule: each example is its own solve (its own steps), one after another."""
    size = next(shape_of(a)[0] for a, b in zip(args, batched) if b)
    examples = [[getitem(a, j) if b else a for a, b in zip(args, batched)] for j in range(size)]
    return stack([apply(ODEINT, example, {"call": call.copy()}) for example in examples])


def _jvp(out, primals, tangents, call: OdeCall):
    if call.method == "adjoint":
        raise TypeError(
            "odeint(method='adjoint') has a reverse-mode rule only, so forward mode (jvp, "
            "jacfwd, grad(mode='forward')) cannot run through it; use method='forward' (the "
            "sensitivity equations) or method='tape'"
        )
    return sensitivities(call, primals, tangents)


def _vjp(position, out, *rest, call: OdeCall):
    *values, out_bar = rest
    return call.cotangent(position, tuple(values), out, out_bar)


ODEINT = OpDef(
    name="odeint",
    value=_value,
    jvp=_jvp,
    vjp=_vjp,
    nargs=None,
    saves=frozenset({"args", "out"}),
    batch=_batch,
    label="Odeint",
    doc="An ODE solve differentiated by forward sensitivities or by the adjoint method.",
)
