"""The op set: every primitive once, with its value, both derivative rules,
its SymPy counterpart and its test domain; composites built from them.

``OPS`` maps names to :class:`OpDef` records; ``COMPOSITES`` maps names to
composite functions. Every function here accepts Python numbers, numpy
arrays, ``Dual`` and ``Tensor`` values, and mixtures of them.

The public functions are read from the registry: a module that defines ops
is imported here once, and every op it registers is exported, reachable from
numpy's names for it, and tested.
"""

import importlib
import pkgutil

from adcompare.ops.registry import COMPOSITES, OPS, OpDef, defop, public_functions, unbroadcast

# Every module of the package registers its ops when imported: a new module needs no edit here.
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
del _module

globals().update(public_functions())

__all__ = ["COMPOSITES", "OPS", "OpDef", "defop", "unbroadcast"]
__all__ += sorted(public_functions())

# The generated functions' examples, collected for doctest.
__test__ = {name: op.fn.__doc__ for name, op in OPS.items() if op.example}
