"""The batched engine: vmap's box, whose ops run their records' batching rules.

:mod:`.batch` is the ``Batched`` box; :mod:`.interface` is what ``vmap``
(:mod:`adcompare.transforms.vectorize`) uses: make a batch at a nesting level,
read a batched output back.
"""

from adcompare.engines.batched.batch import Batched
from adcompare.engines.batched.interface import lift, lower

__all__ = ["Batched", "lift", "lower"]
