"""Transforms: functions in, functions out, plain numpy values at the edges.

``jacfwd`` builds a Jacobian column block by column block: each pass seeds
``k`` lanes of the identity, so ``n`` inputs take ``ceil(n / k)`` passes.
``jacrev`` builds it row block by row block: one recorded pass, then each
backward sweep carries ``k`` rows as cotangent lanes, by the same rule.
``jacobian(mode="auto")`` picks whichever needs less work and says why.
``vmap`` runs a function written for one example on a batch.
These functions know nothing about individual ops.
"""

from adcompare.engines.forward.interface import LANE_BUDGET, default_chunk
from adcompare.transforms.auto_mode import ModeChoice, choose_mode, jacobian
from adcompare.transforms.forward_mode import jacfwd, jvp
from adcompare.transforms.modes import register_mode, registered_modes
from adcompare.transforms.reverse_mode import grad, jacrev, value_and_grad, vjp
from adcompare.transforms.second_order import HESSIAN_MODES, hessian, hvp
from adcompare.transforms.vectorize import vmap

__all__ = [
    "HESSIAN_MODES",
    "LANE_BUDGET",
    "ModeChoice",
    "choose_mode",
    "default_chunk",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "register_mode",
    "registered_modes",
    "value_and_grad",
    "vjp",
    "vmap",
]
