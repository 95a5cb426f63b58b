"""Sparse Jacobians and Hessians: sparsity detection, colouring, compressed derivatives.

``jacobian_pattern`` and ``hessian_pattern`` find which derivatives can be
non-zero by abstract interpretation of the op set; the colouring functions
group columns (forward mode), rows (reverse mode) or both (bidirectional)
that can share one pass; ``sparse_jacobian`` and ``sparse_hessian`` put the
two together and decompress into ``scipy.sparse`` matrices.
"""

from adcompare.sparsity.patterns import hessian_pattern, jacobian_pattern
from adcompare.sparsity.rules import DenseFallbackWarning

__all__ = ["DenseFallbackWarning", "hessian_pattern", "jacobian_pattern"]
