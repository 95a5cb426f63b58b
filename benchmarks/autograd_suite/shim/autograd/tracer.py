"""autograd.tracer: adcompare's boxes stand for autograd's."""

from adcompare.ops.registry import Box, raw
from autograd.rules import primitive


def isbox(value) -> bool:
    """Whether ``value`` carries a derivative (is one of adcompare's boxes)."""
    return isinstance(value, Box)


def notrace_primitive(fun):
    """``fun`` called on the values of its arguments, without derivatives."""
    return lambda *args, **kwargs: fun(*(raw(a) for a in args), **kwargs)


__all__ = ["Box", "isbox", "notrace_primitive", "primitive"]
