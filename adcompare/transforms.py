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

from adcompare.engines.forward import Dual, as_float, float_dtype, in_dtype
from adcompare.engines.reverse import Tensor, enable_grad, run_backward
from adcompare.ops import concatenate, real, reshape, stack, transpose
from adcompare.ops.registry import Box, new_level, raw, shape_of
from adcompare.pytree import (
    LEAF,
    PyTreeDef,
    is_differentiable_leaf,
    is_leaf,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_unflatten,
)
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
    """The positions ``argnums`` names, in order, repeats kept (as JAX keeps them)."""
    many = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if many else (argnums,)
    for a in nums:
        if not isinstance(a, (int, np.integer)) or not -nargs <= a < nargs:
            raise ValueError(
                f"{name}: argnums={argnums!r} does not name a positional argument of a "
                f"function called with {nargs} argument(s)"
            )
    return tuple(int(a) % nargs for a in nums)


def _replace(args: Sequence, positions: Sequence[int], values: Sequence) -> list:
    args = list(args)
    for p, v in zip(positions, values):
        args[p] = v
    return args


def _dtype_of(value):
    """What decides a value's dtype after ``as_float``: its dtype, or its Python type."""
    return getattr(value, "dtype", type(value))


class _Flat:
    """The differentiated arguments of one call, flattened into their leaves.

    Only *active* leaves are differentiated: floating arrays and numbers
    (and any leaf that is a whole argument). Static leaves (``None``,
    strings, ints inside a container) pass through, and get ``None`` as
    their derivative. A position named twice in ``argnums`` is
    differentiated once and its result repeated, as JAX does.
    """

    def __init__(self, args: tuple, argnums, name: str):
        self.args = args
        self.many = isinstance(argnums, (tuple, list))
        self.requested = _argnums(argnums, len(args), name)
        self.positions = tuple(dict.fromkeys(self.requested))
        self.leaves: list = []
        self.trees: dict[int, tuple[PyTreeDef, list, list]] = {}
        for p in self.positions:
            arg = args[p]
            if arg is None or isinstance(arg, (str, bytes)):
                raise TypeError(
                    f"{name}: argument {p} is {arg!r}, which has no derivative; pass an array "
                    "or a container of arrays (a None inside a container is a static leaf), "
                    f"or leave position {p} out of argnums"
                )
            leaves, treedef = ([arg], LEAF) if is_leaf(arg) else tree_flatten(arg)
            whole = treedef is LEAF
            slots = []
            for k, leaf in enumerate(leaves):
                if not whole and isinstance(leaf, Tensor) and not leaf.requires_grad:
                    # A state_dict's tensors carry no derivative: take their values.
                    leaf = leaves[k] = np.asarray(leaf.data)
                if whole or is_differentiable_leaf(leaf):
                    slots.append(len(self.leaves))
                    self.leaves.append(as_float(leaf))
                else:
                    slots.append(None)
            self.trees[p] = (treedef, leaves, slots)

    @property
    def simple(self) -> bool:
        """Each position named once and each a single array: no flattening needed."""
        return len(self.positions) == len(self.requested) and all(
            treedef.kind is None for treedef, _, _ in self.trees.values()
        )

    def call(self, f: Callable, active: Sequence):
        """``f`` at the arguments, with ``active`` in place of the active leaves."""
        args = list(self.args)
        for p, (treedef, leaves, slots) in self.trees.items():
            if treedef is LEAF:
                args[p] = active[slots[0]]
            else:
                args[p] = tree_unflatten(
                    treedef, [leaf if s is None else active[s] for leaf, s in zip(leaves, slots)]
                )
        return f(*args)

    def function(self, f: Callable) -> Callable:
        """``f`` as a function of the active leaves alone."""

        def of_leaves(*active):
            return self.call(f, active)

        return of_leaves

    def build(self, per_leaf: Callable[[int], object]):
        """The arguments' structure with ``per_leaf(i)`` at active leaf ``i``, None at static ones.

        One tree for an integer ``argnums``, a tuple of trees (repeats
        included, each with arrays of its own) for a tuple.
        """
        trees = []
        done: set[int] = set()
        for p in self.requested:
            treedef, _, slots = self.trees[p]
            if treedef is LEAF and p not in done:
                done.add(p)
                trees.append(per_leaf(slots[0]))
                continue
            values = [None if s is None else per_leaf(s) for s in slots]
            if p in done:
                values = [v.copy() if isinstance(v, np.ndarray) else v for v in values]
            done.add(p)
            trees.append(tree_unflatten(treedef, values))
        return tuple(trees) if self.many else trees[0]


def _no_none(out, name: str) -> None:
    if out is None:
        raise TypeError(
            f"{name}: the function returned None; did it forget a `return`? Return the "
            "value to differentiate (an output that does not depend on the inputs is fine)"
        )


def _split_aux(out, has_aux: bool, name: str):
    """``(output, aux)``: the function's output, and its auxiliary data if ``has_aux``."""
    _no_none(out, name)
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(
            f"{name}: with has_aux=True the function must return a pair (output, aux), "
            f"but it returned a {type(out).__name__}"
        )
    _no_none(out[0], name)
    return out[0], out[1]


def _check_scalar_output(out, name: str) -> None:
    if not is_leaf(out):
        raise TypeError(
            f"{name} needs a function with a scalar output, but this one returned a "
            f"{type(out).__name__}; use adcompare.jacobian (or jacrev / jacfwd) for several "
            f"outputs, or {name}(f, has_aux=True) with f returning (loss, aux) to "
            "differentiate the first and carry the rest along"
        )


def _is_static_output(leaf) -> bool:
    return leaf is None or isinstance(leaf, (str, bytes))


def _strip(aux, level: int):
    """Auxiliary data with this transform's boxes replaced by their values."""
    if aux is None:
        return None
    return tree_map(
        lambda v: _as_output(v._raw_value()) if isinstance(v, Box) and v._level == level else v,
        aux,
    )


def _unwrap_tensor(out, level: int):
    """The value and the record of a traced output (record ``None``: constant)."""
    if isinstance(out, Tensor) and out._level == level:
        return out._data, (out._node() if out.requires_grad else None)
    return as_float(out), None


def _record(f, flat: _Flat, level: int):
    """Run ``f`` with the active leaves as tensors on a fresh tape."""
    leaves = [Tensor._wrap(value, level, requires_grad=True) for value in flat.leaves]
    with enable_grad():
        out = flat.call(f, leaves)
    return out, leaves


def _as_output(value):
    """A plain result as a numpy array (boxes of outer transforms pass through)."""
    return value if isinstance(value, Box) else np.asarray(value)


def _sweep(nodes, cotangents, leaves, *, retain_graph: bool):
    """Cotangents of ``leaves`` after one backward sweep (zeros where unreached).

    ``nodes`` holds ``None`` for outputs that do not depend on the inputs.
    """
    roots = [(n, c) for n, c in zip(nodes, cotangents) if n is not None]
    if not roots:
        return [np.zeros(shape_of(t), dtype=t.dtype) for t in leaves]
    captured = run_backward(
        [n for n, _ in roots],
        [c for _, c in roots],
        retain_graph=retain_graph,
        create_graph=False,
        targets={t._node() for t in leaves},
    )
    return [
        _writeable(in_dtype(_real_if_real(t, captured[t._node()]), t.dtype))
        if t._node() in captured
        else np.zeros(t.shape, t.dtype)
        for t in leaves
    ]


def _real_if_real(leaf, cotangent):
    """A real input's cotangent is the real part of what reaches it (``x * 1j`` sends
    ``1j * u`` back): the pairing ``Re(cotangent * tangent)`` sees only that part."""
    if np.result_type(raw(cotangent)).kind == "c" and np.result_type(raw(leaf)).kind != "c":
        return real(cotangent)
    return cotangent


def _writeable(value):
    """A gradient the caller may modify in place.

    A cotangent that comes from a sum is a read-only broadcast view; it is
    copied here, once, rather than being expanded inside every rule.
    """
    value = _as_output(value)
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()
    return value


def _traced_outputs(out, level: int, name: str):
    """The output's leaves as ``(value, record)`` pairs (``None`` pairs for static leaves)."""
    leaves, treedef = tree_flatten(out)
    pairs = [(None, None) if _is_static_output(o) else _unwrap_tensor(o, level) for o in leaves]
    return pairs, treedef


# --- reverse mode ---------------------------------------------------------------


def vjp(f: Callable, *primals, has_aux: bool = False):
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(u)`` gives ``uᵀ·J`` for each input.

    Inputs, outputs and cotangents may be pytrees; ``vjp_fn`` takes a
    cotangent shaped like the output and returns one result per primal,
    shaped like it. The recorded pass is kept, so ``vjp_fn`` may be called
    many times. With ``has_aux`` the function returns ``(output, aux)`` and
    ``vjp`` returns ``(output, vjp_fn, aux)``.

    >>> import adcompare as ad
    >>> out, pullback = ad.vjp(lambda x: x * x, [1.0, 2.0])
    >>> print(pullback([1.0, 1.0])[0])
    [2. 4.]
    >>> out, pullback = ad.vjp(lambda p: {"y": p["a"] * p["b"]}, {"a": 2.0, "b": 3.0})
    >>> pullback({"y": 1.0})
    ({'a': array(3.), 'b': array(2.)},)
    """
    flat = _Flat(primals, tuple(range(len(primals))), "vjp")
    level = new_level()
    out, leaves = _record(f, flat, level)
    out, aux = _split_aux(out, has_aux, "vjp")
    pairs, out_def = _traced_outputs(out, level, "vjp")
    value = tree_unflatten(out_def, [v for v, _ in pairs])

    def vjp_fn(cotangent):
        cotangents, cotangent_def = tree_flatten(cotangent)
        if cotangent_def != out_def:
            raise ValueError(
                f"vjp: the cotangent has structure {cotangent_def} but the output has "
                f"{out_def}; pass a cotangent shaped like the output"
            )
        nodes, seeds = [], []
        for c, (v, node) in zip(cotangents, pairs):
            if v is None:
                continue
            c = as_float(c)
            if shape_of(c) != shape_of(v):
                raise ValueError(
                    f"vjp: the cotangent has shape {shape_of(c)} but the output has "
                    f"shape {shape_of(v)}; pass one of shape {shape_of(v)}"
                )
            nodes.append(node)
            seeds.append(c)
        grads = _sweep(nodes, seeds, leaves, retain_graph=True)
        return flat.build(grads.__getitem__)

    if has_aux:
        return value, vjp_fn, _strip(aux, level)
    return value, vjp_fn


def value_and_grad(
    f: Callable, argnums=0, mode: str = "reverse", has_aux: bool = False
) -> Callable:
    """A function returning ``(f(*args), gradient)`` for a scalar-valued ``f``.

    ``mode`` is ``"reverse"`` (one sweep), ``"forward"`` (lanes seeded in
    chunks, ``ceil(n / k)`` passes) or a registered mode such as
    ``"symbolic"``. The gradient is shaped like the argument: a dict of
    parameters gives a dict of gradients. With ``has_aux`` the function
    returns ``(loss, aux)`` and the result is ``((loss, aux), gradient)``,
    as in JAX.

    >>> import adcompare as ad
    >>> value, g = ad.value_and_grad(lambda x, y: 3 * x**2 + x * y + 5 * y**2, (0, 1))(2.0, 3.0)
    >>> print(value, g[0], g[1])
    63.0 15.0 32.0
    >>> (loss, aux), g = ad.value_and_grad(lambda x: (x**2, "note"), has_aux=True)(3.0)
    >>> print(loss, aux, g)
    9.0 note 6.0
    """
    if mode not in ("reverse", "forward", *_EXTRA_MODES):
        known = ", ".join(repr(m) for m in ["reverse", "forward", *_EXTRA_MODES])
        raise ValueError(f"value_and_grad: unknown mode {mode!r}; use one of {known}")

    @functools.wraps(f)
    def value_and_gradient(*args):
        flat = _Flat(args, argnums, "grad")
        if mode in _EXTRA_MODES:
            return _extra_value_and_grad(f, args, argnums, flat, mode, has_aux)
        aux = None
        if mode == "forward":
            grads = []
            for i in range(len(flat.leaves)):
                values, aux, _, jacobians = _jacfwd_at(
                    f, flat, i, None, has_aux, "grad", scalar=True
                )
                value = values[0]
                grads.append(reshape(jacobians[0], shape_of(flat.leaves[i])))
            if not flat.leaves:
                value, aux = _split_aux(flat.call(f, flat.leaves), has_aux, "grad")
                _check_scalar_output(value, "grad")
                value = as_float(value)
                _check_scalar(value)
        else:
            level = new_level()
            out, leaves = _record(f, flat, level)
            out, aux = _split_aux(out, has_aux, "grad")
            _check_scalar_output(out, "grad")
            value, node = _unwrap_tensor(out, level)
            _check_scalar(value)
            seed = np.ones(shape_of(value), dtype=float_dtype(value))
            grads = _sweep([node], [seed], leaves, retain_graph=False)
            aux = _strip(aux, level)
        gradient = flat.build(grads.__getitem__)
        return ((value, aux) if has_aux else value), gradient

    return value_and_gradient


def _extra_value_and_grad(f, args, argnums, flat: _Flat, mode: str, has_aux: bool):
    """``value_and_grad`` in a registered mode, through the active leaves when needed."""
    extra = _EXTRA_MODES[mode]["value_and_grad"]
    if flat.simple and not has_aux:
        return extra(f, argnums)(*args)
    aux = None
    if has_aux:
        aux = _split_aux(flat.call(f, flat.leaves), True, "grad")[1]

    def output_only(*active):
        out = _split_aux(flat.call(f, active), has_aux, "grad")[0]
        _check_scalar_output(out, "grad")
        return out

    value, grads = extra(output_only, tuple(range(len(flat.leaves))))(*flat.leaves)
    return ((value, aux) if has_aux else value), flat.build(grads.__getitem__)


def _check_scalar(value) -> None:
    if math.prod(shape_of(value)) != 1:
        raise ValueError(
            f"grad needs a function with a scalar output, but this one returned shape "
            f"{shape_of(value)}; use adcompare.jacobian (or jacrev / jacfwd) for array "
            "outputs, or reduce the output (e.g. with sum) first"
        )


def grad(f: Callable, argnums=0, mode: str = "reverse", has_aux: bool = False) -> Callable:
    """The gradient of a scalar-valued ``f`` with respect to ``args[argnums]``.

    The gradient has the structure of the argument (a pytree of arrays);
    leaves that are not floating arrays (``None``, strings, ints) are static
    and their gradient is ``None``. A position named twice in ``argnums``
    gives its gradient twice, as in JAX. With ``has_aux`` the function
    returns ``(loss, aux)`` and ``grad`` returns ``(gradient, aux)``.

    >>> import adcompare as ad
    >>> f = lambda x, y: 3 * x**2 + x * y + 5 * y**2
    >>> print(ad.grad(f)(2.0, 3.0), ad.grad(f, argnums=1, mode="forward")(2.0, 3.0))
    15.0 32.0
    >>> ad.grad(lambda p: p["w"] * p["b"] + p["n"])({"w": 2.0, "b": 3.0, "n": 1})
    {'b': array(2.), 'n': None, 'w': array(3.)}
    """
    value_and_gradient = value_and_grad(f, argnums, mode, has_aux)

    @functools.wraps(f)
    def gradient(*args):
        value, g = value_and_gradient(*args)
        return (g, value[1]) if has_aux else g

    return gradient


def jacrev(f: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The Jacobian, row by row: one recorded pass, one backward sweep per output.

    For array input and output the result has shape ``out.shape + x.shape``.
    For pytrees it nests the output's structure over the input's, as JAX
    does: ``J[out_key][in_key]`` has shape ``out_leaf.shape + in_leaf.shape``.
    With ``has_aux`` the result is ``(jacobian, aux)``.

    >>> import adcompare as ad
    >>> print(ad.jacrev(lambda x: x**2)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    >>> ad.jacrev(lambda p: (p["a"] * p["b"], p["a"]))({"a": 2.0, "b": 3.0})
    ({'a': array(3.), 'b': array(2.)}, {'a': array(1.), 'b': array(0.)})
    """

    @functools.wraps(f)
    def jacobian_by_rows(*args):
        flat = _Flat(args, argnums, "jacrev")
        level = new_level()
        out, leaves = _record(f, flat, level)
        out, aux = _split_aux(out, has_aux, "jacrev")
        pairs, out_def = _traced_outputs(out, level, "jacrev")
        sweeps_left = sum(math.prod(shape_of(v)) for v, node in pairs if node is not None)
        blocks = []
        for value, node in pairs:
            if value is None:
                blocks.append(None)
                continue
            out_shape = shape_of(value)
            m = math.prod(out_shape)
            dtype = float_dtype(value)
            rows = [[] for _ in leaves]
            for i in range(m):
                seed = np.zeros(m, dtype=dtype)
                seed[i] = 1.0
                if node is not None:
                    sweeps_left -= 1
                grads = _sweep(
                    [node], [seed.reshape(out_shape)], leaves, retain_graph=sweeps_left > 0
                )
                for row, g in zip(rows, grads):
                    row.append(g)
            # One output: its single row is the gradient itself, as grad returns it (no copy).
            blocks.append(
                [
                    reshape(row[0] if m == 1 else stack(row), out_shape + t.shape)
                    if row
                    else np.zeros(out_shape + t.shape, t.dtype)
                    for row, t in zip(rows, leaves)
                ]
            )
        jacobian = _nest(out_def, blocks, flat)
        return (jacobian, _strip(aux, level)) if has_aux else jacobian

    return jacobian_by_rows


def _nest(out_def: PyTreeDef, blocks: list, flat: _Flat):
    """The output's structure over the input's: ``blocks[j][i]`` for output j, input leaf i."""
    return tree_unflatten(
        out_def, [None if block is None else flat.build(block.__getitem__) for block in blocks]
    )


# --- forward mode ---------------------------------------------------------------


def jvp(f: Callable, primals: Sequence, tangents: Sequence):
    """``(f(*primals), J·tangents)`` in one forward pass.

    Primals and tangents may be pytrees of the same structure; the output
    tangent has the output's structure.

    >>> import adcompare as ad
    >>> out, tangent = ad.jvp(ad.sin, (0.0,), (2.0,))
    >>> print(out, tangent)
    0.0 2.0
    >>> ad.jvp(lambda p: p["a"] * p["b"], ({"a": 2.0, "b": 3.0},), ({"a": 1.0, "b": 0.0},))
    (array(6.), array(3.))
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(
            f"jvp: {len(primals)} primal(s) but {len(tangents)} tangent(s); give one "
            "tangent per primal"
        )
    flat = _Flat(primals, tuple(range(len(primals))), "jvp")
    flat_tangents = []
    for p, t in enumerate(tangents):
        treedef, _, slots = flat.trees[p]
        tangent_leaves, tangent_def = tree_flatten(t)
        if tangent_def != treedef:
            raise ValueError(
                f"jvp: tangent {p} has structure {tangent_def} but its primal has {treedef}; "
                "give each tangent its primal's structure"
            )
        flat_tangents += [as_float(t) for t, s in zip(tangent_leaves, slots) if s is not None]
    level = new_level()
    duals = []
    for p, t in zip(flat.leaves, flat_tangents):
        if shape_of(p) != shape_of(t):
            raise ValueError(
                f"jvp: a tangent of shape {shape_of(t)} for a primal of shape {shape_of(p)}; "
                "each tangent must have its primal's shape"
            )
        duals.append(Dual._make(p, reshape(t, (1,) + shape_of(p)), None, level))
    if cost._ACTIVE:
        cost.record_pass()
    out = flat.call(f, duals)
    _no_none(out, "jvp")
    out_leaves, out_def = tree_flatten(out)
    values, out_tangents = [], []
    for o in out_leaves:
        if _is_static_output(o):
            values.append(o)
            out_tangents.append(None)
        elif isinstance(o, Dual) and o._level == level:
            values.append(_as_output(o.primal))
            out_tangents.append(_as_output(o.tangent))
        else:
            o = as_float(o)
            values.append(o)
            out_tangents.append(np.zeros(shape_of(o), dtype=float_dtype(o)))
    return tree_unflatten(out_def, values), tree_unflatten(out_def, out_tangents)


def default_chunk(n: int) -> int:
    """The default number of lanes for ``n`` inputs: all of them, within a budget.

    >>> default_chunk(10), default_chunk(1000), default_chunk(10_000)
    (10, 131, 13)
    """
    return max(1, min(n, LANE_BUDGET // max(n, 1)))


def _jacfwd_at(f, flat: _Flat, position: int, chunk_size, has_aux, name, scalar=False):
    """The Jacobian of every output leaf with respect to one active input leaf.

    Returns ``(values, aux, out_def, jacobians)``, each Jacobian of shape
    ``out.shape + (n,)`` (``None`` for a static output leaf).
    """
    x = flat.leaves[position]
    x_shape = shape_of(x)
    n = math.prod(x_shape)
    k = chunk_size or default_chunk(n)
    if k < 1:
        raise ValueError(f"jacfwd: chunk_size must be a positive integer, not {chunk_size!r}")
    dtype = float_dtype(x)
    level = new_level()
    values, aux, out_def, blocks = [], None, None, None
    for start in range(0, n, k):
        width = min(k, n - start)
        seeds = np.eye(width, n, k=start, dtype=dtype)
        dual = Dual._make(x, seeds.reshape((width,) + x_shape), width, level)
        if cost._ACTIVE:
            cost.record_pass()
        out, aux = _split_aux(
            flat.call(f, _replace(flat.leaves, [position], [dual])), has_aux, name
        )
        if scalar:
            _check_scalar_output(out, name)
        out_leaves, out_def = tree_flatten(out)
        blocks = blocks or [[] for _ in out_leaves]
        values = []
        for o, block in zip(out_leaves, blocks):
            if _is_static_output(o):
                values.append(None)
            elif isinstance(o, Dual) and o._level == level:
                values.append(o.primal)
                block.append(o._tangent)
            else:
                values.append(as_float(o))
                block.append(np.zeros((width,) + shape_of(values[-1]), dtype=dtype))
        if scalar:
            _check_scalar(values[0])
        aux = _strip(aux, level)
    if n == 0:
        out, aux = _split_aux(flat.call(f, flat.leaves), has_aux, name)
        out_leaves, out_def = tree_flatten(out)
        values = [None if _is_static_output(o) else as_float(o) for o in out_leaves]
        jacobians = [
            None if v is None else np.zeros(shape_of(v) + (0,), dtype=dtype) for v in values
        ]
        return values, aux, out_def, jacobians
    jacobians = []
    for block in blocks:
        if not block:
            jacobians.append(None)
            continue
        lanes = block[0] if len(block) == 1 else concatenate(block, axis=0)
        rank = len(shape_of(lanes))
        jacobian = _as_output(transpose(lanes, tuple(range(1, rank)) + (0,)))
        jacobians.append(in_dtype(jacobian, dtype))
    return [None if v is None else _as_output(v) for v in values], aux, out_def, jacobians


def jacfwd(
    f: Callable, argnums=0, chunk_size: int | None = None, has_aux: bool = False
) -> Callable:
    """The Jacobian, column block by column block, ``chunk_size`` lanes a pass.

    ``n`` inputs take ``ceil(n / chunk_size)`` forward passes; the default
    chunk takes all inputs at once while ``n * n`` stays within
    ``LANE_BUDGET``. For arrays the result has shape ``out.shape +
    x.shape``; for pytrees it nests the output's structure over the input's,
    as :func:`jacrev` does. With ``has_aux`` the result is ``(jacobian, aux)``.

    >>> import adcompare as ad
    >>> print(ad.jacfwd(lambda x: x**2, chunk_size=1)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    """

    @functools.wraps(f)
    def jacobian_by_columns(*args):
        flat = _Flat(args, argnums, "jacfwd")
        columns = []
        values, aux, out_def = [], None, None
        for i in range(len(flat.leaves)):
            values, aux, out_def, jacobians = _jacfwd_at(f, flat, i, chunk_size, has_aux, "jacfwd")
            columns.append(
                [
                    None if v is None else reshape(jac, shape_of(v) + shape_of(flat.leaves[i]))
                    for v, jac in zip(values, jacobians)
                ]
            )
        if not flat.leaves:
            out, aux = _split_aux(flat.call(f, flat.leaves), has_aux, "jacfwd")
            out_leaves, out_def = tree_flatten(out)
            values = [None if _is_static_output(o) else o for o in out_leaves]
        blocks = [
            None if v is None else [column[j] for column in columns] for j, v in enumerate(values)
        ]
        jacobian = _nest(out_def, blocks, flat)
        return (jacobian, aux) if has_aux else jacobian

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


def jacobian(
    f: Callable,
    argnums=0,
    mode: str = "auto",
    chunk_size: int | None = None,
    has_aux: bool = False,
) -> Callable:
    """The Jacobian of ``f`` by ``mode``: ``"auto"``, ``"forward"``, ``"reverse"``, ...

    With ``"auto"`` the first call at given input shapes evaluates ``f`` once
    to count its outputs (remembered per shape) and picks the cheaper mode;
    the returned function's ``last_choice`` says which and why. Pytrees nest
    the output's structure over the input's, as in :func:`jacrev`.

    >>> import adcompare as ad
    >>> jac = ad.jacobian(lambda x: ad.sum(x * x))
    >>> print(jac([1.0, 2.0, 3.0]), jac.last_choice.mode)
    [2. 4. 6.] reverse
    """
    if mode == "forward":
        return jacfwd(f, argnums, chunk_size, has_aux)
    if mode == "reverse":
        return jacrev(f, argnums, has_aux)
    if mode in _EXTRA_MODES:
        if has_aux:
            raise ValueError(
                f"jacobian: has_aux is not supported with mode={mode!r}; use mode='forward' "
                "or 'reverse', or return the output alone"
            )
        return _extra_jacobian(f, argnums, mode)
    if mode != "auto":
        known = ", ".join(repr(m) for m in ["auto", "forward", "reverse", *_EXTRA_MODES])
        raise ValueError(f"jacobian: unknown mode {mode!r}; use one of {known}")
    forward, reverse = jacfwd(f, argnums, chunk_size, has_aux), jacrev(f, argnums, has_aux)
    # Per argument signature (structure, shapes and dtypes): the choice and its transform.
    chosen: dict[tuple, tuple[ModeChoice, Callable]] = {}

    @functools.wraps(f)
    def auto_jacobian(*args):
        leaves, treedef = tree_flatten(args)
        signature = (treedef, tuple([(shape_of(a), _dtype_of(a)) for a in leaves]))
        known = chosen.get(signature)
        if known is None:
            flat = _Flat(args, argnums, "jacobian")
            out = _split_aux(flat.call(f, flat.leaves), has_aux, "jacobian")[0]
            n_outputs = sum(
                math.prod(shape_of(o)) for o in tree_leaves(out) if not _is_static_output(o)
            )
            n_inputs = sum(math.prod(shape_of(leaf)) for leaf in flat.leaves)
            choice = choose_mode(n_inputs, n_outputs)
            known = chosen[signature] = (choice, forward if choice.mode == "forward" else reverse)
        auto_jacobian.last_choice = known[0]
        return known[1](*args)

    auto_jacobian.last_choice = None
    return auto_jacobian


def _extra_jacobian(f: Callable, argnums, mode: str) -> Callable:
    """A registered mode's Jacobian, through the active leaves when the arguments are trees."""
    extra = _EXTRA_MODES[mode]["jacobian"]

    @functools.wraps(f)
    def jacobian_by_mode(*args):
        flat = _Flat(args, argnums, "jacobian")
        out = flat.call(f, flat.leaves)
        _no_none(out, "jacobian")
        out_leaves, out_def = tree_flatten(out)
        if flat.simple and out_def.kind is None:
            return extra(f, argnums)(*args)
        every_leaf = tuple(range(len(flat.leaves)))
        blocks = []
        for j, leaf in enumerate(out_leaves):
            if _is_static_output(leaf):
                blocks.append(None)
                continue

            def output_leaf(*active, j=j):
                return tree_leaves(flat.call(f, active))[j]

            blocks.append(extra(output_leaf, every_leaf)(*flat.leaves))
        return _nest(out_def, blocks, flat)

    return jacobian_by_mode


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
    ``x`` and ``v`` may be pytrees of the same structure.

    >>> import adcompare as ad
    >>> f = lambda x: ad.sum(x**3)
    >>> print(ad.hvp(f, [1.0, 2.0], [1.0, 1.0]), ad.hvp(f, [1.0, 2.0], [1.0, 1.0], "rev-over-fwd"))
    [ 6. 12.] [ 6. 12.]
    """
    _check_second_order_mode(mode, "hvp", extra=False)
    x_leaves, x_def = tree_flatten(x)
    v_leaves, v_def = tree_flatten(v)
    if x_def != v_def or any(shape_of(a) != shape_of(b) for a, b in zip(x_leaves, v_leaves)):
        shapes = tree_map(shape_of, v) if v_def == x_def else v_def
        raise ValueError(
            f"hvp: v has shape {shapes} but x has shape "
            f"{tree_map(shape_of, x) if v_def == x_def else x_def}; give v the shape of x"
        )
    if x_def.kind is None:
        x, v = as_float(x), as_float(v)
    if mode == "fwd-over-rev":
        return jvp(grad(f), (x,), (v,))[1]
    if mode == "fwd-over-fwd":
        return jvp(grad(f, mode="forward"), (x,), (v,))[1]
    if mode == "rev-over-rev":
        return grad(lambda y: _inner_sum(grad(f)(y), v))(x)
    return grad(lambda y: jvp(f, (y,), (v,))[1])(x)


def _inner_sum(a, b):
    """``<a, b>`` summed over every leaf of two trees of the same structure."""
    from adcompare.ops import sum as op_sum

    total = 0.0
    for left, right in zip(tree_leaves(a), tree_leaves(b)):
        if left is not None:
            total = total + op_sum(left * right)
    return total


def hessian(f: Callable, argnums=0, mode: str = "fwd-over-rev") -> Callable:
    """The Hessian of a scalar-valued ``f``: ``x.shape + x.shape``.

    Each mode builds it from the matching gradient and Jacobian:
    ``"fwd-over-rev"`` is ``jacfwd(grad(f))`` (n HVPs in lanes),
    ``"rev-over-rev"`` is ``jacrev(grad(f))`` (n reverse sweeps over a
    recorded gradient), ``"fwd-over-fwd"`` is ``jacfwd`` of the forward
    gradient and ``"rev-over-fwd"`` ``jacrev`` of it; a registered mode such
    as ``"symbolic"`` works too. For a pytree argument the Hessian nests the
    argument's structure over itself, as in JAX.

    >>> import adcompare as ad
    >>> print(ad.hessian(lambda x: x[0] ** 2 * x[1])([1.0, 2.0]))
    [[4. 2.]
     [2. 0.]]
    >>> h = ad.hessian(lambda p: p["a"] ** 2 * p["b"])({"a": 1.0, "b": 2.0})
    >>> print(h["a"]["a"], h["a"]["b"], h["b"]["b"])
    4.0 2.0 0.0
    """
    _check_second_order_mode(mode, "hessian", extra=True)
    if mode in _EXTRA_MODES:
        return _extra_hessian(f, argnums, mode)
    outer, inner = mode.split("-over-")
    gradient = grad(f, argnums, mode="reverse" if inner == "rev" else "forward")
    return (jacfwd if outer == "fwd" else jacrev)(gradient, argnums)


def _extra_hessian(f: Callable, argnums, mode: str) -> Callable:
    """A registered mode's Hessian, through the active leaves when the arguments are trees."""
    extra = _EXTRA_MODES[mode]["hessian"]

    @functools.wraps(f)
    def hessian_by_mode(*args):
        flat = _Flat(args, argnums, "hessian")
        if flat.simple:
            return extra(f, argnums)(*args)
        blocks = extra(flat.function(f), tuple(range(len(flat.leaves))))(*flat.leaves)
        return flat.build(lambda i: flat.build(blocks[i].__getitem__))

    return hessian_by_mode
