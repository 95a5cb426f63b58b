"""adcompare: forward-mode and reverse-mode automatic differentiation, side by side.

One op set (``adcompare.ops``) run by a dual-number forward engine
(``Dual``), a tape-based reverse engine (``Tensor``), and checked against
exact and numeric references.

>>> import adcompare as ad
>>> f = lambda x, y: 3 * x**2 + x * y + 5 * y**2
>>> print(ad.grad(f, argnums=(0, 1))(2.0, 3.0))
(array(15.), array(32.))

The submodules ``testing``, ``graph``, ``nn``, ``optim``, ``adbench`` and
``bench`` load on first use (PEP 562), as ``np.testing`` is reachable from
``import numpy``, without slowing ``import adcompare`` down:

>>> ad.testing.assert_grad_close.__module__
'adcompare.check.testing'
"""

import importlib

from adcompare import pytree, symbolic  # symbolic registers mode="symbolic"
from adcompare.check import check_grad, compare
from adcompare.checkpointing import checkpoint
from adcompare.custom import custom_jvp, custom_vjp
from adcompare.engines.forward import Dual
from adcompare.engines.replay import CompiledFunction, compile  # noqa: A004 - the API's name
from adcompare.engines.reverse import (
    Tensor,
    autograd_grad,
    enable_grad,
    is_grad_enabled,
    no_grad,
)
from adcompare.ode import odeint
from adcompare.ops import *  # noqa: F403 - the op set is the public face
from adcompare.ops import __all__ as _ops_all
from adcompare.ops import stats
from adcompare.ops.registry import ComplexNotSupportedError
from adcompare.pytree import register_pytree_node, tree_flatten, tree_map, tree_unflatten
from adcompare.runtime.cost import Cost, count
from adcompare.sparsity import sparse_hessian, sparse_jacobian
from adcompare.transforms import (
    ModeChoice,
    choose_mode,
    grad,
    hessian,
    hvp,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    value_and_grad,
    vjp,
    vmap,
)

__version__ = "0.1.0"

#: Submodules imported on first attribute access.
_LAZY_SUBMODULES = ("adbench", "bench", "graph", "nn", "optim", "testing")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        module = importlib.import_module(f"adcompare.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'adcompare' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_SUBMODULES})


__all__ = [
    *_ops_all,
    "CompiledFunction",
    "ComplexNotSupportedError",
    "Cost",
    "Dual",
    "ModeChoice",
    "Tensor",
    "autograd_grad",
    "check_grad",
    "checkpoint",
    "choose_mode",
    "compare",
    "compile",
    "count",
    "custom_jvp",
    "custom_vjp",
    "enable_grad",
    "grad",
    "hessian",
    "hvp",
    "is_grad_enabled",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "no_grad",
    "odeint",
    "pytree",
    "register_pytree_node",
    "stats",
    "sparse_hessian",
    "sparse_jacobian",
    "symbolic",
    "tree_flatten",
    "tree_map",
    "tree_unflatten",
    "value_and_grad",
    "vjp",
    "vmap",
]
