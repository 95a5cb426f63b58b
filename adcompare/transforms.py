"""Transforms: functions in, functions out, plain numpy values at the edges.

``jacfwd`` builds a Jacobian column block by column block: each pass seeds
``k`` lanes of the identity, so ``n`` inputs take ``ceil(n / k)`` passes.
``jacrev`` builds it row by row: one recorded pass, then one backward sweep
per output. ``jacobian(mode="auto")`` picks whichever needs less work and
says why. These functions know nothing about individual ops.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from adcompare.engines.forward import Dual, as_float
from adcompare.engines.reverse import Tensor, enable_grad, run_backward
from adcompare.ops import concatenate, reshape, stack, transpose
from adcompare.ops.registry import Box, new_level, raw, shape_of
from adcompare.runtime import cost

__all__ = [
    "HESSIAN_MODES",
    "ModeChoice",
    "choose_mode",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "register_mode",
    "value_and_grad",
    "vjp",
]

#: How many tangent elements (lanes × inputs) one forward pass may hold: the
#: default chunk is ``min(n, LANE_BUDGET // n)`` lanes. 2**17 float64 values
#: are 1 MiB, so the tangent of an input-sized intermediate stays in a core's
#: cache between the ops that read it; at n = 1000 that is 131 lanes a pass,
#: and 8 such passes run faster than one pass of 1000 lanes.
LANE_BUDGET = 2**17

_EXTRA_MODES: dict[str, dict[str, Callable]] = {}


def register_mode(
    name: str,
    *,
    value_and_grad: Callable,
    jacobian: Callable,
    hessian: Callable | None = None,
) -> None:
    """Make ``mode=name`` available in :func:`grad`, :func:`jacobian` and :func:`hessian`.

    ``value_and_grad(f, argnums)``, ``jacobian(f, argnums)`` and
    ``hessian(f, argnums)`` each return a function of the same arguments as
    ``f``. Used by ``adcompare.symbolic``.
    """
    _EXTRA_MODES[name] = {"value_and_grad": value_and_grad, "jacobian": jacobian}
    if hessian is not None:
        _EXTRA_MODES[name]["hessian"] = hessian


def _argnums(argnums, nargs: int, name: str) -> tuple[int, ...]:
    many = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if many else (argnums,)
    for a in nums:
        if not isinstance(a, (int, np.integer)) or not -nargs <= a < nargs:
            raise ValueError(
                f"{name}: argnums={argnums!r} does not name a positional argument of a "
                f"function called with {nargs} argument(s)"
            )
    return tuple(int(a) % nargs for a in nums)


def _replace(args: tuple, positions: Sequence[int], values: Sequence) -> list:
    args = list(args)
    for p, v in zip(positions, values):
        args[p] = v
    return args


def _dtype_of(value):
    """What decides a value's dtype after ``as_float``: its dtype, or its Python type."""
    return getattr(value, "dtype", type(value))


def _check_array_output(out, name: str):
    if isinstance(out, (tuple, list, dict)):
        raise TypeError(
            f"{name}: the function returned a {type(out).__name__}; return a single array "
            "(stack or concatenate the outputs)"
        )


def _unwrap_tensor(out, level: int):
    """The value and the record of a traced output (record ``None``: constant)."""
    if isinstance(out, Tensor) and out._level == level:
        return out._data, (out._node() if out.requires_grad else None)
    return as_float(out), None


def _record(f, args, positions, level):
    """Run ``f`` with the arguments at ``positions`` as tensors on a fresh tape."""
    leaves = [Tensor._wrap(as_float(args[p]), level, requires_grad=True) for p in positions]
    with enable_grad():
        out = f(*_replace(args, positions, leaves))
    return out, leaves


def _as_output(value):
    """A plain result as a numpy array (boxes of outer transforms pass through)."""
    return value if isinstance(value, Box) else np.asarray(value)


def _sweep(node, cotangent, leaves, *, retain_graph: bool):
    """Cotangents of ``leaves`` after one backward sweep (zeros where unreached)."""
    if node is None:
        return [np.zeros(shape_of(t), dtype=t.dtype) for t in leaves]
    captured = run_backward(
        [node],
        [cotangent],
        retain_graph=retain_graph,
        create_graph=False,
        targets={t._node() for t in leaves},
    )
    return [
        _writeable(captured[t._node()]) if t._node() in captured else np.zeros(t.shape, t.dtype)
        for t in leaves
    ]


def _writeable(value):
    """A gradient the caller may modify in place.

    A cotangent that comes from a sum is a read-only broadcast view; it is
    copied here, once, rather than being expanded inside every rule.
    """
    value = _as_output(value)
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()
    return value


# --- reverse mode ---------------------------------------------------------------


def vjp(f: Callable, *primals):
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(u)`` gives ``uᵀ·J`` for each input.

    The recorded pass is kept, so ``vjp_fn`` may be called many times.

    >>> import adcompare as ad
    >>> out, pullback = ad.vjp(lambda x: x * x, [1.0, 2.0])
    >>> print(pullback([1.0, 1.0])[0])
    [2. 4.]
    """
    level = new_level()
    out, leaves = _record(f, primals, range(len(primals)), level)
    _check_array_output(out, "vjp")
    value, node = _unwrap_tensor(out, level)

    def vjp_fn(cotangent):
        cotangent = as_float(cotangent)
        if shape_of(cotangent) != shape_of(value):
            raise ValueError(
                f"vjp: the cotangent has shape {shape_of(cotangent)} but the output has "
                f"shape {shape_of(value)}; pass one of shape {shape_of(value)}"
            )
        return tuple(_sweep(node, cotangent, leaves, retain_graph=True))

    return value, vjp_fn


def value_and_grad(f: Callable, argnums=0, mode: str = "reverse") -> Callable:
    """A function returning ``(f(*args), gradient)`` for a scalar-valued ``f``.

    ``mode`` is ``"reverse"`` (one sweep), ``"forward"`` (lanes seeded in
    chunks, ``ceil(n / k)`` passes) or a registered mode such as
    ``"symbolic"``.

    >>> import adcompare as ad
    >>> value, g = ad.value_and_grad(lambda x, y: 3 * x**2 + x * y + 5 * y**2, (0, 1))(2.0, 3.0)
    >>> print(value, g[0], g[1])
    63.0 15.0 32.0
    """
    if mode in _EXTRA_MODES:
        return _EXTRA_MODES[mode]["value_and_grad"](f, argnums)
    if mode not in ("reverse", "forward"):
        known = ", ".join(repr(m) for m in ["reverse", "forward", *_EXTRA_MODES])
        raise ValueError(f"value_and_grad: unknown mode {mode!r}; use one of {known}")

    @functools.wraps(f)
    def value_and_gradient(*args):
        positions = _argnums(argnums, len(args), "grad")
        if mode == "forward":
            value, grads = None, []
            for p in positions:
                value, jac = _jacfwd_at(f, args, p, None, scalar=True)
                grads.append(reshape(jac, shape_of(args[p])))
        else:
            level = new_level()
            out, leaves = _record(f, args, positions, level)
            value, node = _unwrap_tensor(out, level)
            _check_scalar(value)
            seed = np.ones(shape_of(value), dtype=np.result_type(raw(value), np.float32))
            grads = _sweep(node, seed, leaves, retain_graph=False)
        many = isinstance(argnums, (tuple, list))
        return value, (tuple(grads) if many else grads[0])

    return value_and_gradient


def _check_scalar(value) -> None:
    if math.prod(shape_of(value)) != 1:
        raise ValueError(
            f"grad needs a function with a scalar output, but this one returned shape "
            f"{shape_of(value)}; use adcompare.jacobian (or jacrev / jacfwd) for array "
            "outputs, or reduce the output (e.g. with sum) first"
        )


def grad(f: Callable, argnums=0, mode: str = "reverse") -> Callable:
    """The gradient of a scalar-valued ``f`` with respect to ``args[argnums]``.

    >>> import adcompare as ad
    >>> f = lambda x, y: 3 * x**2 + x * y + 5 * y**2
    >>> print(ad.grad(f)(2.0, 3.0), ad.grad(f, argnums=1, mode="forward")(2.0, 3.0))
    15.0 32.0
    """
    value_and_gradient = value_and_grad(f, argnums, mode)

    @functools.wraps(f)
    def gradient(*args):
        return value_and_gradient(*args)[1]

    return gradient


def jacrev(f: Callable, argnums=0) -> Callable:
    """The Jacobian, row by row: one recorded pass, one backward sweep per output.

    The result has shape ``out.shape + x.shape``.

    >>> import adcompare as ad
    >>> print(ad.jacrev(lambda x: x**2)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    """

    @functools.wraps(f)
    def jacobian_by_rows(*args):
        positions = _argnums(argnums, len(args), "jacrev")
        level = new_level()
        out, leaves = _record(f, args, positions, level)
        _check_array_output(out, "jacrev")
        value, node = _unwrap_tensor(out, level)
        out_shape = shape_of(value)
        m = math.prod(out_shape)
        dtype = np.result_type(raw(value), np.float32)
        rows = [[] for _ in leaves]
        for i in range(m):
            seed = np.zeros(m, dtype=dtype)
            seed[i] = 1.0
            grads = _sweep(node, seed.reshape(out_shape), leaves, retain_graph=i < m - 1)
            for row, g in zip(rows, grads):
                row.append(g)
        # One output: its single row is the gradient itself, as grad returns it (no copy).
        jacobians = [
            reshape(row[0] if m == 1 else stack(row), out_shape + t.shape)
            if row
            else np.zeros(out_shape + t.shape)
            for row, t in zip(rows, leaves)
        ]
        return tuple(jacobians) if isinstance(argnums, (tuple, list)) else jacobians[0]

    return jacobian_by_rows


# --- forward mode ---------------------------------------------------------------


def jvp(f: Callable, primals: Sequence, tangents: Sequence):
    """``(f(*primals), J·tangents)`` in one forward pass.

    >>> import adcompare as ad
    >>> out, tangent = ad.jvp(ad.sin, (0.0,), (2.0,))
    >>> print(out, tangent)
    0.0 2.0
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(
            f"jvp: {len(primals)} primal(s) but {len(tangents)} tangent(s); give one "
            "tangent per primal"
        )
    level = new_level()
    duals = []
    for p, t in zip(primals, tangents):
        p, t = as_float(p), as_float(t)
        if shape_of(p) != shape_of(t):
            raise ValueError(
                f"jvp: a tangent of shape {shape_of(t)} for a primal of shape {shape_of(p)}; "
                "each tangent must have its primal's shape"
            )
        duals.append(Dual._make(p, reshape(t, (1,) + shape_of(p)), None, level))
    if cost._ACTIVE:
        cost.record_pass()
    out = f(*duals)
    _check_array_output(out, "jvp")
    if isinstance(out, Dual) and out._level == level:
        return _as_output(out.primal), _as_output(out.tangent)
    out = as_float(out)
    return out, np.zeros(shape_of(out), dtype=np.result_type(raw(out), np.float32))


def default_chunk(n: int) -> int:
    """The default number of lanes for ``n`` inputs: all of them, within a budget.

    >>> default_chunk(10), default_chunk(1000), default_chunk(10_000)
    (10, 131, 13)
    """
    return max(1, min(n, LANE_BUDGET // max(n, 1)))


def _jacfwd_at(f, args, position, chunk_size, scalar=False):
    """``(f(*args), J)`` for one argument, J of shape ``out.shape + (n,)``."""
    x = as_float(args[position])
    x_shape = shape_of(x)
    n = math.prod(x_shape)
    k = chunk_size or default_chunk(n)
    if k < 1:
        raise ValueError(f"jacfwd: chunk_size must be a positive integer, not {chunk_size!r}")
    dtype = np.result_type(raw(x), np.float32)
    level = new_level()
    value = None
    blocks = []
    for start in range(0, n, k):
        width = min(k, n - start)
        seeds = np.eye(width, n, k=start, dtype=dtype)
        dual = Dual._make(x, seeds.reshape((width,) + x_shape), width, level)
        if cost._ACTIVE:
            cost.record_pass(width)
        out = f(*_replace(args, [position], [dual]))
        _check_array_output(out, "jacfwd")
        if isinstance(out, Dual) and out._level == level:
            value, block = out.primal, out._tangent
        else:
            value = as_float(out)
            block = np.zeros((width,) + shape_of(value), dtype=dtype)
        if scalar:
            _check_scalar(value)
        blocks.append(block)
    if n == 0:
        value = as_float(f(*args))
        return value, np.zeros(shape_of(value) + (0,), dtype=dtype)
    lanes = blocks[0] if len(blocks) == 1 else concatenate(blocks, axis=0)
    rank = len(shape_of(lanes))
    return _as_output(value), _as_output(transpose(lanes, tuple(range(1, rank)) + (0,)))


def jacfwd(f: Callable, argnums=0, chunk_size: int | None = None) -> Callable:
    """The Jacobian, column block by column block, ``chunk_size`` lanes a pass.

    ``n`` inputs take ``ceil(n / chunk_size)`` forward passes; the default
    chunk takes all inputs at once while ``n * n`` stays within
    ``LANE_BUDGET``. The result has shape ``out.shape + x.shape``.

    >>> import adcompare as ad
    >>> print(ad.jacfwd(lambda x: x**2, chunk_size=1)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    """

    @functools.wraps(f)
    def jacobian_by_columns(*args):
        positions = _argnums(argnums, len(args), "jacfwd")
        jacobians = []
        for p in positions:
            value, jac = _jacfwd_at(f, args, p, chunk_size)
            jacobians.append(reshape(jac, shape_of(value) + shape_of(args[p])))
        return tuple(jacobians) if isinstance(argnums, (tuple, list)) else jacobians[0]

    return jacobian_by_columns


# --- choosing a mode ---------------------------------------------------------------


@dataclass(frozen=True)
class ModeChoice:
    """Which mode ``jacobian(mode="auto")`` used, and why."""

    mode: str
    n_inputs: int
    n_outputs: int
    reason: str

    def __str__(self) -> str:
        return f"{self.mode}: {self.reason}"


def choose_mode(n_inputs: int, n_outputs: int) -> ModeChoice:
    """Pick forward or reverse mode for a Jacobian of ``n_outputs × n_inputs``.

    Forward mode does about ``n_inputs`` passes' worth of tangent work (in
    lanes); reverse mode does one recorded pass and ``n_outputs`` sweeps. On
    a tie forward mode wins, since it keeps no tape.

    >>> choice = choose_mode(1000, 1)
    >>> choice.mode
    'reverse'
    >>> print(choice.reason)
    1 output(s) < 1000 input(s): reverse needs 1 backward sweep(s), forward 1000 lane(s) of
    tangent work
    """
    if n_inputs <= n_outputs:
        return ModeChoice(
            "forward",
            n_inputs,
            n_outputs,
            f"{n_inputs} input(s) <= {n_outputs} output(s): forward needs {n_inputs} lane(s) "
            f"of tangent work, reverse {n_outputs} backward sweep(s) and a tape",
        )
    return ModeChoice(
        "reverse",
        n_inputs,
        n_outputs,
        f"{n_outputs} output(s) < {n_inputs} input(s): reverse needs {n_outputs} backward "
        f"sweep(s), forward {n_inputs} lane(s) of tangent work",
    )


def jacobian(f: Callable, argnums=0, mode: str = "auto", chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``f`` by ``mode``: ``"auto"``, ``"forward"``, ``"reverse"``, ...

    With ``"auto"`` the first call at given input shapes evaluates ``f`` once
    to count its outputs (remembered per shape) and picks the cheaper mode;
    the returned function's ``last_choice`` says which and why.

    >>> import adcompare as ad
    >>> jac = ad.jacobian(lambda x: ad.sum(x * x))
    >>> print(jac([1.0, 2.0, 3.0]), jac.last_choice.mode)
    [2. 4. 6.] reverse
    """
    if mode == "forward":
        return jacfwd(f, argnums, chunk_size)
    if mode == "reverse":
        return jacrev(f, argnums)
    if mode in _EXTRA_MODES:
        return _EXTRA_MODES[mode]["jacobian"](f, argnums)
    if mode != "auto":
        known = ", ".join(repr(m) for m in ["auto", "forward", "reverse", *_EXTRA_MODES])
        raise ValueError(f"jacobian: unknown mode {mode!r}; use one of {known}")
    forward, reverse = jacfwd(f, argnums, chunk_size), jacrev(f, argnums)
    # Per argument signature (shapes and dtypes): the choice and the transform it picked.
    chosen: dict[tuple, tuple[ModeChoice, Callable]] = {}

    @functools.wraps(f)
    def auto_jacobian(*args):
        signature = tuple([(shape_of(a), _dtype_of(a)) for a in args])
        known = chosen.get(signature)
        if known is None:
            positions = _argnums(argnums, len(args), "jacobian")
            n_outputs = math.prod(shape_of(f(*map(as_float, args))))
            n_inputs = sum(math.prod(shape_of(args[p])) for p in positions)
            choice = choose_mode(n_inputs, n_outputs)
            known = chosen[signature] = (choice, forward if choice.mode == "forward" else reverse)
        auto_jacobian.last_choice = known[0]
        return known[1](*args)

    auto_jacobian.last_choice = None
    return auto_jacobian


# --- second derivatives -----------------------------------------------------------

#: The four ways to compose the two modes, outer mode first.
HESSIAN_MODES = ("fwd-over-rev", "rev-over-rev", "fwd-over-fwd", "rev-over-fwd")


def _check_second_order_mode(mode: str, name: str, extra: bool) -> None:
    known = list(HESSIAN_MODES) + (
        [m for m in _EXTRA_MODES if "hessian" in _EXTRA_MODES[m]] if extra else []
    )
    if mode not in known:
        raise ValueError(
            f"{name}: unknown mode {mode!r}; use one of {', '.join(repr(m) for m in known)}"
        )


def hvp(f: Callable, x, v, mode: str = "fwd-over-rev"):
    """The Hessian-vector product ``H(x)·v`` of a scalar-valued ``f``.

    ``mode`` composes the two engines, outer first: ``"fwd-over-rev"`` (a
    JVP of the reverse gradient), ``"rev-over-rev"`` (the gradient of
    ``∇f·v``), ``"rev-over-fwd"`` (the gradient of the JVP ``∇f·v``) and
    ``"fwd-over-fwd"`` (a JVP of the forward gradient, which needs ``n``
    lanes). The first three cost a constant multiple of one gradient.

    >>> import adcompare as ad
    >>> f = lambda x: ad.sum(x**3)
    >>> print(ad.hvp(f, [1.0, 2.0], [1.0, 1.0]), ad.hvp(f, [1.0, 2.0], [1.0, 1.0], "rev-over-fwd"))
    [ 6. 12.] [ 6. 12.]
    """
    _check_second_order_mode(mode, "hvp", extra=False)
    x, v = as_float(x), as_float(v)
    if shape_of(x) != shape_of(v):
        raise ValueError(
            f"hvp: v has shape {shape_of(v)} but x has shape {shape_of(x)}; give v the shape of x"
        )
    if mode == "fwd-over-rev":
        return jvp(grad(f), (x,), (v,))[1]
    if mode == "fwd-over-fwd":
        return jvp(grad(f, mode="forward"), (x,), (v,))[1]
    if mode == "rev-over-rev":
        return grad(lambda y: _inner_sum(grad(f)(y), v))(x)
    return grad(lambda y: jvp(f, (y,), (v,))[1])(x)


def _inner_sum(a, b):
    from adcompare.ops import sum as op_sum

    return op_sum(a * b)


def hessian(f: Callable, argnums: int = 0, mode: str = "fwd-over-rev") -> Callable:
    """The Hessian of a scalar-valued ``f``: ``x.shape + x.shape``.

    Each mode builds it from the matching gradient and Jacobian:
    ``"fwd-over-rev"`` is ``jacfwd(grad(f))`` (n HVPs in lanes),
    ``"rev-over-rev"`` is ``jacrev(grad(f))`` (n reverse sweeps over a
    recorded gradient), ``"fwd-over-fwd"`` is ``jacfwd`` of the forward
    gradient and ``"rev-over-fwd"`` ``jacrev`` of it; a registered mode such
    as ``"symbolic"`` works too.

    >>> import adcompare as ad
    >>> print(ad.hessian(lambda x: x[0] ** 2 * x[1])([1.0, 2.0]))
    [[4. 2.]
     [2. 0.]]
    """
    _check_second_order_mode(mode, "hessian", extra=True)
    if mode in _EXTRA_MODES:
        return _EXTRA_MODES[mode]["hessian"](f, argnums)
    outer, inner = mode.split("-over-")
    gradient = grad(f, argnums, mode="reverse" if inner == "rev" else "forward")
    return (jacfwd if outer == "fwd" else jacrev)(gradient, argnums)
