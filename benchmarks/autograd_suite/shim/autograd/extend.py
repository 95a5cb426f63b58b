"""autograd.extend: defining primitives and their rules."""

from autograd.core import VSpace, def_linear, defjvp, defjvp_argnum, defvjp, defvjp_argnum, vspace
from autograd.rules import primitive
from autograd.tracer import Box, notrace_primitive

__all__ = [
    "Box",
    "VSpace",
    "def_linear",
    "defjvp",
    "defjvp_argnum",
    "defvjp",
    "defvjp_argnum",
    "notrace_primitive",
    "primitive",
    "vspace",
]
