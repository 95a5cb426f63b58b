"""The forward engine: dual numbers with tangent lanes.

:mod:`.dual` is the ``Dual`` box, whose ops run their records' JVP rules on
the tangent lanes; :mod:`.interface` is what the transforms use: seed
inputs at a nesting level, read outputs back, size the lanes of a pass.
"""

from adcompare.engines.forward.dual import Dual
from adcompare.engines.forward.interface import LANE_BUDGET, default_chunk, lower, seed

__all__ = ["LANE_BUDGET", "Dual", "default_chunk", "lower", "seed"]
