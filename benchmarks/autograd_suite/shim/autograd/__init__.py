"""A stand-in for HIPS autograd whose every derivative comes from adcompare.

autograd's differential operators are mapped to adcompare's transforms
(``grad`` to ``ad.grad``, ``make_vjp`` to ``ad.vjp``, ``make_jvp`` to
``ad.jvp``, ``jacobian`` to ``ad.jacrev``, ``hessian`` to ``ad.hessian``);
``autograd.numpy`` is numpy itself, so numpy's functions reach adcompare's ops
through numpy's dispatch on adcompare's boxes (see ``namespaces.py``).
"""

from autograd import namespaces
from autograd.builtins import dict, isinstance, list, tuple, type  # noqa: A004
from autograd.operators import (
    checkpoint,
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_ggnvp,
    make_hvp,
    make_jvp,
    make_vjp,
    multigrad_dict,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)
from autograd.rules import primitive

namespaces.install()

__all__ = [
    "checkpoint",
    "deriv",
    "dict",
    "elementwise_grad",
    "grad",
    "grad_and_aux",
    "grad_named",
    "hessian",
    "hessian_tensor_product",
    "hessian_vector_product",
    "holomorphic_grad",
    "isinstance",
    "jacobian",
    "list",
    "make_ggnvp",
    "make_hvp",
    "make_jvp",
    "make_vjp",
    "multigrad_dict",
    "primitive",
    "tensor_jacobian_product",
    "tuple",
    "type",
    "value_and_grad",
    "vector_jacobian_product",
]
