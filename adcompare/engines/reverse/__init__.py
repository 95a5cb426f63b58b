"""The reverse engine: a tape of records and the PyTorch-like ``Tensor``.

Every op on a tensor that requires grad appends a record (:mod:`.tape`);
``backward`` sweeps the records reachable from the output in reverse order
(:mod:`.sweep`), never recursing, so a chain of a million ops is fine;
:mod:`.reference` is the same sweep written plainly, to read first and to
test the fast one against.
:mod:`.tensor` is the ``Tensor`` face, :mod:`.memory` what views and in-place
writes share, :mod:`.grad_mode` ``no_grad``, and :mod:`.interface` what the
transforms use: lift values onto a tape, seed a sweep, read cotangents.
"""

from adcompare.engines.reverse.grad_mode import enable_grad, is_grad_enabled, no_grad
from adcompare.engines.reverse.interface import (
    autograd_grad,
    cotangents_at,
    lift,
    lower,
    node_of,
    pullback,
)
from adcompare.engines.reverse.reference import reference_jacrev, reference_sweep
from adcompare.engines.reverse.sweep import IN_PLACE_FROM
from adcompare.engines.reverse.tape import AccumulateGrad, Node, Placeholder
from adcompare.engines.reverse.tensor import Tensor, run_backward

__all__ = [
    "IN_PLACE_FROM",
    "AccumulateGrad",
    "Node",
    "Placeholder",
    "Tensor",
    "autograd_grad",
    "cotangents_at",
    "enable_grad",
    "is_grad_enabled",
    "lift",
    "lower",
    "no_grad",
    "node_of",
    "pullback",
    "reference_jacrev",
    "reference_sweep",
    "run_backward",
]
