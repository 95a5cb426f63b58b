"""The op registry: one record per primitive, and the dispatch every op call takes.

Its modules, by concern: :mod:`~.records` (``OpDef``, ``Hints``, ``OPS``),
:mod:`~.define` (``defop``), :mod:`~.derive` (rules derived from structure),
:mod:`~.dispatch` (``apply``), :mod:`~.numpy_names`,
:mod:`~.composites`, and the helpers rules share (:mod:`~.values`,
:mod:`~.broadcasting`).

Vocabulary used by every rule (as PyTorch's ``derivatives.yaml`` fixes one):

``x, y, z``
    the primal inputs, in argument order;
``out``
    the primal output;
``x_dot`` (``y_dot``, ...)
    the tangent of one input. It carries a leading *lane* axis: its shape is
    ``(k, *x.shape)`` for ``k`` directional derivatives at once. Rules of
    elementwise ops get tangents already padded to the output's rank, so
    numpy broadcasting lines the lanes up; other rules handle the lane axis
    themselves (static ``axis`` parameters are normalised to negative
    numbers, which count from the end and so skip over the lanes);
``out_bar``
    the cotangent of the output, shaped like ``out`` (no lanes).

Rules are given per argument position, so the engines skip the work for
arguments that carry no derivative (HIPS autograd's ``defvjp`` does the
same). A JVP rule returns that argument's contribution to the output
tangent; a VJP rule returns that argument's cotangent. Elementwise VJP rules
may return an output-shaped cotangent: the reverse sweep unbroadcasts it.

Rules are written with the op set's own functions, never with ``np.``
directly, so that they can themselves be differentiated.
"""

from adcompare.ops.registry.broadcasting import (
    broadcast_view,
    lane_count,
    normalize_axes,
    pad_lanes,
    unbroadcast,
)
from adcompare.ops.registry.composites import COMPOSITES, Composite, composite, public_functions
from adcompare.ops.registry.define import defop
from adcompare.ops.registry.derive import BILINEAR, LINEAR, SLOPE
from adcompare.ops.registry.dispatch import (
    apply,
    apply_plain,
    complex_error,
    new_level,
)
from adcompare.ops.registry.numpy_names import (
    NUMPY_NAMES,
    default_numpy_names,
    public_face,
    register_numpy_names,
)
from adcompare.ops.registry.records import (
    ARRAY_ONLY,
    BRANCH,
    HOLOMORPHIC,
    INDEX,
    LEADING_AXIS,
    OPS,
    PERMUTATION,
    REAL_ONLY,
    SELECTS,
    SIGN,
    WIRTINGER,
    ComplexNotSupportedError,
    Decision,
    Hints,
    OpDef,
    keep_number,
    sum_number,
)
from adcompare.ops.registry.values import anywhere, array_of, everywhere, ndim_of, shape_of
from adcompare.runtime.boxes import Box, mixed_levels_error, raw

__all__ = [
    "ARRAY_ONLY",
    "BILINEAR",
    "BRANCH",
    "COMPOSITES",
    "HOLOMORPHIC",
    "INDEX",
    "LEADING_AXIS",
    "LINEAR",
    "NUMPY_NAMES",
    "OPS",
    "PERMUTATION",
    "REAL_ONLY",
    "SELECTS",
    "SIGN",
    "SLOPE",
    "WIRTINGER",
    "Box",
    "ComplexNotSupportedError",
    "Composite",
    "Decision",
    "Hints",
    "OpDef",
    "anywhere",
    "apply",
    "apply_plain",
    "array_of",
    "broadcast_view",
    "complex_error",
    "composite",
    "default_numpy_names",
    "defop",
    "everywhere",
    "keep_number",
    "lane_count",
    "mixed_levels_error",
    "ndim_of",
    "new_level",
    "normalize_axes",
    "pad_lanes",
    "public_face",
    "public_functions",
    "raw",
    "register_numpy_names",
    "shape_of",
    "sum_number",
    "unbroadcast",
]
