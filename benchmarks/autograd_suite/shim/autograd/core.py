"""autograd.core: the operators and rule definitions tests import from here."""

from autograd.adapter import not_applicable
from autograd.operators import unary_jvp as make_jvp
from autograd.operators import unary_vjp as make_vjp
from autograd.rules import defjvp, defjvp_argnum, defvjp, defvjp_argnum, primitive
from autograd.vspace import VSpace, vspace

primitive_vjps = not_applicable("core.primitive_vjps", "autograd's table of VJP rules")
def_linear = not_applicable("core.def_linear", "autograd's linear-primitive helper")

__all__ = [
    "VSpace",
    "def_linear",
    "defjvp",
    "defjvp_argnum",
    "defvjp",
    "defvjp_argnum",
    "make_jvp",
    "make_vjp",
    "primitive",
    "primitive_vjps",
    "vspace",
]
