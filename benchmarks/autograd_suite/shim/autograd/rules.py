"""autograd's ``primitive``, ``defvjp`` and ``defjvp``, as adcompare's ``custom_vjp``
and ``custom_jvp`` rules: a primitive called on adcompare's boxes becomes a custom op
whose rules call autograd-style makers."""

import numpy as np

import adcompare as ad
from adcompare.engines.box import Box
from adcompare.ops.registry import raw


class Primitive:
    """A function with autograd-style derivative makers, one per argument."""

    def __init__(self, fun):
        self.fun = fun
        self.__name__ = getattr(fun, "__name__", "primitive")
        self.vjpmakers = {}
        self.jvpmakers = {}

    def __call__(self, *args, **kwargs):
        traced = [i for i, a in enumerate(args) if _traced(a)]
        if not traced:
            return self.fun(*args, **kwargs)

        def bind(values):
            full = list(args)
            for position, value in zip(traced, values):
                full[position] = value
            return full

        custom = ad.custom_vjp(lambda *values: self.fun(*bind(values), **kwargs))
        custom.__name__ = self.__name__
        if self.vjpmakers:

            def fwd(*values):
                out = custom(*values)
                return out, (out, values)

            def bwd(residuals, g):
                ans, values = residuals
                full = bind(values)
                return tuple(
                    self.vjpmakers[p](ans, *full, **kwargs)(g)
                    if p in self.vjpmakers
                    else np.zeros_like(raw(full[p]))
                    for p in traced
                )

            custom.defvjp(fwd, bwd)
        if self.jvpmakers:

            def rule(primals, tangents):
                ans = custom(*primals)
                full = bind(primals)
                out = sum(
                    self.jvpmakers[p](t, ans, *full, **kwargs)
                    for p, t in zip(traced, tangents)
                    if p in self.jvpmakers
                )
                return ans, out

            custom.defjvp(rule)
        return custom(*(args[i] for i in traced))


def _traced(value) -> bool:
    return isinstance(value, Box)


def primitive(fun):
    """Wrap ``fun`` so that ``defvjp``/``defjvp`` can give its derivative rules."""
    return Primitive(fun)


def defvjp(fun, *vjpmakers, argnums=None):
    """``vjpmaker(ans, *args, **kwargs)`` returns ``g -> g·∂f/∂args[i]`` for argument ``i``."""
    for position, maker in zip(argnums or range(len(vjpmakers)), vjpmakers):
        if maker is not None:
            fun.vjpmakers[position] = maker


def defjvp(fun, *jvpmakers, argnums=None):
    """``jvpmaker(g, ans, *args, **kwargs)`` returns ``∂f/∂args[i]·g`` for argument ``i``."""
    for position, maker in zip(argnums or range(len(jvpmakers)), jvpmakers):
        if maker is not None:
            fun.jvpmakers[position] = maker


def defvjp_argnum(fun, argnum_vjpmaker):
    """One maker for every argument: ``maker(argnum, ans, args, kwargs)``."""
    for position in range(8):
        fun.vjpmakers[position] = lambda ans, *args, p=position, **kwargs: argnum_vjpmaker(
            p, ans, args, kwargs
        )


def defjvp_argnum(fun, argnum_jvpmaker):
    """One maker for every argument: ``maker(argnum, g, ans, args, kwargs)``."""
    for position in range(8):
        fun.jvpmakers[position] = lambda g, ans, *args, p=position, **kwargs: argnum_jvpmaker(
            p, g, ans, args, kwargs
        )
