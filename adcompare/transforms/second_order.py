"""Second derivatives: the four compositions of the two modes (hvp, hessian)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from adcompare.ops import sum as op_sum
from adcompare.ops.registry import shape_of
from adcompare.pytree import tree_flatten, tree_leaves, tree_map
from adcompare.runtime.dtypes import as_float
from adcompare.transforms.arguments import Flat
from adcompare.transforms.forward_mode import jacfwd, jvp
from adcompare.transforms.modes import registered, registered_modes
from adcompare.transforms.reverse_mode import grad, jacrev

#: The four ways to compose the two modes, outer mode first.
HESSIAN_MODES = ("fwd-over-rev", "rev-over-rev", "fwd-over-fwd", "rev-over-fwd")


def _check_second_order_mode(mode: str, name: str, extra: bool) -> None:
    known = list(HESSIAN_MODES) + (list(registered_modes("hessian")) if extra else [])
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
    total = 0.0
    for left, right in zip(tree_leaves(a), tree_leaves(b)):
        if left is not None:
            total = total + op_sum(left * right)
    return total


def hessian(f: Callable, argnums=0, mode: str = "fwd-over-rev") -> Callable:
    """The Hessian of a scalar-valued ``f``: ``x.shape + x.shape``.

    Each mode builds it from the matching gradient and Jacobian:
    ``"fwd-over-rev"`` is ``jacfwd(grad(f))`` (n HVPs in lanes),
    ``"rev-over-rev"`` is ``jacrev(grad(f))`` (n cotangent lanes swept over
    a recorded gradient), ``"fwd-over-fwd"`` is ``jacfwd`` of the forward
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
    if mode in registered_modes("hessian"):
        return _extra_hessian(f, argnums, mode)
    outer, inner = mode.split("-over-")
    gradient = grad(f, argnums, mode="reverse" if inner == "rev" else "forward")
    return (jacfwd if outer == "fwd" else jacrev)(gradient, argnums)


def _extra_hessian(f: Callable, argnums, mode: str) -> Callable:
    """A registered mode's Hessian, through the active leaves when the arguments are trees."""
    extra = registered(mode, "hessian")

    @functools.wraps(f)
    def hessian_by_mode(*args):
        flat = Flat(args, argnums, "hessian")
        if flat.simple:
            return extra(f, argnums)(*args)
        blocks = extra(flat.function(f), tuple(range(len(flat.leaves))))(*flat.leaves)
        return flat.build(lambda i: flat.build(blocks[i].__getitem__))

    return hessian_by_mode
