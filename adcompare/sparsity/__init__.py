"""Sparse Jacobians and Hessians: sparsity detection, colouring, compressed derivatives.

``jacobian_pattern`` and ``hessian_pattern`` find which derivatives can be
non-zero by abstract interpretation of the op set; the colouring functions
group columns (forward mode), rows (reverse mode) or both (bidirectional)
that can share one pass; ``sparse_jacobian`` and ``sparse_hessian`` put the
two together and decompress into ``scipy.sparse`` matrices.
"""

from adcompare.sparsity.colouring import (
    acyclic_colouring,
    column_colouring,
    row_colouring,
    star_bicolouring,
    star_colouring,
)
from adcompare.sparsity.derivatives import (
    HessianPlan,
    JacobianPlan,
    prepare_hessian,
    prepare_jacobian,
    sparse_hessian,
    sparse_jacobian,
)
from adcompare.sparsity.orderings import ORDERINGS
from adcompare.sparsity.patterns import hessian_pattern, jacobian_pattern
from adcompare.sparsity.rules import DenseFallbackWarning

__all__ = [
    "ORDERINGS",
    "DenseFallbackWarning",
    "HessianPlan",
    "JacobianPlan",
    "acyclic_colouring",
    "column_colouring",
    "hessian_pattern",
    "jacobian_pattern",
    "prepare_hessian",
    "prepare_jacobian",
    "row_colouring",
    "sparse_hessian",
    "sparse_jacobian",
    "star_bicolouring",
    "star_colouring",
]
