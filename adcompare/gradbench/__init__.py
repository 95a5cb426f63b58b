"""GradBench's twelve evals written against the op set, and its tool protocol.

See :mod:`adcompare.gradbench.evals` for the contract an eval fulfils.
"""

from adcompare.gradbench.evals import (
    EVAL_NAMES,
    MODES,
    Eval,
    InputError,
    Workload,
    get_eval,
    implemented,
)

__all__ = ["EVAL_NAMES", "MODES", "Eval", "InputError", "Workload", "get_eval", "implemented"]
