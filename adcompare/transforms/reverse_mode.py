"""Reverse-mode transforms: one recorded pass, then backward sweeps (vjp, grad, jacrev).

They speak to the reverse engine through its interface only: ``lift`` the
active leaves onto a tape, ``lower`` the output to its value and record, and
read what ``cotangents_at`` the leaves after a sweep.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy import ndarray  # hot paths: numpy's module __getattr__ makes `np.ndarray` a slow lookup

from adcompare.engines.forward.interface import default_chunk
from adcompare.engines.reverse.interface import cotangents_at, enable_grad, lift, lower
from adcompare.ops import concatenate, expand_dims, real, reshape
from adcompare.ops.registry import new_level, raw, shape_of
from adcompare.pytree import tree_flatten, tree_unflatten
from adcompare.runtime.dtypes import as_float, float_dtype, in_dtype
from adcompare.transforms.arguments import (
    Flat,
    as_output,
    check_real_scalar,
    check_scalar_output,
    is_static_output,
    nest,
    split_aux,
    strip,
)
from adcompare.transforms.forward_mode import jacfwd_at
from adcompare.transforms.modes import registered, registered_modes
from adcompare.transforms.replayed import replayed
from adcompare.transforms.vectorize import vmap


def _record(f, flat: Flat, level: int):
    """Run ``f`` with the active leaves as tensors on a fresh tape."""
    leaves = lift(flat.leaves, level)
    with enable_grad():
        out = flat.call(f, leaves)
    return out, leaves


def _traced_outputs(out, level: int):
    """The output's leaves as ``(value, record)`` pairs (``None`` pairs for static leaves)."""
    leaves, treedef = tree_flatten(out)
    pairs = []
    for o in leaves:
        if is_static_output(o):
            pairs.append((None, None))
        else:
            value, node = lower(o, level)
            pairs.append((value if node is not None else as_float(value), node))
    return pairs, treedef


def _sweep(nodes, seeds, leaves, *, retain_graph: bool) -> list:
    """Gradients of ``leaves`` after one backward sweep (zeros where unreached).

    ``nodes`` holds ``None`` for outputs that do not depend on the inputs.
    """
    roots = [(n, c) for n, c in zip(nodes, seeds) if n is not None]
    reached = cotangents_at(
        [n for n, _ in roots], [c for _, c in roots], leaves, retain_graph=retain_graph
    )
    return [_gradient(t, g) for t, g in zip(leaves, reached)]


def _gradient(leaf, cotangent):
    """What reached ``leaf`` as its gradient: zeros where nothing did, else a writeable
    array of the leaf's dtype holding the real part where the leaf is real."""
    dtype = leaf.dtype
    if cotangent is None:
        return np.zeros(leaf.shape, dtype)
    if (
        type(cotangent) is ndarray
        and cotangent.dtype == dtype
        and dtype.kind == "f"
        and cotangent.flags.writeable
    ):
        return cotangent  # already what the three steps below would make of it
    return _writeable(in_dtype(_real_if_real(leaf, cotangent), dtype))


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
    value = as_output(value)
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        return value.copy()
    return value


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
    flat = Flat(primals, tuple(range(len(primals))), "vjp")
    level = new_level()
    out, leaves = _record(f, flat, level)
    out, aux = split_aux(out, has_aux, "vjp")
    pairs, out_def = _traced_outputs(out, level)
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
        return value, vjp_fn, strip(aux, level)
    return value, vjp_fn


def value_and_grad(
    f: Callable, argnums=0, mode: str = "reverse", has_aux: bool = False
) -> Callable:
    """A function returning ``(f(*args), gradient)`` for a scalar-valued ``f``.

    ``mode`` is ``"reverse"`` (one sweep), ``"forward"`` (lanes seeded in
    chunks, ``ceil(n / k)`` passes), ``"replay"`` (reverse mode recorded once
    per argument structure and replayed, for a function called many times:
    see :mod:`~adcompare.transforms.replayed`) or a registered mode such as
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
    if mode not in ("reverse", "forward", "replay", *registered_modes()):
        known = ", ".join(repr(m) for m in ["reverse", "forward", "replay", *registered_modes()])
        raise ValueError(f"value_and_grad: unknown mode {mode!r}; use one of {known}")
    if mode == "replay":
        eager = value_and_grad(f, argnums, "reverse", has_aux)
        return eager if has_aux else functools.wraps(f)(replayed(f, argnums, eager))

    @functools.wraps(f)
    def value_and_gradient(*args):
        flat = Flat(args, argnums, "grad")
        if mode != "reverse" and mode != "forward":  # a registered mode (checked above)
            return _extra_value_and_grad(f, args, argnums, flat, mode, has_aux)
        if mode == "forward":
            value, aux, grads = _forward_value_and_grads(f, flat, has_aux)
        else:
            level = new_level()
            out, leaves = _record(f, flat, level)
            out, aux = split_aux(out, has_aux, "grad")
            value, node, seed = _scalar_seed(out, level)
            grads = _sweep([node], [seed], leaves, retain_graph=False)
            aux = strip(aux, level)
        gradient = flat.build(grads.__getitem__)
        return ((value, aux) if has_aux else value), gradient

    return value_and_gradient


def _forward_value_and_grads(f, flat: Flat, has_aux: bool) -> tuple:
    """``(value, aux, gradients)`` of a scalar ``f`` in forward mode, one leaf at a time."""
    value, aux, grads = None, None, []
    for i in range(len(flat.leaves)):
        values, aux, _, jacobians = jacfwd_at(f, flat, i, None, has_aux, "grad", scalar=True)
        value = values[0]
        shape = shape_of(flat.leaves[i])
        jacobian = jacobians[0]
        grads.append(jacobian if shape_of(jacobian) == shape else reshape(jacobian, shape))
    if not flat.leaves:
        value, aux = split_aux(flat.call(f, flat.leaves), has_aux, "grad")
        check_scalar_output(value, "grad")
        value = as_float(value)
        check_real_scalar(value)
    return value, aux, grads


def _scalar_seed(out, level: int) -> tuple:
    """``(value, record, seed)`` of ``grad``'s output traced at ``level``, refused unless
    it is one real number; the seed is a one of its dtype."""
    value, node = lower(out, level)
    if (
        node is not None
        and type(value) in _FLOAT64_TYPES
        and value.dtype == _FLOAT64
        and value.shape == ()
    ):
        # A traced float64 number: both checks below would pass.
        return value, node, np.ones((), _FLOAT64)
    check_scalar_output(out, "grad")
    value = value if node is not None else as_float(value)
    check_real_scalar(value)
    return value, node, np.ones(shape_of(value), dtype=float_dtype(value))


_FLOAT64 = np.dtype(np.float64)
_FLOAT64_TYPES = (ndarray, np.float64)


def _extra_value_and_grad(f, args, argnums, flat: Flat, mode: str, has_aux: bool):
    """``value_and_grad`` in a registered mode, through the active leaves when needed."""
    extra = registered(mode, "value_and_grad")
    if flat.simple and not has_aux:
        return extra(f, argnums)(*args)
    aux = None
    if has_aux:
        aux = split_aux(flat.call(f, flat.leaves), True, "grad")[1]

    def output_only(*active):
        out = split_aux(flat.call(f, active), has_aux, "grad")[0]
        check_scalar_output(out, "grad")
        return out

    value, grads = extra(output_only, tuple(range(len(flat.leaves))))(*flat.leaves)
    return ((value, aux) if has_aux else value), flat.build(grads.__getitem__)


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


def jacrev(
    f: Callable, argnums=0, chunk_size: int | None = None, has_aux: bool = False
) -> Callable:
    """The Jacobian, row block by row block: one recorded pass, ``chunk_size`` rows a sweep.

    Each backward sweep carries ``chunk_size`` cotangent lanes (rows of the
    identity), mapped over the pullback by :func:`~adcompare.vmap` as JAX
    builds ``jacrev``: ``m`` outputs take ``ceil(m / chunk_size)`` sweeps.
    The default chunk is forward mode's rule (:func:`~adcompare.transforms.default_chunk`
    of ``m``), so both modes batch alike; ``chunk_size=1`` sweeps one row at
    a time. For array input and output the result has shape ``out.shape +
    x.shape``. For pytrees it nests the output's structure over the input's,
    as JAX does: ``J[out_key][in_key]`` has shape ``out_leaf.shape +
    in_leaf.shape``. With ``has_aux`` the result is ``(jacobian, aux)``.

    >>> import adcompare as ad
    >>> print(ad.jacrev(lambda x: x**2)([1.0, 2.0]))
    [[2. 0.]
     [0. 4.]]
    >>> with ad.count() as cost:
    ...     _ = ad.jacrev(lambda x: ad.tanh(x) * x[0], chunk_size=2)([1.0, 2.0, 3.0])
    >>> cost.sweeps  # ceil(3 / 2)
    2
    >>> ad.jacrev(lambda p: (p["a"] * p["b"], p["a"]))({"a": 2.0, "b": 3.0})
    ({'a': array(3.), 'b': array(2.)}, {'a': array(1.), 'b': array(0.)})
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"jacrev: chunk_size must be a positive integer, not {chunk_size!r}")

    @functools.wraps(f)
    def jacobian_by_rows(*args):
        flat = Flat(args, argnums, "jacrev")
        level = new_level()
        out, leaves = _record(f, flat, level)
        out, aux = split_aux(out, has_aux, "jacrev")
        pairs, out_def = _traced_outputs(out, level)
        # The tape is kept until the last sweep, which frees it.
        sweeps_left = sum(
            _sweep_count(math.prod(shape_of(v)), chunk_size)
            for v, node in pairs
            if node is not None
        )
        blocks = []
        for value, node in pairs:
            if value is None:
                blocks.append(None)
                continue
            blocks.append(_rows(value, node, leaves, chunk_size, sweeps_left))
            if node is not None:
                sweeps_left -= _sweep_count(math.prod(shape_of(value)), chunk_size)
        jacobian = nest(out_def, blocks, flat)
        return (jacobian, strip(aux, level)) if has_aux else jacobian

    return jacobian_by_rows


def _sweep_count(m: int, chunk_size: int | None) -> int:
    """How many sweeps ``m`` rows take in chunks of ``chunk_size`` (forward's default rule)."""
    return -(-m // (chunk_size or default_chunk(m))) if m else 0


def _rows(value, node, leaves, chunk_size: int | None, sweeps_left: int) -> list:
    """One output's Jacobian with respect to each leaf, ``chunk_size`` rows a sweep."""
    if np.result_type(raw(value)).kind == "c":
        # A real cotangent per row pairs with the real part only: the Jacobian of
        # the imaginary part would be silently dropped.
        raise TypeError(
            "jacrev: reverse mode needs real outputs, and this one is complex; use "
            "jacfwd (real inputs), or differentiate ad.real(...) and ad.imag(...) "
            "separately"
        )
    out_shape = shape_of(value)
    m = math.prod(out_shape)
    k = chunk_size or default_chunk(m)
    dtype = float_dtype(value)
    blocks = [[] for _ in leaves]
    for start in range(0, m, k):
        width = min(k, m - start)
        seeds = np.eye(width, m, k=start, dtype=dtype).reshape((width,) + out_shape)
        if node is not None:
            sweeps_left -= 1
        retain = sweeps_left > 0
        if width == 1:
            grads = _sweep([node], [seeds[0]], leaves, retain_graph=retain)
            grads = [expand_dims(g, 0) for g in grads]
        else:
            grads = vmap(lambda u, r=retain: tuple(_sweep([node], [u], leaves, retain_graph=r)))(
                seeds
            )
        for block, g, t in zip(blocks, grads, leaves):
            block.append(in_dtype(as_output(g), float_dtype(t)))
    # One output: its single row is the gradient itself, as grad returns it (no copy).
    # vmap broadcasts a row block that no lane changed (an unreached input, a sum's
    # cotangent) as a read-only view: _writeable copies only those.
    return [
        _writeable(
            reshape(
                block[0] if len(block) == 1 else concatenate(block, axis=0), out_shape + t.shape
            )
        )
        if block
        else np.zeros(out_shape + t.shape, t.dtype)
        for block, t in zip(blocks, leaves)
    ]
